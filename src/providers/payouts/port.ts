/** The payout provider port: sends funds to an external bank account, asynchronously. */
export interface PayoutRequest {
  /** Our transaction uuid (the request's transactionId): the provider's idempotency key. */
  transactionId: string;
  amount: string;
  asset: string;
  description: string | null;
  source: { metadata: Record<string, unknown> };
  destination: {
    accountNumber: string;
    accountType: 'H' | 'C';
    bankName?: string;
    bankNumber?: string;
    ownerName: string;
    ownerDocumentType: string;
    ownerDocumentNumber: string;
  };
}

export interface AcceptedPayout {
  paymentId: string;
  /** PENDING or PROCESSING: acceptance is not settlement. */
  status: 'PENDING' | 'PROCESSING';
}

export type PayoutOutcome = 'settled' | 'failed';

export interface PayoutWebhookEvent {
  eventId: string;
  paymentId: string;
  transactionId: string;
  outcome: PayoutOutcome;
  reason: string | null;
  occurredAt: string;
}

export interface PayoutProvider {
  readonly name: string;
  /** Throws ProviderError on failure or timeout. Idempotent by transactionId. */
  submitPayout(request: PayoutRequest): Promise<AcceptedPayout>;
  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): PayoutWebhookEvent;
}
