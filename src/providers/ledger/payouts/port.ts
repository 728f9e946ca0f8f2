import { ProviderError } from '../../errors';

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
  /**
   * Idempotent by transactionId. Throws PayoutRefused when the provider answered that it will not
   * make this payout (nothing will be paid); any other error (unreachable, timed out, an answer not
   * understood) leaves it unknown whether the provider took it.
   */
  submitPayout(request: PayoutRequest): Promise<AcceptedPayout>;
  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): PayoutWebhookEvent;
}

/** The provider's definite no: it will not make this payout, so the held funds can go back. */
export class PayoutRefused extends ProviderError {
  constructor(message: string, provider: string) {
    super(message, provider);
    this.name = 'PayoutRefused';
  }
}
