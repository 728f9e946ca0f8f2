import { accountCreditStream, accountDecider, accountStream } from '../../domain/ledger/account';
import { DomainError } from '../../platform/decider';
import { uuidV5 } from '../../platform/ids';
import type { Limits } from '../../domain/ledger/account';
import { fixed, money } from '../../domain/ledger/money';
import {
  decidePayout,
  decidePayoutFailed,
  decidePayoutSettled,
  type PayoutFacts,
  type PayoutRequest,
  payoutStatusAtAcceptance,
  type StoredPayout,
} from '../../domain/ledger/payout';
import { type TransactionState, type TransactionStatus, transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { type AcceptedPayout, PayoutRefused, type PayoutRequest as ProviderPayout, type PayoutWebhookEvent } from '../../providers/ledger/payouts/port';
import { type Append, at, type Batches, type Decision, type Done, type Reads } from '../../platform/commands/command-handler';
import { type CommandContext, load } from '../../platform/commands/commands';
import { accountOfUser, limitsOf, runSettlement, type TransactionIds, readAccount } from './facts';
import { type IdempotencyKeys, madeUnderKeyElsewhere, partnerKey, requestHashOf } from './idempotency';
import { LedgerProviderFailure } from './provider-failure';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { StateCache } from '../../platform/commands/commands';
import type { Logger } from 'pino';
import type { BuiltProviders } from '../../providers/index';
import type { LedgerQueries } from '../../projections/ledger';
import { refuseTransactionIdMadeElsewhere } from '../../domain/ledger/payout';
import { keptRefusal, LEDGER_REFUSALS } from '../../domain/ledger/refusals';

/** The answer when the provider refused the payout (its funds went back). */
export const PAYOUT_REFUSED = 'Payout refused by the provider; the funds were returned';

export interface PayoutInput {
  transactionId: string;
  amount: string;
  asset: string;
  description?: string;
  provider: string;
  source: { metadata: Record<string, unknown> };
  destination: ProviderPayout['destination'];
}

/**
 * A payout's answer: taken by its provider (its paymentId, PROCESSING), refused by a rule (the
 * refusal kept under its transactionId), or refused by the provider (502, the funds returned).
 * `replayed`: the first answer to the same request, given again (a retry under its transactionId).
 */
export type PayoutAnswer = (
  | { outcome: 'accepted'; body: { success: true; paymentId: string; status: TransactionStatus; message: string } }
  | { outcome: 'refused'; refusal: DomainError }
  | { outcome: 'refused_by_provider' }
) & { replayed?: boolean };

type User = { userId: string; partnerId: string };

/** A payout waiting for its account's batch, with the facts fetched before (rates, provider). */
interface Asked {
  request: Omit<PayoutRequest, 'at' | 'id'>;
  facts: Omit<PayoutFacts, 'limits'>;
  ctx: CommandContext;
}

type Held = { kind: 'stored'; stored: StoredPayout } | { kind: 'refused'; refusal: DomainError } | { kind: 'held' };

export interface PayoutsDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  readYourWrites: WaitForReadModels;
  log: Logger;
  providers: Pick<BuiltProviders, 'payouts' | 'rates'>;
  ledgerQueries: Pick<LedgerQueries, 'stalePayouts'>;
}

/** Payouts: held at acceptance, settled or failed (and reversed) by the provider; idempotent by transactionId. */
export class Payouts {
  /** Holds on one account, decided in order and appended together. */
  private readonly holds: Batches<Asked, Held>;

  constructor(
    private readonly deps: PayoutsDeps,
    private readonly ids: TransactionIds,
    private readonly keys: IdempotencyKeys,
    private readonly approved: Limits,
  ) {
    this.holds = deps.commands.batches((asked, reads) => this.decideHolds(asked, reads));
  }

  async payout(user: User, input: PayoutInput, ctx: CommandContext): Promise<PayoutAnswer> {
    // The key is a UUID, case-insensitive: the body is hashed with it in its canonical form.
    const uuid = input.transactionId.toLowerCase();
    const requestHash = requestHashOf({ ...input, transactionId: uuid, amount: fixed(money(input.amount)) });
    const accountId = await accountOfUser(this.deps.store, this.deps.stateCache, user.userId);
    const rates = this.deps.providers.rates;
    const facts = {
      assetDecimals: rates.assets().find((a) => a.asset === input.asset)?.decimals,
      rate: await rates.midRate('USDC', input.asset),
      providerKnown: this.deps.providers.payouts.get(input.provider) !== undefined,
    };
    const handOver = JSON.parse(JSON.stringify({ source: input.source, destination: input.destination, description: input.description ?? null }));
    const request = { ...user, ...input, uuid, accountId, requestHash, handOver };
    // A copy sent while the first runs waits for it, then gets its answer (a keyed call of another kind under it is 400).
    return this.keys.run(partnerKey(user.partnerId, uuid), 'wait', async () => {
      const done = await this.holds.submit(accountStream(accountId), ctx, { request, facts, ctx });
      const held = done.result;
      if (held.kind === 'refused') throw held.refusal;
      if (held.kind === 'stored' && held.stored.kind !== 'held') return { ...answerOf(held.stored), replayed: true };
      await this.deps.readYourWrites(done.position, ['ledger']);
      // Held now, or held before and never handed over (a crash, the provider out of reach): hand it over.
      return this.submitPayout(uuid, ctx);
    });
  }

  /** Payouts out of one account, decided in order against its state. */
  private async decideHolds(batch: Asked[], reads: Reads): Promise<Decision<Array<Held | DomainError>>> {
    const now = new Date().toISOString();
    const account = await readAccount(reads, batch[0]?.request.accountId as number);
    let state = account.state;
    const appends: Append[] = [];
    const results: Array<Held | DomainError> = [];
    for (const { request, facts, ctx } of batch) {
      try {
        const txn = await reads.stream(transactionStream(request.uuid), transactionDecider, { cached: false });
        const fresh = !txn.state.created && !txn.state.rejection;
        refuseTransactionIdMadeElsewhere(fresh && (await madeUnderKeyElsewhere(reads, request.partnerId, request.uuid, 'payout')));
        const limits = await limitsOf(reads, request.userId, now, this.approved);
        const decision = decidePayout(txn.state, state, { ...request, id: await this.ids.next(), at: now }, { ...facts, limits });
        const stream = transactionStream(request.uuid);
        if (decision.kind === 'stored') results.push(decision);
        else if (decision.kind === 'refused') {
          appends.push({ stream, events: decision.transaction, expected: at(txn), ctx });
          results.push({ kind: 'refused', refusal: decision.refusal });
        } else {
          state = decision.debit.reduce(accountDecider.evolve, state);
          appends.push(
            { stream: accountStream(request.accountId), events: decision.debit, expected: at(account), ctx, cached: accountDecider },
            { stream, events: decision.transaction, expected: at(txn), ctx },
          );
          results.push({ kind: 'held' });
        }
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        results.push(error);
      }
    }
    return { appends, result: results, refused: results.some((r) => !(r instanceof DomainError) && r.kind === 'refused') };
  }

  /**
   * Hands a held payout to its provider and records the acceptance. Only the provider's definite
   * refusal returns the funds (FAILED and a REVERSED credit). When it cannot be known whether the
   * provider took it (unreachable, timed out), or the acceptance could not be recorded, the payout
   * stays PENDING with its funds held and the request answers 503: the same request again hands it
   * over again (the provider is idempotent by transactionId), the provider's webhook settles or fails
   * it, and resubmitStale hands over those nobody asked about again. A refund there could pay twice:
   * the bank transfer and the funds back.
   */
  private async submitPayout(uuid: string, ctx: CommandContext): Promise<PayoutAnswer> {
    let accepted: AcceptedPayout;
    try {
      accepted = await this.handOver(uuid);
    } catch (error) {
      if (error instanceof PayoutRefused) {
        this.deps.log.warn({ err: error, transactionId: uuid }, 'payout provider refused the payout: returning the funds');
        await this.failPayout(uuid, 'provider_refused', { commandId: `${ctx.commandId}:refused`, metadata: ctx.metadata }, { providerError: error.message });
        return { outcome: 'refused_by_provider' };
      }
      this.deps.log.warn({ err: error, transactionId: uuid }, 'payout provider unreachable: the payout stays held, to be handed over again');
      throw new LedgerProviderFailure('Payout provider unavailable', { cause: error });
    }
    // A concurrent retry that recorded the acceptance first is answered with what it recorded.
    const done = await this.deps.commands.run(
      { ...ctx, commandId: `${ctx.commandId}:accepted` },
      async (reads) => {
        const txn = await reads.stream(transactionStream(uuid), transactionDecider);
        const command = { type: 'RecordAcceptance' as const, paymentId: accepted.paymentId, at: new Date().toISOString() };
        const events = transactionDecider.decide(command, txn.state);
        return { appends: [{ stream: transactionStream(uuid), events, expected: at(txn) }], result: events.reduce(transactionDecider.evolve, txn.state) };
      },
      { cache: false },
    );
    await this.deps.readYourWrites(done.position, ['ledger']);
    return answerOf(storedOf(done.result));
  }

  /** The held payout handed to its provider (idempotent by transactionId). */
  private async handOver(uuid: string): Promise<AcceptedPayout> {
    const { state } = await load(this.deps.store, transactionStream(uuid), transactionDecider);
    const data = state.created;
    if (!data) throw new Error('a held payout has its transaction');
    const provider = this.deps.providers.payouts.get(String(data.details.provider));
    if (!provider) throw new Error(`payout provider ${String(data.details.provider)} is not configured`);
    const request = data.details.request as unknown as Pick<ProviderPayout, 'source' | 'destination'> & { description: string | null };
    return provider.submitPayout({
      transactionId: uuid,
      amount: String(data.details.assetAmount),
      asset: String(data.details.asset),
      description: request.description,
      source: request.source,
      destination: request.destination,
    });
  }

  /**
   * Payouts held for at least `olderThanSeconds` whose acceptance was never recorded (the provider
   * was out of reach, or the process stopped between the hold and the hand-over) and nobody asked
   * about again: each is handed to its provider again, as a retry of its request would. The provider
   * is idempotent by transactionId, so this never pays twice; one still out of reach waits for the
   * next sweep. Returns how many were accepted (or settled, or refused) meanwhile.
   */
  async resubmitStale(olderThanSeconds: number): Promise<number> {
    const uuids = await this.deps.ledgerQueries.stalePayouts(olderThanSeconds);
    let handed = 0;
    for (const uuid of uuids) {
      const ctx: CommandContext = { commandId: `payout-resubmit:${uuid}`, metadata: { actor: { kind: 'system', id: 'payout-resubmit' } } };
      try {
        await this.submitPayout(uuid, ctx);
        handed++;
      } catch (error) {
        this.deps.log.warn({ err: error, transactionId: uuid }, 'held payout not handed over yet');
      }
    }
    return handed;
  }

  /** FAILED, and a REVERSED credit returns the held funds, exactly once. */
  private async failPayout(uuid: string, reason: string, ctx: CommandContext, details: Record<string, string> = {}): Promise<void> {
    const reversalUuid = uuidV5(`reversal:${uuid}`);
    const done = await this.settlement(uuid, ctx, async (reads) => {
      const stream = transactionStream(uuid);
      const txn = await reads.stream(stream, transactionDecider, { cached: false });
      const accountId = txn.state.created?.debitAccountId;
      if (accountId === undefined || accountId === null) throw LEDGER_REFUSALS.transactionNotFound();
      const account = await readAccount(reads, accountId);
      const reversal = { uuid: reversalUuid, id: await this.ids.next() };
      const decided = decidePayoutFailed(txn.state, account.state, { reason, details, at: new Date().toISOString(), reversal });
      return {
        appends: [
          { stream, events: decided.transaction, expected: at(txn) },
          { stream: accountStream(accountId), events: decided.debit, expected: at(account), cached: accountDecider },
          { stream: accountCreditStream(accountId), events: decided.credit, expected: 'any', cached: accountDecider },
          { stream: transactionStream(reversalUuid), events: decided.reversal, expected: 'no_stream' },
        ],
        result: undefined,
      };
    });
    await this.deps.readYourWrites(done.position, ['ledger']);
  }

  private settlement<Result>(uuid: string, ctx: CommandContext, decide: (reads: Reads) => Promise<Decision<Result>>): Promise<Done<Result>> {
    return runSettlement(this.deps.commands, this.deps.store, uuid, ctx, decide);
  }

  async applyPayoutWebhook(providerName: string, event: PayoutWebhookEvent): Promise<void> {
    const ctx: CommandContext = {
      commandId: `payout:${providerName}:${event.eventId}`,
      metadata: { actor: { kind: 'provider', id: providerName }, correlationId: event.eventId },
    };
    if (event.outcome === 'failed') return this.failPayout(event.transactionId, event.reason ?? 'payout_failed', ctx, { providerEventId: event.eventId });
    const done = await this.settlement(event.transactionId, ctx, async (reads) => {
      const stream = transactionStream(event.transactionId);
      const txn = await reads.stream(stream, transactionDecider, { cached: false });
      const accountId = txn.state.created?.debitAccountId;
      if (accountId === undefined || accountId === null) throw LEDGER_REFUSALS.transactionNotFound();
      const account = await readAccount(reads, accountId);
      const decided = decidePayoutSettled(txn.state, account.state, { eventId: event.eventId, at: event.occurredAt });
      return {
        appends: [
          { stream, events: decided.transaction, expected: at(txn) },
          { stream: accountStream(accountId), events: decided.debit, expected: at(account), cached: accountDecider },
        ],
        result: undefined,
      };
    });
    await this.deps.readYourWrites(done.position, ['ledger']);
  }
}

/** What a payout's transaction holds, seen as a stored answer. */
function storedOf(txn: TransactionState): StoredPayout {
  return txn.rejection
    ? { kind: 'refused', refusal: keptRefusal(txn.rejection) }
    : { kind: 'accepted', paymentId: txn.paymentId, status: payoutStatusAtAcceptance(txn) };
}

/** The first answer to the request, whatever happened to the payout since (GET and webhooks tell that). */
function answerOf(stored: StoredPayout): PayoutAnswer {
  if (stored.kind === 'refused') return { outcome: 'refused', refusal: stored.refusal };
  if (stored.kind === 'accepted' && stored.paymentId)
    return { outcome: 'accepted', body: { success: true, paymentId: stored.paymentId, status: stored.status, message: 'Payout accepted' } };
  return { outcome: 'refused_by_provider' };
}
