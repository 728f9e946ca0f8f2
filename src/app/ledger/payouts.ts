import { createHash } from 'node:crypto';
import { type AccountEvent, accountDecider, accountStream } from '../../domain/accounts/account';
import { DomainError } from '../../domain/decider';
import { uuidV5 } from '../../domain/ids';
import { divideRoundUp8, fixed, money } from '../../domain/ledger/money';
import { type TransactionCreatedData, transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { canonicalJson } from '../../eventstore/hash';
import { WrongExpectedRevisionError } from '../../eventstore/port';
import { type AcceptedPayout, PayoutRefused, type PayoutRequest, type PayoutWebhookEvent } from '../../providers/payouts/port';
import { type CommandContext, load, toNewEvents } from '../commands';
import { KeyedQueue } from '../locks';
import type { Tally } from '../tally';
import { type LedgerAccounts, LedgerProviderFailure, MAX_ATTEMPTS } from './accounts';

/** The answer when the provider refused the payout (its funds went back). */
const PAYOUT_REFUSED = 'Payout refused by the provider; the funds were returned';

export interface PayoutInput {
  transactionId: string;
  amount: string;
  asset: string;
  description?: string;
  provider: string;
  source: { metadata: Record<string, unknown> };
  destination: PayoutRequest['destination'];
}

export interface PayoutAnswer {
  httpStatus: number;
  body: Record<string, unknown>;
  /** The first answer to the same request, given again (a retry under its transactionId). */
  replayed?: boolean;
}

/** Payouts: held at acceptance, settled or failed (and reversed) by the provider; idempotent by key. */
export class Payouts {
  /** Debits of one account, one at a time in this process (see KeyedQueue). */
  private readonly debits = new KeyedQueue();

  constructor(
    private readonly tally: Tally,
    private readonly accounts: LedgerAccounts,
  ) {}

  async payout(user: { userId: string; partnerId: string }, input: PayoutInput, ctx: CommandContext): Promise<PayoutAnswer> {
    // An amount is sent in the asset's own unit: no fraction of its smallest one (0.001 COP).
    const asset = this.tally.providers.rates.assets().find((a) => a.asset === input.asset);
    if (asset && (money(input.amount).decimalPlaces() ?? 0) > asset.decimals)
      throw new DomainError('invalid', `amount must have at most ${asset.decimals} decimal places for ${asset.asset}`);
    // The key is a UUID, case-insensitive: the body is hashed with it in its canonical form.
    const uuid = input.transactionId.toLowerCase();
    const requestHash = createHash('sha256')
      .update(canonicalJson({ ...input, transactionId: uuid, amount: fixed(money(input.amount)) }))
      .digest('hex');
    const accountId = await this.accounts.primaryAccount(user.userId);
    return this.debits.run(accountStream(accountId), () => this.payoutOnce(user, input, { requestHash, uuid, accountId }, ctx));
  }

  private async payoutOnce(
    user: { userId: string; partnerId: string },
    input: PayoutInput,
    ids: { requestHash: string; uuid: string; accountId: number },
    ctx: CommandContext,
  ): Promise<PayoutAnswer> {
    const { requestHash, uuid, accountId } = ids;
    const stream = transactionStream(uuid);
    for (let attempt = 1; ; attempt++) {
      const txn = await load(this.tally.store, stream, transactionDecider);
      const previous = this.previousAnswer(txn.state, requestHash, user.userId);
      if (previous === 'resubmit') return this.submitPayout(uuid, ctx);
      if (previous) return { ...previous, replayed: true };
      const provider = this.tally.providers.payouts.get(input.provider);
      if (!provider) throw new DomainError('invalid', `Unsupported payout provider: ${input.provider}`);
      const rate = await this.tally.providers.rates.midRate('USDC', input.asset);
      if (rate === null) throw new DomainError('invalid', `Unsupported asset: ${input.asset}`);
      const debitUsdc = fixed(divideRoundUp8(money(input.amount), rate));
      const limits = await this.accounts.limitsOf(user.userId);
      const at = new Date().toISOString();
      const account = await this.accounts.loadAccount(accountId);
      let debit: AccountEvent[];
      try {
        debit = accountDecider.decide({ type: 'Debit', transactionId: uuid, amount: debitUsdc, reason: 'payout', pending: true, at, limits }, account.state);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        // The refusal is kept under the key: the same retry gets the same refusal, never a later success.
        const rejected = transactionDecider.decide(
          { type: 'Reject', uuid, requestHash, status: 400, error: error.message, userId: user.userId, at },
          txn.state,
        );
        try {
          await this.tally.store.append(stream, toNewEvents(ctx, stream, rejected), txn.revision === -1 ? 'no_stream' : txn.revision);
        } catch (appendError) {
          if (appendError instanceof WrongExpectedRevisionError && attempt < MAX_ATTEMPTS) continue;
          throw appendError;
        }
        throw error;
      }
      const id = await this.accounts.nextTransactionId();
      const created: TransactionCreatedData = {
        uuid,
        id,
        kind: 'PAYOUT',
        status: 'PENDING',
        amount: debitUsdc,
        debitAccountId: accountId,
        creditAccountId: null,
        description: input.description ?? `Payout of ${input.amount} ${input.asset}`,
        userId: user.userId,
        partnerId: user.partnerId,
        requestHash,
        details: {
          provider: provider.name,
          asset: input.asset,
          assetAmount: input.amount,
          rate,
          request: JSON.parse(JSON.stringify({ source: input.source, destination: input.destination, description: input.description ?? null })),
        },
        at,
      };
      const createdEvents = transactionDecider.decide({ type: 'Create', data: created }, txn.state);
      try {
        const results = await this.tally.store.appendMany([
          this.accounts.accountAppend(ctx, accountId, debit, account.revision),
          { stream, events: toNewEvents(ctx, stream, createdEvents), expectedRevision: txn.revision === -1 ? 'no_stream' : txn.revision },
        ]);
        await this.tally.readYourWrites(results[1]?.position, ['ledger']);
      } catch (error) {
        if (error instanceof WrongExpectedRevisionError && attempt < MAX_ATTEMPTS) continue;
        throw error;
      }
      return this.submitPayout(uuid, ctx);
    }
  }

  private previousAnswer(state: ReturnType<typeof transactionDecider.initialState>, requestHash: string, userId: string): PayoutAnswer | 'resubmit' | null {
    if (state.rejection) {
      if (state.rejection.requestHash !== requestHash || state.rejection.userId !== userId)
        throw new DomainError('conflict', 'transactionId already used with different parameters');
      return { httpStatus: state.rejection.status, body: { success: false, error: state.rejection.error } };
    }
    const data = state.created;
    if (!data) return null;
    if (data.kind !== 'PAYOUT' || data.requestHash !== requestHash || data.userId !== userId)
      throw new DomainError('conflict', 'transactionId already used with different parameters');
    // Held, its acceptance never recorded (a crash, the provider unreachable, a concurrent first
    // try): hand it over now; the provider is idempotent by transactionId, so this never pays twice.
    if (!state.paymentId && state.status !== 'FAILED') return 'resubmit';
    return this.acceptedAnswer(state);
  }

  /** The first answer to the request, whatever happened to the payout since (GET and webhooks tell that). */
  private acceptedAnswer(state: ReturnType<typeof transactionDecider.initialState>): PayoutAnswer {
    const paymentId = state.paymentId;
    if (!paymentId) return { httpStatus: 502, body: { success: false, error: PAYOUT_REFUSED } };
    return { httpStatus: 200, body: { success: true, paymentId, status: state.acceptedAs ?? 'PENDING', message: 'Payout accepted' } };
  }

  /**
   * Hands a held payout to its provider and records the acceptance. Only the provider's definite
   * refusal returns the funds (FAILED and a REVERSED credit). When it cannot be known whether the
   * provider took it (unreachable, timed out), or the acceptance could not be recorded, the payout
   * stays PENDING with its funds held and the request answers 503: the same request again hands it
   * over again (the provider is idempotent by transactionId), the provider's webhook settles or fails
   * it, and Payouts.resubmitStale hands over those nobody asked about again. A refund there could pay
   * twice: the bank transfer and the funds back.
   */
  private async submitPayout(uuid: string, ctx: CommandContext): Promise<PayoutAnswer> {
    const stream = transactionStream(uuid);
    const txn = await load(this.tally.store, stream, transactionDecider);
    const data = txn.state.created;
    if (!data) throw new Error('a held payout has its transaction');
    const provider = this.tally.providers.payouts.get(String(data.details.provider));
    const request = data.details.request as unknown as Pick<PayoutRequest, 'source' | 'destination'> & { description: string | null };
    let accepted: AcceptedPayout;
    try {
      if (!provider) throw new Error(`payout provider ${String(data.details.provider)} is not configured`);
      accepted = await provider.submitPayout({
        transactionId: uuid,
        amount: String(data.details.assetAmount),
        asset: String(data.details.asset),
        description: request.description,
        source: request.source,
        destination: request.destination,
      });
    } catch (error) {
      if (error instanceof PayoutRefused) {
        this.tally.log.warn({ err: error, transactionId: uuid }, 'payout provider refused the payout: returning the funds');
        await this.failPayout(uuid, 'provider_refused', { commandId: `${ctx.commandId}:refused`, metadata: ctx.metadata }, { providerError: error.message });
        return { httpStatus: 502, body: { success: false, error: PAYOUT_REFUSED } };
      }
      this.tally.log.warn({ err: error, transactionId: uuid }, 'payout provider unreachable: the payout stays held, to be handed over again');
      throw new LedgerProviderFailure('Payout provider unavailable', { cause: error });
    }
    for (let attempt = 1; ; attempt++) {
      const current = attempt === 1 ? txn : await load(this.tally.store, stream, transactionDecider);
      const events = transactionDecider.decide(
        { type: 'RecordAcceptance', paymentId: accepted.paymentId, status: accepted.status, at: new Date().toISOString() },
        current.state,
      );
      if (events.length === 0) return this.acceptedAnswer(current.state);
      try {
        const result = await this.tally.store.append(stream, toNewEvents({ ...ctx, commandId: `${ctx.commandId}:accepted` }, stream, events), current.revision);
        await this.tally.readYourWrites(result.position, ['ledger']);
        return this.acceptedAnswer(events.reduce(transactionDecider.evolve, current.state));
      } catch (error) {
        // A concurrent retry recorded the acceptance first: answer with what it recorded.
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Payouts held for at least `olderThanSeconds` whose acceptance was never recorded (the provider
   * was out of reach, or the process stopped between the hold and the hand-over) and nobody asked
   * about again: each is handed to its provider again, as a retry of its request would. The provider
   * is idempotent by transactionId, so this never pays twice; one still out of reach waits for the
   * next sweep. Returns how many were accepted (or settled, or refused) meanwhile.
   */
  async resubmitStale(olderThanSeconds: number): Promise<number> {
    const rows = await this.tally.sql.query<{ uuid: string }>(
      `SELECT uuid::text FROM rm_transactions
        WHERE kind = 'PAYOUT' AND status = 'PENDING' AND NOT (details ? 'paymentId') AND updated <= now() - make_interval(secs => $1)
        ORDER BY created LIMIT 100`,
      [olderThanSeconds],
    );
    let handed = 0;
    for (const { uuid } of rows) {
      const ctx: CommandContext = { commandId: `payout-resubmit:${uuid}`, metadata: { actor: { kind: 'system', id: 'payout-resubmit' } } };
      try {
        await this.submitPayout(uuid, ctx);
        handed++;
      } catch (error) {
        this.tally.log.warn({ err: error, transactionId: uuid }, 'held payout not handed over yet');
      }
    }
    return handed;
  }

  /** FAILED, and a REVERSED credit returns the held funds, exactly once. */
  private async failPayout(uuid: string, reason: string, ctx: CommandContext, details: Record<string, string> = {}): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const stream = transactionStream(uuid);
      const txn = await load(this.tally.store, stream, transactionDecider);
      const data = txn.state.created;
      if (!data || data.debitAccountId === null) throw new DomainError('not_found', 'Transaction not found');
      const at = new Date().toISOString();
      const failed = transactionDecider.decide({ type: 'ChangeStatus', to: 'FAILED', reason, details, at }, txn.state);
      if (failed.length === 0) return;
      const account = await this.accounts.loadAccount(data.debitAccountId);
      const reversalUuid = uuidV5(`reversal:${uuid}`);
      // The money comes back: the payout no longer counts to its day's outgoing total (daily limit).
      const posted = accountDecider.decide({ type: 'PostHold', transactionId: uuid, at, returnedDay: data.at.slice(0, 10) }, account.state);
      const credit = accountDecider.decide(
        { type: 'Credit', transactionId: reversalUuid, amount: data.amount, reason: 'payout_reversal', at },
        posted.reduce(accountDecider.evolve, account.state),
      );
      const reversal = transactionDecider.decide(
        {
          type: 'Create',
          data: {
            uuid: reversalUuid,
            id: await this.accounts.nextTransactionId(),
            kind: 'REVERSAL',
            status: 'REVERSED',
            amount: data.amount,
            debitAccountId: null,
            creditAccountId: data.debitAccountId,
            description: `Reversal of payout ${uuid}`,
            userId: data.userId,
            partnerId: data.partnerId,
            requestHash: null,
            details: { reverses: uuid },
            at,
          },
        },
        transactionDecider.initialState(),
      );
      try {
        const results = await this.tally.store.appendMany([
          { stream, events: toNewEvents(ctx, stream, failed), expectedRevision: txn.revision },
          ...(posted.length ? [this.accounts.accountAppend(ctx, data.debitAccountId, posted, account.revision)] : []),
          this.accounts.creditAppend(ctx, data.debitAccountId, credit),
          { stream: transactionStream(reversalUuid), events: toNewEvents(ctx, transactionStream(reversalUuid), reversal), expectedRevision: 'no_stream' },
        ]);
        await this.tally.readYourWrites(results[results.length - 1]?.position, ['ledger']);
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  async applyPayoutWebhook(providerName: string, event: PayoutWebhookEvent): Promise<void> {
    const ctx: CommandContext = {
      commandId: `payout:${providerName}:${event.eventId}`,
      metadata: { actor: { kind: 'provider', id: providerName }, correlationId: event.eventId },
    };
    if (event.outcome === 'failed') return this.failPayout(event.transactionId, event.reason ?? 'payout_failed', ctx, { providerEventId: event.eventId });
    for (let attempt = 1; ; attempt++) {
      const stream = transactionStream(event.transactionId);
      const txn = await load(this.tally.store, stream, transactionDecider);
      const data = txn.state.created;
      if (data?.kind !== 'PAYOUT' || data.debitAccountId === null) throw new DomainError('not_found', 'Transaction not found');
      const at = event.occurredAt;
      const settled = transactionDecider.decide(
        { type: 'ChangeStatus', to: 'COMPLETED', reason: null, details: { providerEventId: event.eventId }, at },
        txn.state,
      );
      if (settled.length === 0) return;
      const account = await load(this.tally.store, accountStream(data.debitAccountId), accountDecider, { cache: this.accounts.cache });
      const posted = accountDecider.decide({ type: 'PostHold', transactionId: data.uuid, at }, account.state);
      try {
        const results = await this.tally.store.appendMany([
          { stream, events: toNewEvents(ctx, stream, settled), expectedRevision: txn.revision },
          ...(posted.length ? [this.accounts.accountAppend(ctx, data.debitAccountId, posted, account.revision)] : []),
        ]);
        await this.tally.readYourWrites(results[results.length - 1]?.position, ['ledger']);
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }
}
