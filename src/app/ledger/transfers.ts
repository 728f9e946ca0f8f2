import { accountCreditStream, accountDecider, accountStream, type Limits } from '../../domain/accounts/account';
import { DomainError } from '../../domain/decider';
import { fixed, money } from '../../domain/ledger/money';
import { transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { uuidV7 } from '../../domain/ids';
import { type NewEvent, type StreamAppend, WrongExpectedRevisionError } from '../../eventstore/port';
import { KeyedBatcher } from '../batcher';
import { type CommandContext, load, toNewEvents } from '../commands';
import type { Tally } from '../tally';
import { type LedgerAccounts, MAX_ATTEMPTS } from './accounts';
import { type IdempotencyKeys, requestHashOf, sameRequest } from './idempotency';
import { ledgerScope, type TransactionView } from './reads';

interface TransferRequest {
  user: { userId: string; partnerId: string };
  input: { fromAccountId: number; toAccountId: number; amount: string; description: string };
  ids: { uuid: string; requestHash: string | null; id: number; limits: Limits };
  ctx: CommandContext;
}

type TransferOutcome = { view: TransactionView; position: string | undefined };

/** Transfers: debit and credit in one atomic append, the debit decided at the source's revision. */
export class Transfers {
  /** Transfers out of one account, batched while the previous batch is written. */
  private readonly batches = new KeyedBatcher<TransferRequest, TransferOutcome>((_key, requests) => this.transferBatch(requests));

  constructor(
    private readonly tally: Tally,
    private readonly accounts: LedgerAccounts,
    private readonly keys: IdempotencyKeys,
  ) {}

  /**
   * A transfer. With an idempotency key (per partner, see IdempotencyKeys), the same request again
   * answers the first transfer and moves no money again (its events' ids derive from the key too).
   * Only transfers made are kept under a key: one refused (say for the balance) may be sent again
   * and go through later. `replayed`: the answer is that of a transfer made before, under the key.
   */
  async transfer(
    user: { userId: string; partnerId: string },
    input: { fromAccountId?: number; toAccountId: number; amount: string; description: string },
    ctx: CommandContext,
    idempotencyKey?: string,
  ): Promise<{ transfer: TransactionView; replayed: boolean }> {
    if (idempotencyKey === undefined) return { transfer: await this.transferOnce(user, input, ctx, { uuid: uuidV7(), requestHash: null }), replayed: false };
    return this.keys.run(user.partnerId, idempotencyKey, async ({ uuid, commandId }) => {
      const requestHash = requestHashOf({ ...input, fromAccountId: input.fromAccountId ?? null, amount: fixed(money(input.amount)), userId: user.userId });
      const stored = await this.storedTransfer(uuid, requestHash);
      if (stored) return { transfer: stored, replayed: true };
      const mine = await this.transferOnce(user, input, { ...ctx, commandId, unkeyed: false }, { uuid, requestHash });
      // What is stored answers: another node may have made it first, with its own id and time.
      const made = await this.storedTransfer(uuid, requestHash);
      if (!made) throw new Error(`transfer ${uuid} was appended but is not in its stream`);
      return { transfer: made, replayed: made.id !== mine.id };
    });
  }

  /** The transfer stored under a key, null when there is none; 422 when the key went to another request. */
  private async storedTransfer(uuid: string, requestHash: string): Promise<TransactionView | null> {
    const { state } = await load(this.tally.store, transactionStream(uuid), transactionDecider);
    const created = state.created;
    if (!created) return null;
    sameRequest(created, 'TRANSFER', requestHash);
    return {
      id: created.id,
      uuid: created.uuid,
      description: created.description,
      status: 'COMPLETED',
      amount: created.amount,
      debitAccountId: created.debitAccountId,
      creditAccountId: created.creditAccountId,
      created: created.at,
    };
  }

  private async transferOnce(
    user: { userId: string; partnerId: string },
    input: { fromAccountId?: number; toAccountId: number; amount: string; description: string },
    ctx: CommandContext,
    keyed: { uuid: string; requestHash: string | null },
  ): Promise<TransactionView> {
    const fromAccountId = input.fromAccountId ?? (await this.accounts.primaryAccount(user.userId));
    if (fromAccountId === input.toAccountId) throw new DomainError('invalid', 'Cannot transfer to the same account');
    // What is in memory is taken without waiting (a transfer's hot path has no await until its append).
    const accounts = this.accounts;
    const knownFrom = accounts.knownOwner(fromAccountId);
    const knownTo = accounts.knownOwner(input.toAccountId);
    const [from, to] = knownFrom && knownTo ? [knownFrom, knownTo] : await Promise.all([accounts.ownerOf(fromAccountId), accounts.ownerOf(input.toAccountId)]);
    if (!from || !to || from.partnerId !== user.partnerId || to.partnerId !== user.partnerId)
      throw new DomainError('invalid', 'One or both accounts do not exist');
    if (from.userId !== user.userId) throw new DomainError('forbidden', 'Account does not belong to the authenticated user');
    const limits = accounts.knownLimits(user.userId) ?? (await accounts.limitsOf(user.userId));
    const id = accounts.takeTransactionId() ?? (await accounts.nextTransactionId());
    const { view, position } = await this.batches.submit(accountStream(fromAccountId), {
      user,
      input: { ...input, fromAccountId },
      ids: { uuid: keyed.uuid, requestHash: keyed.requestHash, id, limits },
      ctx,
    });
    // The answer comes from the events, so nothing waits for the read model here: the partner's next
    // ledger read does (Tally.noteWrite).
    this.tally.noteWrite(ledgerScope(user.partnerId), position);
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
      const source = (trusted && this.accounts.cachedAccount(fromAccountId)) || (await this.accounts.loadAccount(fromAccountId, { trustCache: trusted }));
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
          const amount = fixed(money(input.amount));
          const created = transactionDecider.decide(
            {
              type: 'Create',
              data: {
                uuid: ids.uuid,
                id: ids.id,
                kind: 'TRANSFER',
                status: 'COMPLETED',
                amount,
                debitAccountId: fromAccountId,
                creditAccountId: input.toAccountId,
                description: input.description,
                userId: user.userId,
                partnerId: user.partnerId,
                requestHash: ids.requestHash,
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
              amount,
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
        this.accounts.cache.advance(accountDecider, accountStream(fromAccountId), sourceEvents, results[0]?.nextRevision ?? -1);
        [...credits].forEach(([accountId, events], i) => {
          this.accounts.cache.advance(accountDecider, accountCreditStream(accountId), events, results[i + 1]?.nextRevision ?? -1);
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
}
