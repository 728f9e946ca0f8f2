import { uuidV7 } from '../../domain/ids';
import { accountDecider, accountStream } from '../../domain/accounts/account';
import { DomainError } from '../../domain/decider';
import { fixed, money } from '../../domain/ledger/money';
import { transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { type StreamAppend, WrongExpectedRevisionError } from '../../eventstore/port';
import type { PaymentProvider, PaymentWebhookEvent } from '../../providers/payments/port';
import { type CommandContext, load, toNewEvents } from '../commands';
import type { Tally } from '../tally';
import { type LedgerAccounts, LedgerProviderFailure, MAX_ATTEMPTS } from './accounts';
import { type IdempotencyKeys, requestHashOf, sameRequest } from './idempotency';

interface DepositInput {
  toAccountId: number;
  amount: string;
  currency: string;
  provider: string;
  description: string;
  payer: { documentType: string; documentNumber: string };
}

/** Deposits: a hosted payment link; the account is credited once, when the provider confirms. */
export class Deposits {
  constructor(
    private readonly tally: Tally,
    private readonly accounts: LedgerAccounts,
    private readonly keys: IdempotencyKeys,
  ) {}

  /**
   * A PENDING deposit and its payment link. With an idempotency key (per partner, see
   * IdempotencyKeys), the same request again answers the first deposit's transactionId and link
   * (the provider is asked again for the payment of that transactionId, which it keeps): a retry
   * after a lost answer never makes a second link to pay. `replayed`: the deposit was made before,
   * under the key.
   */
  async deposit(
    user: { userId: string; partnerId: string },
    input: DepositInput,
    ctx: CommandContext,
    idempotencyKey?: string,
  ): Promise<{ transactionId: string; paymentLink: string; replayed: boolean }> {
    await this.accounts.ownAccount(user.userId, user.partnerId, input.toAccountId);
    const provider = this.tally.providers.payments.get(input.provider);
    if (!provider) throw new DomainError('invalid', `Unsupported payment provider: ${input.provider}`);
    if (idempotencyKey === undefined)
      return { ...(await this.depositOnce(user, input, provider, ctx, { uuid: uuidV7(), requestHash: null })), replayed: false };
    return this.keys.run(user.partnerId, idempotencyKey, async ({ uuid, commandId }) => {
      const requestHash = requestHashOf({ ...input, amount: fixed(money(input.amount)), userId: user.userId });
      const stored = async () => {
        const { state } = await load(this.tally.store, transactionStream(uuid), transactionDecider);
        if (state.created) sameRequest(state.created, 'DEPOSIT', requestHash);
        return state.created !== null;
      };
      // Stored (by an earlier copy, or by another node meanwhile): the same payment, asked for again.
      const again = async () => ({ transactionId: uuid, paymentLink: (await this.payment(uuid, input, provider)).paymentLink, replayed: true });
      if (await stored()) return again();
      try {
        return { ...(await this.depositOnce(user, input, provider, { ...ctx, commandId, unkeyed: false }, { uuid, requestHash })), replayed: false };
      } catch (error) {
        if (error instanceof WrongExpectedRevisionError && (await stored())) return again();
        throw error;
      }
    });
  }

  /** The provider's payment for the deposit `uuid` (made now, or the one made before: it is idempotent by transactionId). */
  private async payment(uuid: string, input: DepositInput, provider: PaymentProvider): Promise<{ paymentLink: string; paymentId: string }> {
    try {
      const payment = await provider.createPayment({
        transactionId: uuid,
        amount: fixed(money(input.amount)),
        currency: input.currency,
        description: input.description,
        payer: input.payer,
      });
      return { paymentLink: payment.paymentLink, paymentId: payment.paymentId };
    } catch (error) {
      this.tally.log.warn({ err: error, provider: provider.name }, 'payment provider could not create a payment');
      throw new LedgerProviderFailure('Payment provider unavailable');
    }
  }

  private async depositOnce(
    user: { userId: string; partnerId: string },
    input: DepositInput,
    provider: PaymentProvider,
    ctx: CommandContext,
    keyed: { uuid: string; requestHash: string | null },
  ): Promise<{ transactionId: string; paymentLink: string }> {
    const { uuid, requestHash } = keyed;
    const amount = fixed(money(input.amount));
    const payment = await this.payment(uuid, input, provider);
    const id = await this.accounts.nextTransactionId();
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
          requestHash,
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
        const account = await load(this.tally.store, accountStream(data.creditAccountId), accountDecider, { cache: this.accounts.cache });
        const credit = accountDecider.decide({ type: 'Credit', transactionId: data.uuid, amount: data.amount, reason: 'deposit', at }, account.state);
        appends.push(this.accounts.creditAppend(ctx, data.creditAccountId, credit));
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
}
