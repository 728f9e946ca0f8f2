import { AUDIT_REFUSALS } from '../../domain/audit';
import { ACCOUNT_ASSET, type AccountEvent, accountCreditStream, accountDecider, accountStream, fixed, LEDGER_REFUSALS } from '../../domain/ledger';
import { comparePositions, type EventStore, type RecordedEvent } from '../../eventstore/port';
import { foldEvents, folderFor } from './folders';
import { type AuditEvent, chained, eventsRecordedBetween } from './log';

export interface AuditReadsDeps {
  store: EventStore;
}

/** A stream as of an instant: its events up to it and the state its aggregate folds from them. */
export interface StreamAtInstant {
  stream: string;
  /** The instant asked (ISO 8601), or null for now. */
  at: string | null;
  events: AuditEvent[];
  /** null when no aggregate is registered for the stream's name (folders.ts): events only. */
  aggregate: string | null;
  state: unknown;
}

export interface BalanceAtInstant {
  accountId: number;
  asset: string;
  credits: string;
  debits: string;
  balance: string;
  at: string;
  /** The log position of the last event counted; null when the account had none yet. */
  position: string | null;
}

/**
 * What auditors read, from the log alone (no read model: what they check is the log itself). Used by
 * the /audit/v1 routes and by `tally events read` and `tally events export`.
 */
export class AuditReads {
  constructor(private readonly deps: AuditReadsDeps) {}

  /** The stream's events recorded up to `at` (all without it) and its state. Unknown now: null. */
  async streamAt(stream: string, at?: Date): Promise<StreamAtInstant | null> {
    const events = await this.deps.store.readStream(stream, at ? { untilTime: at } : {});
    // Empty at an instant is an answer ("not yet") for a stream that exists now.
    if (events.length === 0 && (!at || (await this.deps.store.readStream(stream, { maxCount: 1 })).length === 0)) return null;
    const folder = folderFor(stream);
    return {
      stream,
      at: at?.toISOString() ?? null,
      events: chained(events),
      aggregate: folder?.aggregate ?? null,
      state: folder ? folder.fold(events) : null,
    };
  }

  /** Like streamAt, refusing an unknown stream (404 `Stream not found`). */
  async requireStreamAt(stream: string, at?: Date): Promise<StreamAtInstant> {
    const found = await this.streamAt(stream, at);
    if (!found) throw AUDIT_REFUSALS.streamNotFound();
    return found;
  }

  /** The log's events recorded in [from, to), a page at a time (see eventsRecordedBetween). */
  eventsBetween(from: Date, to: Date, signal?: AbortSignal): AsyncGenerator<AuditEvent[]> {
    return eventsRecordedBetween(this.deps.store, from.getTime(), to.getTime(), signal);
  }

  /**
   * An account's balance at an instant, folded from its two streams (money out and holds in
   * account-<id>, money in in accountin-<id>) as the account decider folds them: `debits` counts
   * holds, as the interface's accounts do. An account that does not exist now: 404 `Account not found`.
   */
  async balanceAt(accountId: number, at: Date): Promise<BalanceAtInstant> {
    const [out, inflow] = await Promise.all([
      this.deps.store.readStream(accountStream(accountId), { untilTime: at }),
      this.deps.store.readStream(accountCreditStream(accountId), { untilTime: at }),
    ]);
    if (out.length === 0 && (await this.deps.store.readStream(accountStream(accountId), { maxCount: 1 })).length === 0) throw LEDGER_REFUSALS.accountNotFound();
    const state = foldEvents(accountDecider, [...out, ...inflow] as unknown as AccountEvent[]);
    const debits = state.debitsPosted.plus(state.debitsPending);
    const opened = out.find((e) => e.type === 'AccountOpened') as RecordedEvent<'AccountOpened', { asset: string }> | undefined;
    return {
      accountId,
      asset: opened?.data.asset ?? ACCOUNT_ASSET,
      credits: fixed(state.creditsPosted),
      debits: fixed(debits),
      balance: fixed(state.creditsPosted.minus(debits)),
      at: at.toISOString(),
      position: lastPosition([...out, ...inflow]),
    };
  }
}

const lastPosition = (events: RecordedEvent[]): string | null =>
  events.reduce<string | null>((last, e) => (last === null || comparePositions(e.position, last) > 0 ? e.position : last), null);
