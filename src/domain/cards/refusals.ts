import { refusal } from '../../platform/refusals';
import { MONEY_DECIMALS } from '../ledger';
import { LIMIT_FREQUENCIES } from './limit-frequencies';

/** A move or read the card's status forbids: one code, the action named in the message (docs/decisions.md, card rows of "Errors"). */
const cardStatusForbids = (action: string) =>
  refusal('card_status_forbids', 'conflict', (status: string) => `Cannot ${action} a card in status ${status}`, ['status']);

/** A settlement of a card transaction that is no longer pending. */
const transactionStatusForbids = (action: string) =>
  refusal('card_transaction_status_forbids', 'conflict', (status: string) => `Cannot ${action} a card transaction in status ${status}`, ['status']);

/**
 * The card capability's refusals: each its stable code, kind (hence status) and exact message.
 * The deciders throw them, the routes name the ones they answer (`refuses`), the reference documents them.
 */
export const CARD_REFUSALS = {
  // Applications.
  termsNotAccepted: refusal('terms_not_accepted', 'invalid', 'isTermsOfServiceAccepted must be true', { param: 'isTermsOfServiceAccepted' }),
  kycNotApproved: refusal('kyc_not_approved', 'forbidden', 'KYC must be approved to apply for a card'),
  applicationExists: refusal('card_application_exists', 'conflict', (status: string) => `Card application already exists with status: ${status}`, ['status']),
  profileIncomplete: refusal(
    'profile_incomplete_for_card',
    'unprocessable',
    (fields: string) => `PersonalProfile is missing fields required for a card: ${fields}`,
    ['fields'],
  ),
  applicationNotFound: refusal('card_application_not_found', 'not_found', 'Card application not found'),
  applicationNotApproved: refusal('card_application_not_approved', 'conflict', (status: string) => `Card application is ${status}`, ['status']),
  /** The sandbox issuer asked to decide an application it decided otherwise. */
  applicationAlreadyDecided: refusal(
    'card_application_already_decided',
    'conflict',
    (applicationId: string, status: string) => `Card application ${applicationId} is already ${status}`,
    ['applicationId', 'status'],
  ),

  // The card.
  cardNotFound: refusal('card_not_found', 'not_found', 'Card not found'),
  cardNotOwned: refusal('card_not_owned', 'forbidden', 'Card does not belong to the authenticated user'),
  cardAlreadyIssued: refusal('card_already_issued', 'conflict', 'Card already issued'),
  activateForbidden: cardStatusForbids('activate'),
  lockForbidden: cardStatusForbids('lock'),
  unlockForbidden: cardStatusForbids('unlock'),
  cancelForbidden: cardStatusForbids('cancel'),
  limitForbidden: cardStatusForbids('update the limit of'),
  pinSetForbidden: cardStatusForbids('set the PIN of'),
  pinRevealForbidden: cardStatusForbids('reveal the PIN of'),
  secretsRevealForbidden: cardStatusForbids('reveal the secrets of'),
  invalidPin: refusal('invalid_pin', 'invalid', 'pin must be exactly 4 digits', { param: 'pin' }),

  // The spending limit.
  invalidLimitFrequency: refusal('invalid_limit_frequency', 'invalid', `frequency must be one of ${LIMIT_FREQUENCIES.join(', ')}`, { param: 'frequency' }),
  amountNotPositive: refusal('amount_not_positive', 'invalid', 'Amount must be greater than 0', { param: 'amount' }),
  amountTooPrecise: refusal('amount_too_precise', 'invalid', `amount must have at most ${MONEY_DECIMALS} decimal places`, { param: 'amount' }),
  amountTooLarge: refusal('amount_too_large', 'invalid', 'amount is too large', { param: 'amount' }),
  invalidAmount: refusal('invalid_amount', 'invalid', 'amount must be a number', { param: 'amount' }),

  // Card transactions.
  transactionNotFound: refusal('card_transaction_not_found', 'not_found', 'Card transaction not found'),
  clearForbidden: transactionStatusForbids('clear'),
  reverseForbidden: transactionStatusForbids('reverse'),

  // Keyed card calls.
  idempotencyKeyReused: refusal('idempotency_key_reused', 'unprocessable', 'Idempotency key reused with different parameters'),
} as const;

/** The card actions whose status rule is one refusal each (CARD_ACTIONS, and the limit, PIN and reveals). */
export const CARD_STATUS_REFUSALS = {
  activate: CARD_REFUSALS.activateForbidden,
  lock: CARD_REFUSALS.lockForbidden,
  unlock: CARD_REFUSALS.unlockForbidden,
  cancel: CARD_REFUSALS.cancelForbidden,
  limit: CARD_REFUSALS.limitForbidden,
  setPin: CARD_REFUSALS.pinSetForbidden,
  revealPin: CARD_REFUSALS.pinRevealForbidden,
  revealSecrets: CARD_REFUSALS.secretsRevealForbidden,
} as const;
export type CardStatusRule = keyof typeof CARD_STATUS_REFUSALS;
