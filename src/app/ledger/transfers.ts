import { type AccountState, accountCreditStream, accountDecider, accountStream } from '../../domain/ledger/account';
import { DomainError } from '../../platform/decider';
import { type KycState, kycDecider, kycStream } from '../../domain/identity';
import { type Limits, limitsAt } from '../../domain/ledger/account';
import { fixed, money } from '../../domain/ledger/money';
import { createdBy, storedUnderKey, transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { decideTransfers, type TransferFacts, type TransferRequest } from '../../domain/ledger/transfer';
import { uuidV7 } from '../../platform/ids';
import { type Append, at, type Batches, type Decision, type Reads } from '../../platform/commands/command-handler';
import { type CommandContext, type Loaded, load } from '../../platform/commands/commands';
import type { TransactionView } from '../../projections/ledger';
import { writeScope } from '../../platform/consumers/read-your-writes';
import { accountOfUser, type TransactionIds, viewOf, readAccount } from './facts';
import { headerKey, type IdempotencyKeys, madeUnderKeyElsewhere, requestHashOf } from './idempotency';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../../platform/commands/commands';
import type { NoteWrite } from '../../platform/consumers/read-your-writes';
import { LEDGER_REFUSALS } from '../../domain/ledger/refusals';

type User = { userId: string; partnerId: string };
type TransferInput = { fromAccountId?: number; toAccountId: number; amount: string; description: string };

/** A transfer waiting for its account's batch: the request without its time, which each decision gives it. */
interface Asked {
  request: Omit<TransferRequest, 'at'>;
  /** Keyed: its transaction stream may hold it already (a retry); the partner's key as sent. */
  keyed: boolean;
  idempotencyKey?: string;
  ctx: CommandContext;
}

/**
 * A waiting request as decided at `at`. Written out field by field, like the request itself in
 * `submit`: spread copies of it outlived young collections (docs/performance.md).
 */
function decidedAt(r: Asked['request'], at: string): TransferRequest {
  return {
    uuid: r.uuid,
    id: r.id,
    userId: r.userId,
    partnerId: r.partnerId,
    fromAccountId: r.fromAccountId,
    toAccountId: r.toAccountId,
    amount: r.amount,
    description: r.description,
    requestHash: r.requestHash,
    at,
  };
}

export interface TransferDone {
  transfer: TransactionView;
  /** The answer is that of a transfer made before under the key. */
  replayed: boolean;
}

export interface TransfersDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  noteWrite: NoteWrite;
}

/**
 * Transfers: the debit decided at the source account's revision, the credit and the transaction in
 * the same atomic append. Transfers out of one account are batched (one decision, one append).
 */
export class Transfers {
  private readonly batches: Batches<Asked, TransferDone>;

  constructor(
    private readonly deps: TransfersDeps,
    private readonly ids: TransactionIds,
    private readonly keys: IdempotencyKeys,
    private readonly approved: Limits,
  ) {
    this.batches = deps.commands.batches((asked, reads) => this.decideBatch(asked, reads));
  }

  /**
   * With an idempotency key (per partner), the same request again answers the first transfer and
   * moves no money again; only transfers made are kept under a key, so one refused (say for the
   * balance) may be sent again and go through later.
   */
  async transfer(user: User, input: TransferInput, ctx: CommandContext, idempotencyKey?: string): Promise<TransferDone> {
    const fromAccountId = input.fromAccountId ?? (await accountOfUser(this.deps.store, this.deps.stateCache, user.userId));
    if (idempotencyKey === undefined) return this.submit(user, { ...input, fromAccountId }, ctx, { uuid: uuidV7(), requestHash: null });
    const keyed = headerKey(user.partnerId, idempotencyKey);
    const requestHash = requestHashOf({ ...input, fromAccountId: input.fromAccountId ?? null, amount: fixed(money(input.amount)), userId: user.userId });
    return this.keys.run(keyed.key, 'refuse', () =>
      this.submit(user, { ...input, fromAccountId }, { ...ctx, commandId: keyed.commandId, unkeyed: false }, { uuid: keyed.uuid, requestHash, idempotencyKey }),
    );
  }

  private async submit(
    user: User,
    input: TransferInput & { fromAccountId: number },
    ctx: CommandContext,
    key: { uuid: string; requestHash: string | null; idempotencyKey?: string },
  ): Promise<TransferDone> {
    const id = this.ids.take() ?? (await this.ids.next());
    const request: Asked['request'] = {
      uuid: key.uuid,
      id,
      userId: user.userId,
      partnerId: user.partnerId,
      fromAccountId: input.fromAccountId,
      toAccountId: input.toAccountId,
      amount: input.amount,
      description: input.description,
      requestHash: key.requestHash,
    };
    const asked: Asked = { request, keyed: key.requestHash !== null, idempotencyKey: key.idempotencyKey, ctx };
    const done = await this.batches.submit(accountStream(input.fromAccountId), ctx, asked);
    // The answer comes from the events, so nothing waits for the read model here: the partner's next
    // ledger read does (Tally.noteWrite).
    this.deps.noteWrite(writeScope('ledger', user.partnerId), done.position);
    return key.requestHash === null ? done.result : this.storedAnswer(key.uuid, id, done.result);
  }

  /**
   * A keyed transfer answers with what is stored under its key: another node may have made it first
   * (its events have the same ids, so this append was taken as a retry of that one), with its own
   * number and time.
   */
  private async storedAnswer(uuid: string, id: number, mine: TransferDone): Promise<TransferDone> {
    const { state } = await load(this.deps.store, transactionStream(uuid), transactionDecider);
    if (!state.created) throw new Error(`transfer ${uuid} was appended but is not in its stream`);
    return { transfer: viewOf(state.created), replayed: mine.replayed || state.created.id !== id };
  }

  /** Transfers out of one account, decided in order against its state and appended together. */
  private async decideBatch(batch: Asked[], reads: Reads): Promise<Decision<Array<TransferDone | DomainError>>> {
    const now = new Date().toISOString();
    const source = await readAccount(reads, batch[0]?.request.fromAccountId as number);
    const keyed = batch.some((asked) => asked.keyed);
    const results: Array<TransferDone | DomainError | undefined> = keyed ? await Promise.all(batch.map((asked) => this.madeBefore(asked, reads))) : [];
    const toDecide = batch.flatMap((asked, i) => (results[i] === undefined ? [{ asked, index: i }] : []));
    const facts = await this.factsOf(
      toDecide.map(({ asked }) => asked.request),
      now,
      reads,
    );
    const { outcomes } = decideTransfers(
      source.state,
      toDecide.map(({ asked }, i) => ({ request: decidedAt(asked.request, now), facts: facts[i] as TransferFacts })),
    );
    const appends: Append[] = [];
    outcomes.forEach((outcome, i) => {
      const { asked, index } = toDecide[i] as { asked: Asked; index: number };
      if (outcome instanceof DomainError) {
        results[index] = outcome;
        return;
      }
      const { uuid, fromAccountId, toAccountId } = asked.request;
      const ctx = asked.ctx;
      appends.push(
        { stream: accountStream(fromAccountId), events: outcome.debit, expected: at(source), ctx, cached: accountDecider },
        // Credits cannot break an invariant, so destinations are appended at any revision.
        { stream: accountCreditStream(toAccountId), events: outcome.credit, expected: 'any', ctx, cached: accountDecider },
        { stream: transactionStream(uuid), events: outcome.transaction, expected: 'no_stream', ctx },
      );
      results[index] = { transfer: viewOf(createdBy(outcome.transaction)), replayed: false };
    });
    return { appends, result: results as Array<TransferDone | DomainError> };
  }

  /**
   * A keyed transfer already made under its key: its answer again (or 422 for another request under
   * the key, a card call or payout made under it included).
   */
  private async madeBefore(asked: Asked, reads: Reads): Promise<TransferDone | DomainError | undefined> {
    if (!asked.keyed) return undefined;
    const txn = await reads.stream(transactionStream(asked.request.uuid), transactionDecider, { cached: false });
    try {
      const stored = storedUnderKey(txn.state, { kind: 'TRANSFER', requestHash: asked.request.requestHash as string });
      if (stored) return { transfer: viewOf(stored), replayed: true };
      const key = asked.idempotencyKey;
      if (key !== undefined && (await madeUnderKeyElsewhere(reads, asked.request.partnerId, key, 'transaction'))) return LEDGER_REFUSALS.idempotencyKeyReused();
      return undefined;
    } catch (error) {
      if (error instanceof DomainError) return error;
      throw error;
    }
  }

  /** Per request, its destination and its user's limits, read together (each stream once per decision). */
  private async factsOf(requests: Array<Omit<TransferRequest, 'at'>>, at: string, reads: Reads): Promise<TransferFacts[]> {
    const loaded = await Promise.all([
      ...requests.map((r) => reads.stream(accountStream(r.toAccountId), accountDecider)),
      ...requests.map((r) => reads.stream(kycStream(r.userId), kycDecider)),
    ]);
    return requests.map((_, i) => ({
      destination: (loaded[i] as Loaded<AccountState>).state,
      limits: limitsAt((loaded[requests.length + i] as Loaded<KycState>).state, at, this.approved),
    }));
  }
}
