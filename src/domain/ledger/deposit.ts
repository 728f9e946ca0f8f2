import { type AccountEvent, type AccountState, accountDecider, assertAccount, requireOwnAccount } from './account';
import { LEDGER_REFUSALS } from './refusals';
import { fixed, money } from './money';
import { createdBy, type TransactionEvent, type TransactionState, transactionDecider } from './transaction';

/** A deposit as asked for, once its provider made the payment it is paid through. */
export interface DepositRequest {
  uuid: string;
  id: number;
  userId: string;
  partnerId: string;
  toAccountId: number;
  amount: string;
  currency: string;
  description: string;
  requestHash: string | null;
  payment: { provider: string; paymentId: string; payerDocumentType: string };
  at: string;
}

/**
 * What a deposit is checked for before its payment is made: the account's asset, and that the
 * account is the user's own (404 unknown or another partner's, 403 another user's) and open (404
 * closed, as for a credit to it).
 */
export function checkDeposit(destination: AccountState, request: Pick<DepositRequest, 'currency' | 'userId' | 'partnerId'>): void {
  if (request.currency !== 'USDC') throw LEDGER_REFUSALS.currencyMismatch();
  requireOwnAccount(destination, request);
  if (destination.closed) throw LEDGER_REFUSALS.accountNotFound();
}

/** A PENDING deposit: nothing is credited until the provider confirms the payment. */
export function decideDeposit(destination: AccountState, request: DepositRequest): TransactionEvent[] {
  checkDeposit(destination, request);
  return transactionDecider.decide(
    {
      type: 'Create',
      data: {
        uuid: request.uuid,
        id: request.id,
        kind: 'DEPOSIT',
        status: 'PENDING',
        amount: fixed(money(request.amount)),
        debitAccountId: null,
        creditAccountId: request.toAccountId,
        description: request.description,
        userId: request.userId,
        partnerId: request.partnerId,
        requestHash: request.requestHash,
        details: {
          provider: request.payment.provider,
          paymentId: request.payment.paymentId,
          currency: request.currency,
          payerDocumentType: request.payment.payerDocumentType,
        },
        at: request.at,
      },
    },
    transactionDecider.initialState(),
  );
}

/**
 * The account's side of a PENDING deposit: `DepositExpected` on its credit stream, so that the account
 * knows the money on its way (an erasure decided on it is refused) and a closing conflicts with it.
 */
export function expectDeposit(destination: AccountState, deposit: TransactionEvent[]): AccountEvent[] {
  const created = createdBy(deposit);
  return accountDecider.decide({ type: 'ExpectDeposit', transactionId: created.uuid, amount: created.amount, at: created.at }, destination);
}

/** The provider's word on a payment. */
export interface PaymentVerdict {
  eventId: string;
  outcome: 'confirmed' | 'failed';
  amount: string;
  currency: string;
  at: string;
}

/**
 * A confirmation of the amount and currency asked for completes the deposit and credits the account,
 * once however often it comes; a failure, or a payment of another amount, fails it (and the account
 * no longer expects it), and so does a confirmation for a closed account (a deposit made before
 * accounts knew their deposits, while its user was being erased: the money never reaches an account
 * nobody owns). A verdict on a deposit already decided changes nothing.
 */
export function decidePaymentVerdict(
  deposit: TransactionState,
  account: AccountState,
  verdict: PaymentVerdict,
): { transaction: TransactionEvent[]; credit: AccountEvent[] } {
  const data = deposit.created;
  if (data?.kind !== 'DEPOSIT' || data.creditAccountId === null) throw LEDGER_REFUSALS.transactionNotFound();
  const matches = money(verdict.amount).eq(data.amount) && verdict.currency === (data.details.currency ?? 'USDC');
  const completed = verdict.outcome === 'confirmed' && matches && !account.closed;
  const reason = completed ? null : verdict.outcome === 'failed' ? 'payment_failed' : !matches ? 'amount_mismatch' : 'account_closed';
  const transaction = transactionDecider.decide(
    { type: 'ChangeStatus', to: completed ? 'COMPLETED' : 'FAILED', reason, details: { providerEventId: verdict.eventId }, at: verdict.at },
    deposit,
  );
  if (transaction.length === 0) return { transaction, credit: [] };
  if (!completed) return { transaction, credit: accountDecider.decide({ type: 'DropDeposit', transactionId: data.uuid, at: verdict.at }, account) };
  const credit = accountDecider.decide({ type: 'Credit', transactionId: data.uuid, amount: data.amount, reason: 'deposit', at: verdict.at }, account);
  assertAccount(credit.reduce(accountDecider.evolve, account));
  return { transaction, credit };
}
