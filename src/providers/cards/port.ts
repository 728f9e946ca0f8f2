import type { ApplicationStatus, CardType } from '../../domain/cards/application';
import type { CardLimit } from '../../domain/cards/limit';

/**
 * The card issuer port: who decides card applications, issues card numbers and keeps the card's
 * secrets (number, CVC, PIN). Our event log never holds those: it keeps last4, the expiry and the
 * issuer's reference, and the secrets are read from the issuer when a user asks for them.
 * Adapters: `sandbox` (in-process, secrets sealed in its own table, decisions by signed webhook)
 * and `rain` (the shape of a real issuer).
 */
export interface IssuerApplicationRequest {
  /** Our application id: the issuer's reference, so a retried submission makes one application. */
  applicationId: string;
  userId: string;
  cardType: CardType;
  walletAddress: string | null;
  solanaAddress: string | null;
  tronAddress: string | null;
  chainId: string | null;
  contractAddress: string | null;
  /** The identity provider's share token, when the issuer reads identity from there (single use, never stored). */
  identityShareToken: string | null;
  sourceKey: string;
  ipAddress: string | null;
  occupation: string;
  annualSalary: string;
  accountPurpose: string;
  expectedMonthlyVolume: string;
  isTermsOfServiceAccepted: boolean;
}

/** The issuer's view of an application, its status word mapped to ours. */
export interface IssuerApplication {
  issuerApplicationId: string;
  /** The issuer's own word (statusSummary.external). */
  externalStatus: string;
  status: ApplicationStatus;
  reason: string | null;
}

export interface IssuedCard {
  /** The issuer's card id: what secrets are fetched by. */
  reference: string;
  last4: string;
  /** Two digits each. */
  expirationMonth: string;
  expirationYear: string;
}

/** A card's secrets, in clear only in memory, on their way to the user who asked. */
export interface CardSecrets {
  cardNumber: string;
  cvc: string;
  expirationMonth: string;
  expirationYear: string;
}

/** A verified issuer callback about an application. */
export interface CardIssuerWebhookEvent {
  /** The issuer's event id: callbacks are deduplicated by it. */
  eventId: string;
  issuerApplicationId: string;
  externalStatus: string;
  status: ApplicationStatus;
  reason: string | null;
  /** ISO 8601 */
  occurredAt: string;
}

export interface CardIssuer {
  readonly name: string;
  /** Idempotent by applicationId. Throws ProviderError on failure or timeout: nothing is recorded then. */
  submitApplication(request: IssuerApplicationRequest): Promise<IssuerApplication>;
  getApplication(issuerApplicationId: string): Promise<IssuerApplication>;
  /** Idempotent by cardId. */
  issueCard(request: { cardId: string; userId: string; issuerApplicationId: string; type: CardType; limit: CardLimit }): Promise<IssuedCard>;
  /** The card's status or limit as the issuer enforces them. */
  updateCard(reference: string, change: { status?: 'active' | 'locked' | 'canceled'; limit?: CardLimit }): Promise<void>;
  revealSecrets(reference: string): Promise<CardSecrets>;
  /** Null while no PIN was set. */
  revealPin(reference: string): Promise<string | null>;
  setPin(reference: string, pin: string): Promise<void>;
  /** Verifies the signature over the raw body (throws WebhookSignatureError) and parses the event. */
  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): CardIssuerWebhookEvent;
}

/** Luhn's check digit for `digits` (the number without it). */
export function luhnCheckDigit(digits: string): string {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    // From the right, every second digit (starting with the one left of the check digit) is doubled.
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}

export const isLuhnValid = (pan: string): boolean => /^[0-9]{12,19}$/.test(pan) && luhnCheckDigit(pan.slice(0, -1)) === pan.slice(-1);

/** How a card number is shown outside its secrets read: its first six and last four digits. */
export const maskPan = (pan: string): string => `${pan.slice(0, 6)}${'*'.repeat(pan.length - 10)}${pan.slice(-4)}`;
