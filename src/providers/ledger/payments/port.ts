/**
 * The payment provider port: hosted payment links for deposits. The `mock` adapter serves its own
 * hosted page and confirms or fails through a signed webhook, as a real provider would.
 * Amounts are decimal strings (never floats).
 */
export interface PaymentRequest {
  /** Our ledger transaction uuid: the provider's idempotency key, and how its callbacks name it. */
  transactionId: string;
  amount: string;
  currency: string;
  description: string;
  payer: { documentType: string; documentNumber: string };
}

export interface CreatedPayment {
  /** The provider's payment id. */
  paymentId: string;
  /** Path of the hosted page, relative to the service's base URL: /api/pay/<paymentId>?... */
  paymentLink: string;
}

export type PaymentOutcome = 'confirmed' | 'failed';

/** A verified provider callback. */
export interface PaymentWebhookEvent {
  eventId: string;
  paymentId: string;
  transactionId: string;
  outcome: PaymentOutcome;
  /** Decimal string the provider says was paid. */
  amount: string;
  currency: string;
  occurredAt: string;
}

export interface PaymentProvider {
  readonly name: string;
  /** Throws ProviderError (from ../identity/port) on failure or timeout. Idempotent by transactionId. */
  createPayment(request: PaymentRequest): Promise<CreatedPayment>;
  /** Verifies the signature over the raw body (throws WebhookSignatureError) and parses the event. */
  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): PaymentWebhookEvent;
}
