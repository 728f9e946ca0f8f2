import { createHash, randomUUID } from 'node:crypto';
import { type AccountEvent, type AccountState, accountCreditStream, accountDecider, accountStream, type Limits } from '../domain/accounts/account';
import { DomainError } from '../domain/decider';
import { uuidV5 } from '../domain/ids';
import { fixed, money, roundUp8 } from '../domain/ledger/money';
import { type TransactionCreatedData, type TransactionEvent, transactionDecider, transactionStream } from '../domain/ledger/transaction';
import { canonicalJson } from '../eventstore/hash';
import { type NewEvent, type StreamAppend, WrongExpectedRevisionError } from '../eventstore/port';
import type { PaymentWebhookEvent } from '../providers/payments/port';
import type { PayoutRequest, PayoutWebhookEvent } from '../providers/payouts/port';
import { type CommandContext, load, toNewEvents } from './commands';
import { KeyedBatcher } from './batcher';
import { KeyedQueue } from './locks';
import type { Tally } from './tally';

const MAX_ATTEMPTS = 8;
const ID_BLOCK = 50;
const OWNERS_CACHE_MAX = 100_000;
/** KYC limits change rarely (approval, expiry after a year); a few seconds of staleness is harmless. */
const LIMITS_TTL_MS = 5_000;

export class LedgerProviderFailure extends Error {}

export interface AccountRow {
  id: number;
  asset: string;
  type: string;
  credits: string;
  debits: string;
}

export interface TransactionView {
  id: number;
  uuid: string;
  description: string;
  status: string;
  amount: string;
  debitAccountId: number | null;
  creditAccountId: number | null;
  created: string;
  updated?: string;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
const TXN_COLUMNS = `id::text, uuid::text, description, status, amount::text, debit_account_id::text, credit_account_id::text, user_id::text,
  to_char(created AT TIME ZONE 'UTC', ${ISO}) AS created, to_char(updated AT TIME ZONE 'UTC', ${ISO}) AS updated`;

interface TxnRow {
  id: string;
  uuid: string;
  description: string;
  status: string;
  amount: string;
  debit_account_id: string | null;
  credit_account_id: string | null;
  user_id: string;
  created: string;
  updated: string;
}

const toView = (r: TxnRow, withUpdated: boolean): TransactionView => ({
  id: Number(r.id),
  uuid: r.uuid,
  description: r.description,
  status: r.status,
  amount: fixed(money(r.amount)),
  debitAccountId: r.debit_account_id === null ? null : Number(r.debit_account_id),
  creditAccountId: r.credit_account_id === null ? null : Number(r.credit_account_id),
  created: r.created,
  ...(withUpdated ? { updated: r.updated } : {}),
});

interface TransferRequest {
  user: { userId: string; partnerId: string };
  input: { fromAccountId: number; toAccountId: number; amount: string; description: string };
  ids: { uuid: string; id: number; limits: Limits };
  ctx: CommandContext;
}

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
}

/** Accounts, deposits, transfers, payouts: commands decided by the account and transaction aggregates. */
export class LedgerService {
  /** Debits of one account, one at a time in this process (see KeyedQueue). */
  private readonly debits = new KeyedQueue();
  /** Transfers out of one account, batched while the previous batch is written. */
  private readonly transfers = new KeyedBatcher<TransferRequest, { view: TransactionView; position: string | undefined }>((_key, requests) =>
    this.transferBatch(requests),
  );
  private readonly idBlock: number[] = [];
  private idBlockLoading: Promise<void> | undefined;
  /** Who owns an account never changes: remembered after the first read. */
  private readonly owners = new Map<number, { userId: string; partnerId: string }>();
  private readonly limitsCache = new Map<string, { limits: Limits; until: number }>();

  constructor(private readonly tally: Tally) {}

  private get cache() {
    return this.tally.stateCache;
  }

  async accountsOf(userId: string): Promise<AccountRow[]> {
    const rows = await this.tally.sql.query<{ account_id: string; asset: string; type: string; credits: string; debits: string }>(
      'SELECT account_id::text, asset, type, credits::text, debits::text FROM rm_accounts WHERE user_id = $1 ORDER BY account_id',
      [userId],
    );
    return rows.map((r) => ({ id: Number(r.account_id), asset: r.asset, type: r.type, credits: fixed(money(r.credits)), debits: fixed(money(r.debits)) }));
  }

  /**
   * An account the token user may act on: 404 when unknown or another partner's (its existence is
   * not theirs to learn), 403 when another user's of the same partner.
   */
  async ownAccount(userId: string, partnerId: string, accountId: number): Promise<number> {
    const owner = await this.ownerOf(accountId);
    if (!owner || owner.partnerId !== partnerId) throw new DomainError('not_found', 'Account not found');
    if (owner.userId !== userId) throw new DomainError('forbidden', 'Account does not belong to the authenticated user');
    return accountId;
  }

  async ownerOf(accountId: number): Promise<{ userId: string; partnerId: string } | null> {
    const known = this.owners.get(accountId);
    if (known) return known;
    const [row] = await this.tally.sql.query<{ user_id: string; partner_id: string }>(
      'SELECT user_id::text, partner_id::text FROM rm_accounts WHERE account_id = $1',
      [accountId],
    );
    if (!row) return null;
    const owner = { userId: row.user_id, partnerId: row.partner_id };
    if (this.owners.size >= OWNERS_CACHE_MAX) this.owners.clear();
    this.owners.set(accountId, owner);
    return owner;
  }

  async primaryAccount(userId: string): Promise<number> {
    const [row] = await this.tally.sql.query<{ account_id: string }>(
      'SELECT account_id::text FROM rm_accounts WHERE user_id = $1 ORDER BY account_id LIMIT 1',
      [userId],
    );
    if (!row) throw new DomainError('not_found', 'Account not found');
    return Number(row.account_id);
  }

  /** The derived operating limits of the KYC state (0 before approval). */
  async limitsOf(userId: string): Promise<Limits> {
    const cached = this.limitsCache.get(userId);
    if (cached && cached.until > Date.now()) return cached.limits;
    const limits = await this.readLimits(userId);
    if (this.limitsCache.size >= OWNERS_CACHE_MAX) this.limitsCache.clear();
    this.limitsCache.set(userId, { limits, until: Date.now() + LIMITS_TTL_MS });
    return limits;
  }

  private async readLimits(userId: string): Promise<Limits> {
    const [latest] = await this.tally.sql.query<{ status: string; expires_at: string | null }>(
      'SELECT status, expires_at::text FROM rm_kyc_verifications WHERE user_id = $1 ORDER BY created_at DESC, verification_id DESC LIMIT 1',
      [userId],
    );
    const approved = latest?.status === 'approved' && (!latest.expires_at || Date.parse(latest.expires_at) > Date.now());
    const { maxTransactionAmount, dailyTransactionLimit } = this.tally.config.kycLimits;
    return approved
      ? { maxTransactionAmount: String(maxTransactionAmount), dailyTransactionLimit: String(dailyTransactionLimit) }
      : { maxTransactionAmount: '0', dailyTransactionLimit: '0' };
  }

  /** Ids come from the sequence a block at a time (unique, not gap-free: a restart skips the rest of a block). */
  private async nextTransactionId(): Promise<number> {
    while (this.idBlock.length === 0) {
      this.idBlockLoading ??= this.tally.sql
        .query<{ id: string }>(`SELECT nextval('transaction_id_seq')::text AS id FROM generate_series(1, ${ID_BLOCK})`)
        .then((rows) => {
          this.idBlock.push(...rows.map((r) => Number(r.id)).sort((a, b) => a - b));
        })
        .finally(() => {
          this.idBlockLoading = undefined;
        });
      await this.idBlockLoading;
    }
    return this.idBlock.shift() as number;
  }

  /** Debit and credit of two account streams and the transaction, in one atomic append. */
  async transfer(
    user: { userId: string; partnerId: string },
    input: { fromAccountId?: number; toAccountId: number; amount: string; description: string },
    ctx: CommandContext,
  ): Promise<TransactionView> {
    const fromAccountId = input.fromAccountId ?? (await this.primaryAccount(user.userId));
    if (fromAccountId === input.toAccountId) throw new DomainError('invalid', 'Cannot transfer to the same account');
    const [from, to] = await Promise.all([this.ownerOf(fromAccountId), this.ownerOf(input.toAccountId)]);
    if (!from || !to || from.partnerId !== user.partnerId || to.partnerId !== user.partnerId)
      throw new DomainError('invalid', 'One or both accounts do not exist');
    if (from.userId !== user.userId) throw new DomainError('forbidden', 'Account does not belong to the authenticated user');
    const limits = await this.limitsOf(user.userId);
    const uuid = randomUUID();
    const id = await this.nextTransactionId();
    const { view, position } = await this.transfers.submit(accountStream(fromAccountId), {
      user,
      input: { ...input, fromAccountId },
      ids: { uuid, id, limits },
      ctx,
    });
    // Outside the account's batch: the next debits need not wait for the read models.
    await this.tally.readYourWrites(position, ['ledger']);
    return view;
  }

  /**
   * Transfers out of one account, decided in order against its state and written in one atomic
   * append (the source at its exact revision, so nothing can overdraw it). One that breaks a rule
   * fails alone; the others go through.
   */
  private async transferBatch(requests: TransferRequest[]): Promise<Array<{ view: TransactionView; position: string | undefined } | Error>> {
    const fromAccountId = requests[0]?.input.fromAccountId as number;
    for (let attempt = 1; ; attempt++) {
      const at = new Date().toISOString();
      // First pass on the cached state, without reading: the append at its revision catches a stale
      // one; a refusal is only given after a pass on the stored state (money may have come in).
      const trusted = attempt === 1;
      const source = await this.loadAccount(fromAccountId, { trustCache: trusted });
      let state = source.state;
      const outcomes: Array<{ view: TransactionView; position: string | undefined } | Error> = [];
      const sourceEvents: NewEvent[] = [];
      const credits = new Map<number, NewEvent[]>();
      const appends: StreamAppend[] = [];
      const accepted: number[] = [];
      for (const [index, { user, input, ids, ctx }] of requests.entries()) {
        try {
          // The destination exists (its owner was read from the accounts it was opened with): a credit
          // needs nothing else of its state, so it is not loaded.
          const target = { ...accountDecider.initialState(), opened: true, accountId: input.toAccountId };
          const debit = accountDecider.decide(
            { type: 'Debit', transactionId: ids.uuid, amount: input.amount, reason: 'transfer', pending: false, at, limits: ids.limits },
            state,
          );
          const credit = accountDecider.decide({ type: 'Credit', transactionId: ids.uuid, amount: input.amount, reason: 'transfer', at }, target);
          const created = transactionDecider.decide(
            {
              type: 'Create',
              data: {
                uuid: ids.uuid,
                id: ids.id,
                kind: 'TRANSFER',
                status: 'COMPLETED',
                amount: fixed(money(input.amount)),
                debitAccountId: fromAccountId,
                creditAccountId: input.toAccountId,
                description: input.description,
                userId: user.userId,
                partnerId: user.partnerId,
                requestHash: null,
                details: {},
                at,
              },
            },
            transactionDecider.initialState(),
          );
          state = debit.reduce(accountDecider.evolve, state);
          sourceEvents.push(...toNewEvents(ctx, accountStream(fromAccountId), debit));
          const targetEvents = credits.get(input.toAccountId) ?? [];
          targetEvents.push(...toNewEvents(ctx, accountCreditStream(input.toAccountId), credit));
          credits.set(input.toAccountId, targetEvents);
          appends.push({ stream: transactionStream(ids.uuid), events: toNewEvents(ctx, transactionStream(ids.uuid), created), expectedRevision: 'no_stream' });
          accepted.push(index);
          outcomes[index] = {
            view: {
              id: ids.id,
              uuid: ids.uuid,
              description: input.description,
              status: 'COMPLETED',
              amount: fixed(money(input.amount)),
              debitAccountId: fromAccountId,
              creditAccountId: input.toAccountId,
              created: at,
            },
            position: undefined,
          };
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          outcomes[index] = error;
        }
      }
      if (trusted && outcomes.some((o) => o instanceof Error)) continue;
      if (accepted.length === 0) return outcomes;
      try {
        const results = await this.tally.store.appendMany([
          { stream: accountStream(fromAccountId), events: sourceEvents, expectedRevision: source.revision },
          // Credits cannot break an invariant, so destinations are appended at any revision.
          ...[...credits].map(([accountId, events]) => ({ stream: accountCreditStream(accountId), events, expectedRevision: 'any' as const })),
          ...appends,
        ]);
        const position = results.reduce<string | undefined>((max, r) => (!max || r.position > max ? r.position : max), undefined);
        this.cache.advance(accountDecider, accountStream(fromAccountId), sourceEvents, results[0]?.nextRevision ?? -1);
        [...credits].forEach(([accountId, events], i) => {
          this.cache.advance(accountDecider, accountCreditStream(accountId), events, results[i + 1]?.nextRevision ?? -1);
        });
        for (const index of accepted) {
          const outcome = outcomes[index];
          if (outcome && !(outcome instanceof Error)) outcome.position = position;
        }
        return outcomes;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  private accountAppend(ctx: CommandContext, accountId: number, events: AccountEvent[], expected: number | 'any'): StreamAppend {
    return { stream: accountStream(accountId), events: toNewEvents(ctx, accountStream(accountId), events), expectedRevision: expected };
  }

  private creditAppend(ctx: CommandContext, accountId: number, events: AccountEvent[]): StreamAppend {
    return { stream: accountCreditStream(accountId), events: toNewEvents(ctx, accountCreditStream(accountId), events), expectedRevision: 'any' };
  }

  /** The account's state from both its streams; `revision` is the account stream's, where debits are decided. */
  private async loadAccount(accountId: number, options: { untilTime?: Date; trustCache?: boolean } = {}): Promise<{ state: AccountState; revision: number }> {
    const cache = options.untilTime ? undefined : this.cache;
    const [main, credits] = await Promise.all([
      load(this.tally.store, accountStream(accountId), accountDecider, { cache, untilTime: options.untilTime, trustCache: options.trustCache }),
      load(this.tally.store, accountCreditStream(accountId), accountDecider, { cache, untilTime: options.untilTime, trustCache: options.trustCache }),
    ]);
    return { state: { ...main.state, creditsPosted: fixed(money(main.state.creditsPosted).plus(credits.state.creditsPosted)) }, revision: main.revision };
  }

  /** A hosted payment link at the payment provider; the balance moves only when it confirms. */
  async deposit(
    user: { userId: string; partnerId: string },
    input: {
      toAccountId: number;
      amount: string;
      currency: string;
      provider: string;
      description: string;
      payer: { documentType: string; documentNumber: string };
    },
    ctx: CommandContext,
  ): Promise<{ transactionId: string; paymentLink: string }> {
    await this.ownAccount(user.userId, user.partnerId, input.toAccountId);
    const provider = this.tally.providers.payments.get(input.provider);
    if (!provider) throw new DomainError('invalid', `Unsupported payment provider: ${input.provider}`);
    const uuid = randomUUID();
    const amount = fixed(money(input.amount));
    let payment: Awaited<ReturnType<typeof provider.createPayment>>;
    try {
      payment = await provider.createPayment({ transactionId: uuid, amount, currency: input.currency, description: input.description, payer: input.payer });
    } catch (error) {
      this.tally.log.warn({ err: error, provider: provider.name }, 'payment provider could not create a payment');
      throw new LedgerProviderFailure('Payment provider unavailable');
    }
    const id = await this.nextTransactionId();
    const at = new Date().toISOString();
    const created = transactionDecider.decide(
      {
        type: 'Create',
        data: {
          uuid,
          id,
          kind: 'DEPOSIT',
          status: 'PENDING',
          amount,
          debitAccountId: null,
          creditAccountId: input.toAccountId,
          description: input.description,
          userId: user.userId,
          partnerId: user.partnerId,
          requestHash: null,
          details: { provider: provider.name, paymentId: payment.paymentId, currency: input.currency, payerDocumentType: input.payer.documentType },
          at,
        },
      },
      transactionDecider.initialState(),
    );
    const result = await this.tally.store.append(transactionStream(uuid), toNewEvents(ctx, transactionStream(uuid), created), 'no_stream');
    await this.tally.readYourWrites(result.position, ['ledger']);
    return { transactionId: uuid, paymentLink: payment.paymentLink };
  }

  /** The payment provider's verdict: a confirmation credits the account once, however often it comes. */
  async applyPaymentWebhook(providerName: string, event: PaymentWebhookEvent): Promise<void> {
    const ctx: CommandContext = {
      commandId: `payment:${providerName}:${event.eventId}`,
      metadata: { actor: { kind: 'provider', id: providerName }, correlationId: event.eventId },
    };
    for (let attempt = 1; ; attempt++) {
      const txn = await load(this.tally.store, transactionStream(event.transactionId), transactionDecider);
      const data = txn.state.created;
      if (data?.kind !== 'DEPOSIT' || data.creditAccountId === null) throw new DomainError('not_found', 'Transaction not found');
      const at = event.occurredAt;
      const matches = money(event.amount).eq(data.amount) && event.currency === (data.details.currency ?? 'USDC');
      const to = event.outcome === 'confirmed' && matches ? 'COMPLETED' : 'FAILED';
      const reason = event.outcome === 'confirmed' && !matches ? 'amount_mismatch' : event.outcome === 'failed' ? 'payment_failed' : null;
      const changed = transactionDecider.decide({ type: 'ChangeStatus', to, reason, details: { providerEventId: event.eventId }, at }, txn.state);
      if (changed.length === 0) return;
      const appends: StreamAppend[] = [
        { stream: transactionStream(data.uuid), events: toNewEvents(ctx, transactionStream(data.uuid), changed), expectedRevision: txn.revision },
      ];
      if (to === 'COMPLETED') {
        const account = await load(this.tally.store, accountStream(data.creditAccountId), accountDecider, { cache: this.cache });
        const credit = accountDecider.decide({ type: 'Credit', transactionId: data.uuid, amount: data.amount, reason: 'deposit', at }, account.state);
        appends.push(this.creditAppend(ctx, data.creditAccountId, credit));
      }
      try {
        const results = await this.tally.store.appendMany(appends);
        await this.tally.readYourWrites(results[results.length - 1]?.position, ['ledger']);
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * A payout: idempotent by the request's transactionId, recorded in the same append as what it
   * caused. Funds are held (a pending debit) at acceptance; the provider settles or fails later.
   */
  async payout(user: { userId: string; partnerId: string }, input: PayoutInput, ctx: CommandContext): Promise<PayoutAnswer> {
    // The key is a UUID, case-insensitive: the body is hashed with it in its canonical form.
    const uuid = input.transactionId.toLowerCase();
    const requestHash = createHash('sha256')
      .update(canonicalJson({ ...input, transactionId: uuid, amount: fixed(money(input.amount)) }))
      .digest('hex');
    const accountId = await this.primaryAccount(user.userId);
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
      if (previous) return previous;
      const provider = this.tally.providers.payouts.get(input.provider);
      if (!provider) throw new DomainError('invalid', `Unsupported payout provider: ${input.provider}`);
      const rate = await this.tally.providers.rates.midRate('USDC', input.asset);
      if (rate === null) throw new DomainError('invalid', `Unsupported asset: ${input.asset}`);
      const debitUsdc = fixed(roundUp8(money(input.amount).div(rate)));
      const limits = await this.limitsOf(user.userId);
      const at = new Date().toISOString();
      const account = await this.loadAccount(accountId);
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
      const id = await this.nextTransactionId();
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
          this.accountAppend(ctx, accountId, debit, account.revision),
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
    // Held but never handed to the provider (a crash, or a concurrent first try): hand it over now;
    // the provider is idempotent by transactionId, so this never pays twice.
    if (state.status === 'PENDING' && !state.paymentId) return 'resubmit';
    return this.acceptedAnswer(state);
  }

  private acceptedAnswer(state: ReturnType<typeof transactionDecider.initialState>): PayoutAnswer {
    const status = state.status ?? 'PENDING';
    const paymentId = state.paymentId;
    if (status === 'FAILED' && !paymentId) return { httpStatus: 502, body: { success: false, error: 'Payout provider unavailable' } };
    return {
      httpStatus: 200,
      body: { success: true, paymentId, status, message: status === 'FAILED' ? 'Payout failed; the funds were returned' : 'Payout accepted' },
    };
  }

  private async submitPayout(uuid: string, ctx: CommandContext): Promise<PayoutAnswer> {
    const stream = transactionStream(uuid);
    const txn = await load(this.tally.store, stream, transactionDecider);
    const data = txn.state.created;
    if (!data) throw new Error('a held payout has its transaction');
    const provider = this.tally.providers.payouts.get(String(data.details.provider));
    const request = data.details.request as unknown as Pick<PayoutRequest, 'source' | 'destination'> & { description: string | null };
    try {
      if (!provider) throw new Error(`payout provider ${String(data.details.provider)} is not configured`);
      const accepted = await provider.submitPayout({
        transactionId: uuid,
        amount: String(data.details.assetAmount),
        asset: String(data.details.asset),
        description: request.description,
        source: request.source,
        destination: request.destination,
      });
      for (let attempt = 1; ; attempt++) {
        const current = attempt === 1 ? txn : await load(this.tally.store, stream, transactionDecider);
        const events = transactionDecider.decide(
          { type: 'RecordAcceptance', paymentId: accepted.paymentId, status: accepted.status, at: new Date().toISOString() },
          current.state,
        );
        if (events.length === 0) return this.acceptedAnswer(current.state);
        try {
          const result = await this.tally.store.append(
            stream,
            toNewEvents({ ...ctx, commandId: `${ctx.commandId}:accepted` }, stream, events),
            current.revision,
          );
          await this.tally.readYourWrites(result.position, ['ledger']);
          return this.acceptedAnswer(events.reduce(transactionDecider.evolve, current.state));
        } catch (error) {
          // A concurrent retry recorded the acceptance first: answer with what it recorded.
          if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
        }
      }
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) throw error;
      this.tally.log.warn({ err: error, transactionId: uuid }, 'payout provider refused or failed: returning the funds');
      await this.failPayout(uuid, 'provider_unavailable', { commandId: `${ctx.commandId}:submit-failed`, metadata: ctx.metadata });
      return { httpStatus: 502, body: { success: false, error: 'Payout provider unavailable' } };
    }
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
      const account = await this.loadAccount(data.debitAccountId);
      const reversalUuid = uuidV5(`reversal:${uuid}`);
      const posted = accountDecider.decide({ type: 'PostHold', transactionId: uuid, at }, account.state);
      const credit = accountDecider.decide(
        { type: 'Credit', transactionId: reversalUuid, amount: data.amount, reason: 'payout_reversal', at },
        posted.reduce(accountDecider.evolve, account.state),
      );
      const reversal = transactionDecider.decide(
        {
          type: 'Create',
          data: {
            uuid: reversalUuid,
            id: await this.nextTransactionId(),
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
          ...(posted.length ? [this.accountAppend(ctx, data.debitAccountId, posted, account.revision)] : []),
          this.creditAppend(ctx, data.debitAccountId, credit),
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
      const account = await load(this.tally.store, accountStream(data.debitAccountId), accountDecider, { cache: this.cache });
      const posted = accountDecider.decide({ type: 'PostHold', transactionId: data.uuid, at }, account.state);
      try {
        const results = await this.tally.store.appendMany([
          { stream, events: toNewEvents(ctx, stream, settled), expectedRevision: txn.revision },
          ...(posted.length ? [this.accountAppend(ctx, data.debitAccountId, posted, account.revision)] : []),
        ]);
        await this.tally.readYourWrites(results[results.length - 1]?.position, ['ledger']);
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }

  async listTransactions(accountId: number, query: { limit: number; page: number; from?: string; to?: string }): Promise<TransactionView[]> {
    const params: unknown[] = [accountId];
    const where = ['(debit_account_id = $1 OR credit_account_id = $1)'];
    if (query.from) {
      params.push(query.from);
      where.push(`created >= $${params.length}::timestamptz`);
    }
    if (query.to) {
      params.push(query.to);
      where.push(`created <= $${params.length}::timestamptz`);
    }
    params.push(query.limit, (query.page - 1) * query.limit);
    const rows = await this.tally.sql.query<TxnRow>(
      `SELECT ${TXN_COLUMNS} FROM rm_transactions WHERE ${where.join(' AND ')} ORDER BY created DESC, id DESC LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return rows.map((r) => toView(r, false));
  }

  /** A transaction the token user is party to (owns its debit or credit account). */
  async getTransaction(uuid: string, user: { userId: string; partnerId: string }): Promise<TransactionView> {
    const [row] = await this.tally.sql.query<TxnRow & { partner_id: string }>(`SELECT ${TXN_COLUMNS}, partner_id::text FROM rm_transactions WHERE uuid = $1`, [
      uuid,
    ]);
    if (!row) throw new DomainError('not_found', 'Transaction not found');
    const mine = await this.tally.sql.query('SELECT 1 FROM rm_accounts WHERE user_id = $1 AND account_id = ANY($2::bigint[])', [
      user.userId,
      [row.debit_account_id, row.credit_account_id].filter((x) => x !== null),
    ]);
    if (mine.length === 0) {
      // Another partner's transaction does not exist for this caller.
      const [other] = await this.tally.sql.query<{ partner_id: string }>(
        'SELECT partner_id::text FROM rm_accounts WHERE account_id = ANY($1::bigint[]) LIMIT 1',
        [[row.debit_account_id, row.credit_account_id].filter((x) => x !== null)],
      );
      if (other?.partner_id !== user.partnerId) throw new DomainError('not_found', 'Transaction not found');
      throw new DomainError('forbidden', 'Transaction does not belong to the authenticated user');
    }
    return toView(row, true);
  }

  /** A balance as it was at an instant, folded from the account's stream (not a read model). */
  async balanceAt(accountId: number, at: Date): Promise<{ credits: string; debits: string }> {
    const { state } = await this.loadAccount(accountId, { untilTime: at });
    return { credits: state.creditsPosted, debits: fixed(money(state.debitsPosted).plus(state.debitsPending)) };
  }
}

export type { TransactionEvent };
