import type { SandboxWebhookOptions } from '../../delivery';
import { isObject, stringAt } from '../../json';
import { ProviderError } from '../../errors';
import { ISO_FORMAT, isAssetCode, isNonEmptyString, isPositiveDecimal, isUuid, type MockKind, MockProviderTable } from './mock-common';
import { randomId } from '../../random-id';
import type { CreatedPayment, PaymentOutcome, PaymentProvider, PaymentRequest, PaymentWebhookEvent } from './port';

/**
 * The mock payment provider. It simulates an external party: its payments live in its own table
 * (not in our event log), its hosted page (/api/pay/<paymentId>) lets the payer pay or cancel, and it
 * reports the decision by POSTing a signed webhook over real HTTP to the service, as a real provider
 * would. It may report a decision more than once (see `decide` and `redeliver`): the service credits
 * a deposit once whatever the number of callbacks.
 */
export const PAYMENT_OUTCOMES = ['confirmed', 'failed'] as const satisfies readonly PaymentOutcome[];
export type MockPaymentStatus = 'pending' | PaymentOutcome;

export function isPaymentOutcome(value: unknown): value is PaymentOutcome {
  return typeof value === 'string' && (PAYMENT_OUTCOMES as readonly string[]).includes(value);
}

export type MockPaymentOptions = SandboxWebhookOptions;

/** A payment as the mock provider keeps it. Timestamps are ISO 8601 UTC. */
export interface MockPayment {
  paymentId: string;
  transactionId: string;
  /** Decimal string, as the payment was created with. */
  amount: string;
  currency: string;
  description: string;
  payer: { documentType: string; documentNumber: string };
  status: MockPaymentStatus;
  createdAt: string;
  decidedAt: string | null;
  /** The id of the last webhook sent for the decision; null while pending. */
  lastEventId: string | null;
}

/** The JSON body the mock POSTs to the webhook URL. */
export interface MockPaymentWebhookBody {
  id: string;
  type: `payment.${PaymentOutcome}`;
  createdAt: string;
  data: { paymentId: string; transactionId: string; amount: string; currency: string };
}

export class MockPaymentNotFoundError extends ProviderError {
  constructor(paymentId: string) {
    super(`Mock payment not found: ${paymentId}`, PROVIDER);
    this.name = 'MockPaymentNotFoundError';
  }
}

/** A decided payment asked for another outcome (the route can answer 409). */
export class MockPaymentConflictError extends ProviderError {
  constructor(
    readonly paymentId: string,
    readonly status: MockPaymentStatus,
  ) {
    super(`Mock payment ${paymentId} is already ${status}`, PROVIDER);
    this.name = 'MockPaymentConflictError';
  }
}

const PROVIDER = 'mock';
const TABLE = 'sandbox_payments';
const COLUMNS = `payment_id, transaction_id::text AS transaction_id, amount::text AS amount, currency, description, payer, status,
  to_char(created_at AT TIME ZONE 'UTC', ${ISO_FORMAT}) AS created_at, to_char(decided_at AT TIME ZONE 'UTC', ${ISO_FORMAT}) AS decided_at,
  last_event_id`;

interface PaymentRow {
  payment_id: string;
  transaction_id: string;
  amount: string;
  currency: string;
  description: string;
  payer: unknown;
  status: string;
  created_at: string;
  decided_at: string | null;
  last_event_id: string | null;
}

function statusFrom(value: string): MockPaymentStatus {
  if (value === 'pending' || isPaymentOutcome(value)) return value;
  throw new ProviderError(`Mock payment has an unknown status: ${value}`, PROVIDER);
}

function toPayment(row: PaymentRow): MockPayment {
  return {
    paymentId: row.payment_id,
    transactionId: row.transaction_id,
    amount: row.amount,
    currency: row.currency,
    description: row.description,
    payer: { documentType: stringAt(row.payer, 'documentType') ?? '', documentNumber: stringAt(row.payer, 'documentNumber') ?? '' },
    status: statusFrom(row.status),
    createdAt: row.created_at,
    decidedAt: row.decided_at,
    lastEventId: row.last_event_id,
  };
}

/** `/api/pay/<paymentId>?transactionId=<uuid>&amount=<amount>&currency=<currency>`, each part URL-encoded. */
export function paymentLinkFor(payment: Pick<MockPayment, 'paymentId' | 'transactionId' | 'amount' | 'currency'>): string {
  const query = [
    `transactionId=${encodeURIComponent(payment.transactionId)}`,
    `amount=${encodeURIComponent(payment.amount)}`,
    `currency=${encodeURIComponent(payment.currency)}`,
  ].join('&');
  return `/api/pay/${encodeURIComponent(payment.paymentId)}?${query}`;
}

function checkRequest(request: PaymentRequest): void {
  const problem = !isUuid(request.transactionId)
    ? 'transactionId must be a UUID'
    : !isPositiveDecimal(request.amount)
      ? 'amount must be a positive decimal string'
      : !isAssetCode(request.currency)
        ? 'currency must be an upper-case asset code'
        : typeof request.description !== 'string'
          ? 'description must be a string'
          : !isObject(request.payer) || !isNonEmptyString(request.payer.documentType) || !isNonEmptyString(request.payer.documentNumber)
            ? 'payer.documentType and payer.documentNumber are required'
            : null;
  if (problem !== null) throw new ProviderError(`Mock payment refused: ${problem}`, PROVIDER);
}

const KIND: MockKind<PaymentRow, MockPayment> = {
  label: 'Mock payment',
  userAgent: 'tally-mock-payments/1',
  table: TABLE,
  columns: COLUMNS,
  toItem: toPayment,
  notFound: (paymentId) => new MockPaymentNotFoundError(paymentId),
};

export class MockPaymentProvider extends MockProviderTable<PaymentRow, MockPayment> implements PaymentProvider {
  constructor(options: MockPaymentOptions) {
    super(options, KIND);
  }

  async prepare(): Promise<void> {
    await this.prepareTable(`
        payment_id text PRIMARY KEY,
        transaction_id uuid NOT NULL UNIQUE,
        amount numeric NOT NULL CHECK (amount > 0),
        currency text NOT NULL,
        description text NOT NULL,
        payer jsonb NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
        created_at timestamptz NOT NULL DEFAULT now(),
        decided_at timestamptz,
        last_event_id text,
        last_event text`);
  }

  /**
   * Creates the payment, or returns the one already created for this transactionId (same paymentId
   * and link). Reusing a transactionId with another amount or currency is refused (ProviderError).
   */
  async createPayment(request: PaymentRequest): Promise<CreatedPayment> {
    checkRequest(request);
    const payer = JSON.stringify({ documentType: request.payer.documentType, documentNumber: request.payer.documentNumber });
    const payment = await this.createOnce(
      request.transactionId,
      {
        columns: 'payment_id, transaction_id, amount, currency, description, payer, status',
        values: `$1, $2, $3::numeric, $4, $5, $6::jsonb, 'pending'`,
        params: [randomId('pay_mock_'), request.transactionId, request.amount, request.currency, request.description, payer],
      },
      { condition: 'amount = $2::numeric AND currency = $3', params: [request.amount, request.currency] },
      () => new ProviderError(`Mock payment refused: transactionId ${request.transactionId} was already used with another amount or currency`, PROVIDER),
    );
    return { paymentId: payment.paymentId, paymentLink: paymentLinkFor(payment) };
  }

  /** The payment (for the hosted page), or null when unknown. */
  findPayment(paymentId: string): Promise<MockPayment | null> {
    return this.find(paymentId);
  }

  /**
   * Decides the payment, then delivers the signed webhook. Resolves with the delivered event id.
   * Deciding the same outcome again changes nothing and re-delivers under a NEW event id (a real
   * provider may do that: the service dedupes by state). Another outcome once decided throws
   * MockPaymentConflictError; an unknown payment MockPaymentNotFoundError. When the receiver never
   * accepts the webhook this throws ProviderError, and the decision stays recorded.
   */
  async decide(paymentId: string, outcome: PaymentOutcome): Promise<string> {
    if (!isPaymentOutcome(outcome)) throw new Error(`outcome must be one of ${PAYMENT_OUTCOMES.join(', ')}`);
    return this.decideAndDeliver(paymentId, async (tx, current) => {
      if (current.status !== 'pending' && current.status !== outcome) throw new MockPaymentConflictError(paymentId, current.status);
      const body: MockPaymentWebhookBody = {
        id: randomId('evt_pay_'),
        type: `payment.${outcome}`,
        createdAt: new Date().toISOString(),
        data: { paymentId: current.paymentId, transactionId: current.transactionId, amount: current.amount, currency: current.currency },
      };
      // decided_at keeps the first decision's time; the last event is what redeliver() sends.
      await tx.query(`UPDATE ${TABLE} SET status = $2, decided_at = COALESCE(decided_at, now()), last_event_id = $3, last_event = $4 WHERE payment_id = $1`, [
        paymentId,
        outcome,
        body.id,
        JSON.stringify(body),
      ]);
      return body;
    });
  }

  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): PaymentWebhookEvent {
    const envelope = this.envelope(rawBody, headers);
    const outcome = envelope.type === 'payment.confirmed' ? 'confirmed' : envelope.type === 'payment.failed' ? 'failed' : null;
    const amount = stringAt(envelope.data, 'amount');
    const currency = stringAt(envelope.data, 'currency');
    if (outcome === null || !isPositiveDecimal(amount) || !isNonEmptyString(currency)) throw new ProviderError('Malformed mock payment webhook', PROVIDER);
    const { eventId, paymentId, transactionId, occurredAt } = envelope;
    return { eventId, paymentId, transactionId, outcome, amount, currency, occurredAt };
  }
}
