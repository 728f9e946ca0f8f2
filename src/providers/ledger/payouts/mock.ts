import type { SandboxWebhookOptions } from '../../delivery';
import { isObject, objectAt, stringAt } from '../../json';
import { ProviderError } from '../../errors';
import { ISO_FORMAT, isAssetCode, isNonEmptyString, isPositiveDecimal, isUuid, type MockKind, MockProviderTable } from '../payments/mock-common';
import { randomId } from '../../random-id';
import { type AcceptedPayout, type PayoutOutcome, type PayoutProvider, PayoutRefused, type PayoutRequest, type PayoutWebhookEvent } from './port';

/**
 * The mock payout provider. It simulates an external party: its payouts live in its own table (not
 * in our event log), a tester (the sandbox routes) settles or fails them, and it reports the result
 * by POSTing a signed webhook over real HTTP to the service, as a real provider would. It accepts
 * any `source.metadata` object. `setAvailability(false)` makes it refuse every submission, so the
 * service's provider-failure path can be exercised.
 */
export const PAYOUT_OUTCOMES = ['settled', 'failed'] as const satisfies readonly PayoutOutcome[];
export type MockPayoutStatus = 'processing' | PayoutOutcome;

/** The reason a failed payout reports when the tester gives none. */
export const DEFAULT_FAILURE_REASON = 'destination_account_rejected';

export function isPayoutOutcome(value: unknown): value is PayoutOutcome {
  return typeof value === 'string' && (PAYOUT_OUTCOMES as readonly string[]).includes(value);
}

export type MockPayoutOptions = SandboxWebhookOptions;

/** A payout as the mock provider keeps it. Timestamps are ISO 8601 UTC. */
export interface MockPayout {
  paymentId: string;
  transactionId: string;
  /** Decimal string in `asset`, as submitted. */
  amount: string;
  asset: string;
  description: string | null;
  source: { metadata: Record<string, unknown> };
  destination: PayoutRequest['destination'];
  status: MockPayoutStatus;
  /** Why it failed; null otherwise. */
  reason: string | null;
  createdAt: string;
  decidedAt: string | null;
  /** The id of the last webhook sent for the result; null while processing. */
  lastEventId: string | null;
}

/** The JSON body the mock POSTs to the webhook URL. */
export interface MockPayoutWebhookBody {
  id: string;
  type: `payout.${PayoutOutcome}`;
  createdAt: string;
  data: { paymentId: string; transactionId: string; reason: string | null };
}

export class MockPayoutNotFoundError extends ProviderError {
  constructor(paymentId: string) {
    super(`Mock payout not found: ${paymentId}`, PROVIDER);
    this.name = 'MockPayoutNotFoundError';
  }
}

/** A decided payout asked for another outcome (the route can answer 409). */
export class MockPayoutConflictError extends ProviderError {
  constructor(
    readonly paymentId: string,
    readonly status: MockPayoutStatus,
  ) {
    super(`Mock payout ${paymentId} is already ${status}`, PROVIDER);
    this.name = 'MockPayoutConflictError';
  }
}

const PROVIDER = 'mock';
const TABLE = 'sandbox_payouts';
const COLUMNS = `payment_id, transaction_id::text AS transaction_id, amount::text AS amount, asset, description, source, destination, status, reason,
  to_char(created_at AT TIME ZONE 'UTC', ${ISO_FORMAT}) AS created_at, to_char(decided_at AT TIME ZONE 'UTC', ${ISO_FORMAT}) AS decided_at,
  last_event_id`;

interface PayoutRow {
  payment_id: string;
  transaction_id: string;
  amount: string;
  asset: string;
  description: string | null;
  source: unknown;
  destination: unknown;
  status: string;
  reason: string | null;
  created_at: string;
  decided_at: string | null;
  last_event_id: string | null;
}

function statusFrom(value: string): MockPayoutStatus {
  if (value === 'processing' || isPayoutOutcome(value)) return value;
  throw new ProviderError(`Mock payout has an unknown status: ${value}`, PROVIDER);
}

/** The destination's known fields only: optional ones are kept when they are strings. */
function destinationFrom(value: unknown): PayoutRequest['destination'] {
  const accountType = stringAt(value, 'accountType') === 'C' ? 'C' : 'H';
  const bankName = stringAt(value, 'bankName');
  const bankNumber = stringAt(value, 'bankNumber');
  return {
    accountNumber: stringAt(value, 'accountNumber') ?? '',
    accountType,
    ...(bankName === null ? {} : { bankName }),
    ...(bankNumber === null ? {} : { bankNumber }),
    ownerName: stringAt(value, 'ownerName') ?? '',
    ownerDocumentType: stringAt(value, 'ownerDocumentType') ?? '',
    ownerDocumentNumber: stringAt(value, 'ownerDocumentNumber') ?? '',
  };
}

function toPayout(row: PayoutRow): MockPayout {
  const metadata = objectAt(row.source, 'metadata');
  return {
    paymentId: row.payment_id,
    transactionId: row.transaction_id,
    amount: row.amount,
    asset: row.asset,
    description: row.description,
    source: { metadata: metadata ?? {} },
    destination: destinationFrom(row.destination),
    status: statusFrom(row.status),
    reason: row.reason,
    createdAt: row.created_at,
    decidedAt: row.decided_at,
    lastEventId: row.last_event_id,
  };
}

function checkRequest(request: PayoutRequest): void {
  const d: unknown = request.destination;
  const problem = !isUuid(request.transactionId)
    ? 'transactionId must be a UUID'
    : !isPositiveDecimal(request.amount)
      ? 'amount must be a positive decimal string'
      : !isAssetCode(request.asset)
        ? 'asset must be an upper-case asset code'
        : request.description !== null && typeof request.description !== 'string'
          ? 'description must be a string or null'
          : !isObject(request.source) || !isObject(request.source.metadata)
            ? 'source.metadata must be an object'
            : !isObject(d) ||
                !isNonEmptyString(d.accountNumber) ||
                !isNonEmptyString(d.ownerName) ||
                !isNonEmptyString(d.ownerDocumentType) ||
                !isNonEmptyString(d.ownerDocumentNumber)
              ? 'destination.accountNumber, ownerName, ownerDocumentType and ownerDocumentNumber are required'
              : d.accountType !== 'H' && d.accountType !== 'C'
                ? 'destination.accountType must be H or C'
                : null;
  if (problem !== null) throw new PayoutRefused(`Mock payout refused: ${problem}`, PROVIDER);
}

const KIND: MockKind<PayoutRow, MockPayout> = {
  label: 'Mock payout',
  userAgent: 'tally-mock-payouts/1',
  table: TABLE,
  columns: COLUMNS,
  toItem: toPayout,
  notFound: (paymentId) => new MockPayoutNotFoundError(paymentId),
};

export class MockPayoutProvider extends MockProviderTable<PayoutRow, MockPayout> implements PayoutProvider {
  private available = true;

  constructor(options: MockPayoutOptions) {
    super(options, KIND);
  }

  async prepare(): Promise<void> {
    await this.prepareTable(`
        payment_id text PRIMARY KEY,
        transaction_id uuid NOT NULL UNIQUE,
        amount numeric NOT NULL CHECK (amount > 0),
        asset text NOT NULL,
        description text,
        source jsonb NOT NULL DEFAULT '{}'::jsonb,
        destination jsonb NOT NULL,
        status text NOT NULL CHECK (status IN ('processing', 'settled', 'failed')),
        reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        decided_at timestamptz,
        last_event_id text,
        last_event text`);
  }

  /**
   * Test switch, in this process only: while down, submitPayout throws ProviderError
   * ('provider unavailable') and records nothing, as an unreachable provider would.
   */
  setAvailability(up: boolean): void {
    this.available = up;
  }

  isAvailable(): boolean {
    return this.available;
  }

  /**
   * Accepts the payout (status PROCESSING), or answers the one already accepted for this
   * transactionId with the same paymentId. Reusing a transactionId with another amount or asset is
   * refused (PayoutRefused).
   */
  async submitPayout(request: PayoutRequest): Promise<AcceptedPayout> {
    if (!this.available) throw new ProviderError('provider unavailable', PROVIDER);
    checkRequest(request);
    const source = JSON.stringify({ metadata: request.source.metadata });
    const destination = JSON.stringify(destinationFrom(request.destination));
    const payout = await this.createOnce(
      request.transactionId,
      {
        columns: 'payment_id, transaction_id, amount, asset, description, source, destination, status',
        values: `$1, $2, $3::numeric, $4, $5, $6::jsonb, $7::jsonb, 'processing'`,
        params: [randomId('po_mock_'), request.transactionId, request.amount, request.asset, request.description, source, destination],
      },
      { condition: 'amount = $2::numeric AND asset = $3', params: [request.amount, request.asset] },
      () => new PayoutRefused(`Mock payout refused: transactionId ${request.transactionId} was already used with another amount or asset`, PROVIDER),
    );
    // Acceptance is what is answered, even when a replay finds the payout already settled or failed.
    return { paymentId: payout.paymentId, status: 'PROCESSING' };
  }

  /** The payout, or null when unknown. */
  findPayout(paymentId: string): Promise<MockPayout | null> {
    return this.find(paymentId);
  }

  /**
   * Settles or fails the payout, then delivers the signed webhook. Resolves with the delivered event
   * id. `reason` defaults to DEFAULT_FAILURE_REASON for a failure and to null for a settlement.
   * The same outcome again changes nothing (the first reason stays) and re-delivers under a NEW event
   * id; another outcome once decided throws MockPayoutConflictError; an unknown payout
   * MockPayoutNotFoundError. When the receiver never accepts the webhook this throws ProviderError,
   * and the result stays recorded.
   */
  async decide(paymentId: string, outcome: PayoutOutcome, reason?: string | null): Promise<string> {
    if (!isPayoutOutcome(outcome)) throw new Error(`outcome must be one of ${PAYOUT_OUTCOMES.join(', ')}`);
    const given = typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : null;
    const why = given ?? (outcome === 'failed' ? DEFAULT_FAILURE_REASON : null);
    return this.decideAndDeliver(paymentId, async (tx, current) => {
      if (current.status !== 'processing' && current.status !== outcome) throw new MockPayoutConflictError(paymentId, current.status);
      const firstDecision = current.status === 'processing';
      const body: MockPayoutWebhookBody = {
        id: randomId('evt_po_'),
        type: `payout.${outcome}`,
        createdAt: new Date().toISOString(),
        data: { paymentId: current.paymentId, transactionId: current.transactionId, reason: firstDecision ? why : current.reason },
      };
      // decided_at and the reason keep the first decision's; the last event is what redeliver() sends.
      await tx.query(
        `UPDATE ${TABLE} SET status = $2, reason = CASE WHEN status = 'processing' THEN $3 ELSE reason END,
           decided_at = COALESCE(decided_at, now()), last_event_id = $4, last_event = $5 WHERE payment_id = $1`,
        [paymentId, outcome, why, body.id, JSON.stringify(body)],
      );
      return body;
    });
  }

  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): PayoutWebhookEvent {
    const envelope = this.envelope(rawBody, headers);
    const outcome = envelope.type === 'payout.settled' ? 'settled' : envelope.type === 'payout.failed' ? 'failed' : null;
    const reason = envelope.data === null ? undefined : envelope.data.reason;
    if (outcome === null || (reason !== undefined && reason !== null && typeof reason !== 'string'))
      throw new ProviderError('Malformed mock payout webhook', PROVIDER);
    const { eventId, paymentId, transactionId, occurredAt } = envelope;
    return { eventId, paymentId, transactionId, outcome, reason: typeof reason === 'string' ? reason : null, occurredAt };
  }
}
