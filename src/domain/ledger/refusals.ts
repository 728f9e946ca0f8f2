import { DomainError } from '../../platform/decider';
import { type Refusal, refusal } from '../../platform/refusals';
import { MAX_EXACT_NUMBER_DIGITS, MAX_INTEGER_DIGITS, MONEY_DECIMALS } from './money';

/**
 * The ledger capability's refusals (accounts, deposits, transfers, payouts, transactions, exchange
 * quotes and the ledger's sandbox): each its stable code, kind (hence status) and exact message.
 */
export const LEDGER_REFUSALS = {
  // Amounts, as a request sends them (a JSON number or a decimal string), in `amount`; on another
  // field (a quote's fromAmount), amountRefusalsFor(field) has the same refusals naming it.
  ...amountRefusals('amount'),
  amountTooPreciseForAsset: refusal(
    'amount_too_precise_for_asset',
    'invalid',
    (decimals: string, asset: string) => `amount must have at most ${decimals} decimal places for ${asset}`,
    ['decimals', 'asset'],
    { param: 'amount' },
  ),

  // The rules money moves by.
  insufficientBalance: refusal('insufficient_balance', 'invalid', (accountId: string) => `Insufficient balance in account ${accountId}`, ['accountId']),
  amountExceedsMaximum: refusal(
    'amount_exceeds_maximum',
    'invalid',
    (max: string) => `Amount exceeds maximum transaction amount of ${max}`,
    ['maxTransactionAmount'],
    { param: 'amount' },
  ),
  dailyLimitExceeded: refusal('daily_limit_exceeded', 'invalid', 'Daily transaction limit exceeded'),
  sameAccountTransfer: refusal('same_account_transfer', 'invalid', 'Cannot transfer to the same account', { param: 'toAccountId' }),
  currencyMismatch: refusal('currency_mismatch', 'invalid', 'currency must match the account asset (USDC)', { param: 'currency' }),
  unsupportedAsset: refusal('unsupported_asset', 'invalid', (asset: string) => `Unsupported asset: ${asset}`, ['asset']),
  unsupportedPaymentProvider: refusal(
    'unsupported_payment_provider',
    'invalid',
    (provider: string) => `Unsupported payment provider: ${provider}`,
    ['provider'],
    {
      param: 'provider',
    },
  ),
  unsupportedPayoutProvider: refusal('unsupported_payout_provider', 'invalid', (provider: string) => `Unsupported payout provider: ${provider}`, ['provider'], {
    param: 'provider',
  }),

  // Accounts.
  accountNotFound: refusal('account_not_found', 'not_found', 'Account not found'),
  accountOfAnotherUser: refusal('account_of_another_user', 'forbidden', 'Account does not belong to the authenticated user'),
  accountsNotFound: refusal('accounts_not_found', 'invalid', 'One or both accounts do not exist'),
  accountAlreadyOpened: refusal('account_already_opened', 'conflict', 'Account already opened'),
  userAlreadyHasAccount: refusal('user_already_has_account', 'conflict', 'The user already has an account'),
  accountsCreatedAtLogin: refusal('accounts_created_at_login', 'gone', 'Accounts are created automatically at first login'),

  // Transactions.
  transactionNotFound: refusal('transaction_not_found', 'not_found', 'Transaction not found'),
  transactionOfAnotherUser: refusal('transaction_of_another_user', 'forbidden', 'Transaction does not belong to the authenticated user'),
  transactionExists: refusal('transaction_exists', 'conflict', 'Transaction already exists'),

  // Idempotency (the codes every capability shares for these).
  idempotencyKeyReused: refusal('idempotency_key_reused', 'unprocessable', 'Idempotency key reused with different parameters'),
  duplicateRequestInProgress: refusal('duplicate_request_in_progress', 'invalid', 'Duplicate request in progress'),
  idempotencyKeysDiffer: refusal('idempotency_keys_differ', 'invalid', 'Idempotency-Key and x-idempotency-key must be the same when both are sent', {
    param: 'Idempotency-Key',
  }),
  transactionIdReused: refusal('transaction_id_reused', 'conflict', 'transactionId already used with different parameters', { param: 'transactionId' }),

  // The sandbox's mock providers.
  paymentNotFound: refusal('payment_not_found', 'not_found', 'Payment not found'),
  paymentAlreadyDecided: refusal(
    'payment_already_decided',
    'conflict',
    (paymentId: string, status: string) => `Mock payment ${paymentId} is already ${status}`,
    ['paymentId', 'status'],
  ),
  payoutAlreadyDecided: refusal('payout_already_decided', 'conflict', (paymentId: string, status: string) => `Mock payout ${paymentId} is already ${status}`, [
    'payoutId',
    'status',
  ]),
} as const;

/** What an amount in the field `field` is refused for: codes shared by every field, the messages and `param` naming it. */
function amountRefusals(field: string) {
  const naming = (message: string) => message.replace(/^amount\b/, field);
  const param = { param: field };
  return {
    amountNotANumber: refusal('amount_not_a_number', 'invalid', naming('amount must be a number'), param),
    amountNotPositive: refusal('amount_not_positive', 'invalid', 'Amount must be greater than 0', param),
    amountTooPrecise: refusal('amount_too_precise', 'invalid', naming(`amount must have at most ${MONEY_DECIMALS} decimal places`), param),
    amountTooLarge: refusal('amount_too_large', 'invalid', naming(`amount must have at most ${MAX_INTEGER_DIGITS} integer digits`), param),
    amountImpreciseNumber: refusal(
      'amount_imprecise_number',
      'invalid',
      naming(`amount has more than ${MAX_EXACT_NUMBER_DIGITS} significant digits: send it as a decimal string`),
      param,
    ),
  };
}

export type AmountRefusals = ReturnType<typeof amountRefusals>;

const amountRefusalsByField = new Map<string, AmountRefusals>();

/** The amount refusals of the field `field` (`amount`'s are LEDGER_REFUSALS' own). */
export function amountRefusalsFor(field: string): AmountRefusals {
  if (field === 'amount') return LEDGER_REFUSALS;
  let found = amountRefusalsByField.get(field);
  if (!found) {
    found = amountRefusals(field);
    amountRefusalsByField.set(field, found);
  }
  return found;
}

/** What an amount in the field `field` is refused for, for a route's `refuses`. */
export const amountRefusalList = (field = 'amount'): Refusal<string[]>[] => {
  const all = amountRefusalsFor(field);
  // `amount`'s are LEDGER_REFUSALS' own, among the ledger's other refusals: only the amount rules.
  return [all.amountNotANumber, all.amountNotPositive, all.amountTooPrecise, all.amountTooLarge, all.amountImpreciseNumber];
};

/** What an amount in `amount` is refused for, for a route's `refuses` (cards' amounts too). */
export const AMOUNT_REFUSALS = amountRefusalList('amount');

/** The refusals a payout refused by a rule keeps under its transactionId (older records kept no code: known by their message). */
const KEPT_PAYOUT_REFUSALS: Refusal<string[]>[] = [
  LEDGER_REFUSALS.insufficientBalance,
  LEDGER_REFUSALS.amountExceedsMaximum,
  LEDGER_REFUSALS.dailyLimitExceeded,
];

/** A payout refusal kept under its transactionId, made again for the retry that gets it. */
export function keptRefusal(kept: { error: string; code?: string | null }): DomainError {
  const known = KEPT_PAYOUT_REFUSALS.find((r) => r.code === kept.code) ?? KEPT_PAYOUT_REFUSALS.find((r) => matches(r.template, kept.error));
  return new DomainError('invalid', kept.error, known?.code ?? kept.code ?? undefined, known?.param);
}

/** Whether a message is one the template makes (each `<name>` standing for any text). */
function matches(template: string, message: string): boolean {
  const pattern = template
    .split(/<[^>]+>/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.+');
  return new RegExp(`^${pattern}$`).test(message);
}
