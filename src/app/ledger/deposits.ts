import { accountCreditStream, accountDecider } from '../../domain/ledger/account';
import { checkDeposit, decideDeposit, decidePaymentVerdict, expectDeposit } from '../../domain/ledger/deposit';
import { fixed, money } from '../../domain/ledger/money';
import { storedUnderKey, transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { uuidV7 } from '../../platform/ids';
import type { PaymentProvider, PaymentWebhookEvent } from '../../providers/ledger/payments/port';
import { at } from '../../platform/commands/command-handler';
import type { CommandContext } from '../../platform/commands/commands';
import { headerKey, type IdempotencyKeys, madeUnderKeyElsewhere, requestHashOf } from './idempotency';
import { LedgerProviderFailure } from './provider-failure';
import type { TransactionIds } from './facts';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { Logger } from 'pino';
import type { BuiltProviders } from '../../providers/index';
import { readAccount } from './facts';
import { LEDGER_REFUSALS } from '../../domain/ledger/refusals';

interface DepositInput {
  toAccountId: number;
  amount: string;
  currency: string;
  provider: string;
  description: string;
  payer: { documentType: string; documentNumber: string };
}

type User = { userId: string; partnerId: string };

const NEW_STREAM = { state: transactionDecider.initialState(), revision: -1 };

export interface DepositDone {
  transactionId: string;
  paymentLink: string;
  /** The deposit was made before, under the key: its payment is the one asked for again. */
  replayed: boolean;
}

export interface DepositsDeps {
  commands: CommandHandler;
  readYourWrites: WaitForReadModels;
  log: Logger;
  providers: Pick<BuiltProviders, 'payments'>;
}

/** Deposits: a hosted payment link; the account is credited once, when the provider confirms. */
export class Deposits {
  constructor(
    private readonly deps: DepositsDeps,
    private readonly ids: TransactionIds,
    private readonly keys: IdempotencyKeys,
  ) {}

  /**
   * A PENDING deposit and its payment link. With an idempotency key (per partner), the same request
   * again answers the first deposit's transactionId and link (the provider is asked again for the
   * payment of that transactionId, which it keeps): a retry after a lost answer never makes a second
   * link to pay.
   */
  async deposit(user: User, input: DepositInput, ctx: CommandContext, idempotencyKey?: string): Promise<DepositDone> {
    if (idempotencyKey === undefined) return this.depositOnce(user, input, ctx, { uuid: uuidV7(), requestHash: null });
    const keyed = headerKey(user.partnerId, idempotencyKey);
    const requestHash = requestHashOf({ ...input, amount: fixed(money(input.amount)), userId: user.userId });
    return this.keys.run(keyed.key, 'refuse', () =>
      this.depositOnce(user, input, { ...ctx, commandId: keyed.commandId, unkeyed: false }, { uuid: keyed.uuid, requestHash, idempotencyKey }),
    );
  }

  /**
   * The payment is made inside the decision: the provider is idempotent by transactionId, so a
   * decision made again (after a concurrent write) asks for the same payment.
   */
  private async depositOnce(
    user: User,
    input: DepositInput,
    ctx: CommandContext,
    key: { uuid: string; requestHash: string | null; idempotencyKey?: string },
  ): Promise<DepositDone> {
    const { uuid, requestHash } = key;
    const done = await this.deps.commands.run(ctx, async (reads) => {
      const destination = await readAccount(reads, input.toAccountId);
      checkDeposit(destination.state, { ...user, currency: input.currency });
      const provider = this.deps.providers.payments.get(input.provider);
      if (!provider) throw LEDGER_REFUSALS.unsupportedPaymentProvider(input.provider);
      // Unkeyed, the uuid was made for this request: nothing can be stored under it yet.
      const txn = requestHash === null ? NEW_STREAM : await reads.stream(transactionStream(uuid), transactionDecider, { cached: false });
      const stored = requestHash !== null && storedUnderKey(txn.state, { kind: 'DEPOSIT', requestHash });
      // Checked before the provider is asked for a payment: a card call or payout made under the key refuses it.
      if (!stored && key.idempotencyKey !== undefined && (await madeUnderKeyElsewhere(reads, user.partnerId, key.idempotencyKey, 'transaction')))
        throw LEDGER_REFUSALS.idempotencyKeyReused();
      const payment = await this.payment(uuid, input, provider);
      if (stored) return { appends: [], result: { transactionId: uuid, paymentLink: payment.paymentLink, replayed: true } };
      const events = decideDeposit(destination.state, {
        ...user,
        ...input,
        uuid,
        id: await this.ids.next(),
        requestHash,
        payment: { provider: provider.name, paymentId: payment.paymentId, payerDocumentType: input.payer.documentType },
        at: new Date().toISOString(),
      });
      // The account expects it, at its credit stream's revision: an erasure closing the account meanwhile conflicts with it.
      const expected = expectDeposit(destination.state, events);
      return {
        appends: [
          { stream: transactionStream(uuid), events, expected: at(txn) },
          { stream: accountCreditStream(input.toAccountId), events: expected, expected: at(destination.credits), cached: accountDecider },
        ],
        result: { transactionId: uuid, paymentLink: payment.paymentLink, replayed: false },
      };
    });
    await this.deps.readYourWrites(done.position, ['ledger']);
    return done.result;
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
      this.deps.log.warn({ err: error, provider: provider.name }, 'payment provider could not create a payment');
      throw new LedgerProviderFailure('Payment provider unavailable');
    }
  }

  /** The payment provider's verdict: a confirmation credits the account once, however often it comes. */
  async applyPaymentWebhook(providerName: string, event: PaymentWebhookEvent): Promise<void> {
    const ctx: CommandContext = {
      commandId: `payment:${providerName}:${event.eventId}`,
      metadata: { actor: { kind: 'provider', id: providerName }, correlationId: event.eventId },
    };
    const done = await this.deps.commands.run(ctx, async (reads) => {
      const txn = await reads.stream(transactionStream(event.transactionId), transactionDecider, { cached: false });
      const accountId = txn.state.created?.creditAccountId;
      if (accountId === undefined || accountId === null) throw LEDGER_REFUSALS.transactionNotFound();
      const account = await readAccount(reads, accountId);
      const verdict = { eventId: event.eventId, outcome: event.outcome, amount: event.amount, currency: event.currency, at: event.occurredAt };
      const decided = decidePaymentVerdict(txn.state, account.state, verdict);
      return {
        appends: [
          { stream: transactionStream(event.transactionId), events: decided.transaction, expected: at(txn) },
          // At the revision read: an account closed meanwhile makes this decide again (and fail a deposit it did not expect).
          { stream: accountCreditStream(accountId), events: decided.credit, expected: at(account.credits), cached: accountDecider },
        ],
        result: undefined,
      };
    });
    await this.deps.readYourWrites(done.position, ['ledger']);
  }
}
