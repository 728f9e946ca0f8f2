import type { KycStatus } from '../../domain/identity/kyc-statuses';

/**
 * The identity provider port: who verifies a person's identity. Adapters: `sandbox` (in-process,
 * with a hosted page and signed webhooks over real HTTP) and `persona` (the shape of a real one).
 * Statuses are already mapped to the interface's KYC status values.
 */
export interface InquiryPrefill {
  firstName?: string;
  lastName?: string;
  email?: string;
  phone?: string;
  /** YYYY-MM-DD */
  birthDate?: string;
  /** ISO 3166-1 alpha-2 of the identity document, when known. */
  country?: string;
}

export interface KycDocument {
  issuingCountry: string | null;
  type: string | null;
  issuedDate: string | null;
  idNumber: string | null;
  expiryDate: string | null;
  imageFront: string | null;
  imageBack: string | null;
}

export interface InquirySnapshot {
  inquiryId: string;
  /** Our user id, given to the provider as its reference id. */
  referenceId: string;
  status: KycStatus;
  riskLevel: string | null;
  riskScore: number | null;
  /** Reasons when declined/failed. */
  reasons: string[] | null;
  document: KycDocument | null;
  /** ISO 8601: when the provider last changed the inquiry. */
  updatedAt: string;
}

export interface CreatedInquiry {
  inquiryId: string;
  /** Absolute URL where the user completes the check. */
  verificationUrl: string;
  status: KycStatus;
}

/** A verified provider callback, reduced to what the service acts on. */
export interface IdentityWebhookEvent {
  /** The provider's event id: callbacks are deduplicated by it. */
  eventId: string;
  inquiryId: string;
  status: KycStatus;
  /** ISO 8601 */
  occurredAt: string;
  snapshot: InquirySnapshot | null;
}

export interface IdentityProvider {
  readonly name: string;
  /** Throws ProviderError on failure or timeout; nothing is created on our side then. */
  createInquiry(input: { referenceId: string; prefill: InquiryPrefill }): Promise<CreatedInquiry>;
  /** Throws ProviderError on failure or timeout. */
  getInquiry(inquiryId: string): Promise<InquirySnapshot>;
  /** Verifies the signature over the raw body (throws WebhookSignatureError) and parses the event. */
  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): IdentityWebhookEvent;
}
