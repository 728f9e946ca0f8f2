import { uuidV7 } from '../../domain/ids';
import { accountDecider, accountStream } from '../../domain/accounts/account';
import { DomainError } from '../../domain/decider';
import { fixed, money } from '../../domain/ledger/money';
import { transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { type StreamAppend, WrongExpectedRevisionError } from '../../eventstore/port';
import type { PaymentWebhookEvent } from '../../providers/payments/port';
import { type CommandContext, load, toNewEvents } from '../commands';
import type { Tally } from '../tally';
import { type LedgerAccounts, LedgerProviderFailure, MAX_ATTEMPTS } from './accounts';

/** Deposits: a hosted payment link; the account is credited once, when the provider confirms. */
export class Deposits {
  constructor(
    private readonly tally: Tally,
    private readonly accounts: LedgerAccounts,
  ) {}

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
    await this.accounts.ownAccount(user.userId, user.partnerId, input.toAccountId);
    const provider = this.tally.providers.payments.get(input.provider);
    if (!provider) throw new DomainError('invalid', `Unsupported payment provider: ${input.provider}`);
    const uuid = uuidV7();
    const amount = fixed(money(input.amount));
    let payment: Awaited<ReturnType<typeof provider.createPayment>>;
    try {
      payment = await provider.createPayment({ transactionId: uuid, amount, currency: input.currency, description: input.description, payer: input.payer });
    } catch (error) {
      this.tally.log.warn({ err: error, provider: provider.name }, 'payment provider could not create a payment');
      throw new LedgerProviderFailure('Payment provider unavailable');
    }
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

  /**
   * A payout: idempotent by the request's transactionId, recorded in the same append as what it
   * caused. Funds are held (a pending debit) at acceptance; the provider settles or fails later.
   */
}
