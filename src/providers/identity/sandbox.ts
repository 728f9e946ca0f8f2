import { createHash, randomBytes } from 'node:crypto';
import { KYC_STATUSES, type KycStatus } from '../../domain/identity/kyc-statuses';
import type { SqlQueryable } from '../../eventstore/sql';
import { deliveryFor, type SandboxWebhookOptions, throughStore, type WebhookDelivery } from '../delivery';
import { isObject, isoOrNull, objectAt, parseJson, stringArray, stringAt } from '../json';
import type { CreatedInquiry, IdentityProvider, IdentityWebhookEvent, InquiryPrefill, InquirySnapshot, KycDocument } from './port';
import { ProviderError } from '../errors';
import { currentUnixSeconds, DEFAULT_TOLERANCE_SECONDS, headerValue, verifySignature } from '../signature';

/**
 * The sandbox identity provider. It simulates an external party: its inquiries live in its own
 * table (not in our event log), its hosted page lets a tester decide the outcome, and it reports
 * decisions by POSTing a signed webhook over real HTTP to the service, exactly as a real provider would.
 */
export const SANDBOX_OUTCOMES = ['approved', 'declined', 'needs_review', 'failed', 'expired'] as const;
export type SandboxOutcome = (typeof SANDBOX_OUTCOMES)[number];

export function isSandboxOutcome(value: unknown): value is SandboxOutcome {
  return typeof value === 'string' && (SANDBOX_OUTCOMES as readonly string[]).includes(value);
}

export interface SandboxIdentityOptions extends SandboxWebhookOptions {
  /** Base of the links handed out (PUBLIC_BASE_URL), read per call so tests can bind a port late. */
  publicBaseUrl: () => string;
}

/** An inquiry as the sandbox keeps it: the snapshot plus what the hosted page shows. */
export interface SandboxInquiry extends InquirySnapshot {
  prefill: InquiryPrefill;
  createdAt: string;
}

/** The JSON body the sandbox POSTs to the webhook URL. */
export interface SandboxWebhookBody {
  id: string;
  type: `inquiry.${SandboxOutcome}`;
  createdAt: string;
  data: { inquiryId: string; referenceId: string; status: KycStatus; snapshot: InquirySnapshot };
}

export class SandboxInquiryNotFoundError extends ProviderError {
  constructor(inquiryId: string) {
    super(`Sandbox inquiry not found: ${inquiryId}`, 'sandbox');
    this.name = 'SandboxInquiryNotFoundError';
  }
}

/** A decided inquiry asked for another outcome (the route can answer 409). */
export class SandboxInquiryConflictError extends ProviderError {
  constructor(
    readonly inquiryId: string,
    readonly status: KycStatus,
  ) {
    super(`Sandbox inquiry ${inquiryId} is already ${status}`, 'sandbox');
    this.name = 'SandboxInquiryConflictError';
  }
}

const PROVIDER = 'sandbox';
const TABLE = 'sandbox_identity_inquiries';
const FINAL: readonly KycStatus[] = ['approved', 'declined', 'rejected', 'failed', 'expired'];
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
const COLUMNS = `inquiry_id, reference_id, status, prefill, risk_level, risk_score, reasons, document,
  to_char(created_at AT TIME ZONE 'UTC', ${ISO}) AS created_at, to_char(updated_at AT TIME ZONE 'UTC', ${ISO}) AS updated_at`;

interface InquiryRow {
  inquiry_id: string;
  reference_id: string;
  status: string;
  prefill: unknown;
  risk_level: string | null;
  risk_score: number | null;
  reasons: unknown;
  document: unknown;
  created_at: string;
  updated_at: string;
}

const PREFILL_KEYS = ['firstName', 'lastName', 'email', 'phone', 'birthDate'] as const;

function prefillFrom(value: unknown): InquiryPrefill {
  const prefill: InquiryPrefill = {};
  for (const key of PREFILL_KEYS) {
    const v = stringAt(value, key);
    if (v !== null) prefill[key] = v;
  }
  return prefill;
}

/**
 * What the sandbox keeps of a prefill: the port's fields, plus a `country` (ISO alpha-2) when the
 * caller's object carries one, so the simulated passport can show the right issuing country.
 */
function storedPrefill(prefill: InquiryPrefill): Record<string, string> {
  const country = stringAt(prefill, 'country');
  return { ...prefillFrom(prefill), ...(country !== null && /^[A-Z]{2}$/.test(country) ? { country } : {}) };
}

function documentFrom(value: unknown): KycDocument | null {
  if (!isObject(value)) return null;
  return {
    issuingCountry: stringAt(value, 'issuingCountry'),
    type: stringAt(value, 'type'),
    issuedDate: stringAt(value, 'issuedDate'),
    idNumber: stringAt(value, 'idNumber'),
    expiryDate: stringAt(value, 'expiryDate'),
    imageFront: stringAt(value, 'imageFront'),
    imageBack: stringAt(value, 'imageBack'),
  };
}

function statusFrom(value: string): KycStatus {
  const status = KYC_STATUSES.find((s) => s === value);
  if (status === undefined) throw new ProviderError(`Sandbox inquiry has an unknown status: ${value}`, PROVIDER);
  return status;
}

function toInquiry(row: InquiryRow): SandboxInquiry {
  return {
    inquiryId: row.inquiry_id,
    referenceId: row.reference_id,
    status: statusFrom(row.status),
    riskLevel: row.risk_level,
    riskScore: row.risk_score,
    reasons: stringArray(row.reasons),
    document: documentFrom(row.document),
    updatedAt: row.updated_at,
    prefill: prefillFrom(row.prefill),
    createdAt: row.created_at,
  };
}

function snapshotOf(inquiry: SandboxInquiry): InquirySnapshot {
  const { prefill: _prefill, createdAt: _createdAt, ...snapshot } = inquiry;
  return snapshot;
}

function randomId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

function isoDate(date: Date): string {
  return date.toISOString().slice(0, 10);
}

function yearsFrom(date: Date, years: number): Date {
  const shifted = new Date(date.getTime());
  shifted.setUTCFullYear(shifted.getUTCFullYear() + years);
  return shifted;
}

/** A plausible passport built from the prefill; `expired` for the document_expired decline. */
function sandboxDocument(inquiryId: string, prefill: Record<string, unknown>, baseUrl: string, now: Date, expired: boolean): KycDocument {
  // The port's prefill has no country field; see storedPrefill.
  const country = stringAt(prefill, 'country');
  const digits = BigInt(`0x${createHash('sha256').update(inquiryId).digest('hex').slice(0, 12)}`) % 100_000_000n;
  const issued = yearsFrom(now, expired ? -11 : -2);
  const images = `${baseUrl}/sandbox/identity/documents/${encodeURIComponent(inquiryId)}`;
  return {
    issuingCountry: country !== null && /^[A-Z]{2}$/.test(country) ? country : 'US',
    type: 'passport',
    idNumber: `S${digits.toString().padStart(8, '0')}`,
    issuedDate: isoDate(issued),
    expiryDate: isoDate(yearsFrom(issued, 10)),
    imageFront: `${images}/front`,
    imageBack: `${images}/back`,
  };
}

interface Decision {
  riskLevel: string | null;
  riskScore: number | null;
  reasons: string[] | null;
  document: KycDocument | null;
}

function decide(outcome: SandboxOutcome, inquiryId: string, prefill: unknown, baseUrl: string, now: Date): Decision {
  const raw = isObject(prefill) ? prefill : {};
  switch (outcome) {
    case 'approved':
      return { riskLevel: 'low', riskScore: 12, reasons: null, document: sandboxDocument(inquiryId, raw, baseUrl, now, false) };
    case 'needs_review':
      return { riskLevel: 'medium', riskScore: 48, reasons: null, document: sandboxDocument(inquiryId, raw, baseUrl, now, false) };
    case 'declined':
      return { riskLevel: 'high', riskScore: 87, reasons: ['document_expired'], document: sandboxDocument(inquiryId, raw, baseUrl, now, true) };
    case 'failed':
      return { riskLevel: 'high', riskScore: 91, reasons: ['selfie_mismatch'], document: null };
    case 'expired':
      return { riskLevel: null, riskScore: null, reasons: null, document: null };
  }
}

export class SandboxIdentityProvider implements IdentityProvider {
  readonly name = PROVIDER;
  private readonly nowSeconds: () => number;
  private readonly delivery: WebhookDelivery;

  constructor(private readonly options: SandboxIdentityOptions) {
    this.nowSeconds = options.nowSeconds ?? currentUnixSeconds;
    this.delivery = deliveryFor(
      { provider: PROVIDER, label: 'Sandbox identity', userAgent: 'tally-sandbox-identity/1' },
      { ...options, nowSeconds: this.nowSeconds },
    );
  }

  /** Creates the sandbox's own table. Idempotent; serialised so several nodes can start at once. */
  async prepare(): Promise<void> {
    await this.options.sql.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('tally.${TABLE}'))`);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (
        inquiry_id text PRIMARY KEY,
        reference_id text NOT NULL,
        status text NOT NULL,
        prefill jsonb NOT NULL DEFAULT '{}'::jsonb,
        risk_level text,
        risk_score integer,
        reasons jsonb,
        document jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
      await tx.query(`CREATE INDEX IF NOT EXISTS ${TABLE}_reference_idx ON ${TABLE} (reference_id, created_at DESC)`);
    });
  }

  /** Erasure: the prefill and the document read of the user's inquiries are dropped (`referenceId`: the user's id). */
  async forgetReference(referenceId: string): Promise<void> {
    await this.store(() =>
      this.options.sql.query(`UPDATE ${TABLE} SET prefill = '{}'::jsonb, document = NULL, updated_at = now() WHERE reference_id = $1`, [referenceId]),
    );
  }

  async createInquiry(input: { referenceId: string; prefill: InquiryPrefill }): Promise<CreatedInquiry> {
    if (!input.referenceId) throw new ProviderError('referenceId is required', PROVIDER);
    const inquiryId = randomId('inq_sandbox_');
    await this.store(() =>
      this.options.sql.query(`INSERT INTO ${TABLE} (inquiry_id, reference_id, status, prefill) VALUES ($1, $2, 'created', $3::jsonb)`, [
        inquiryId,
        input.referenceId,
        JSON.stringify(storedPrefill(input.prefill)),
      ]),
    );
    return { inquiryId, verificationUrl: `${this.baseUrl()}/sandbox/identity/inquiries/${inquiryId}`, status: 'created' };
  }

  async getInquiry(inquiryId: string): Promise<InquirySnapshot> {
    const inquiry = await this.findInquiry(inquiryId);
    if (inquiry === null) throw new SandboxInquiryNotFoundError(inquiryId);
    return snapshotOf(inquiry);
  }

  /** The inquiry with its prefill (for the hosted page), or null when unknown. */
  async findInquiry(inquiryId: string): Promise<SandboxInquiry | null> {
    const rows = await this.store(() => this.options.sql.query<InquiryRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE inquiry_id = $1`, [inquiryId]));
    return rows[0] === undefined ? null : toInquiry(rows[0]);
  }

  /**
   * The hosted page was opened: `created` becomes `pending`. No webhook is sent: opening a page (a GET)
   * must not depend on delivering a callback; the service sees `pending` when it re-reads the inquiry.
   */
  async markStarted(inquiryId: string): Promise<SandboxInquiry> {
    await this.store(() =>
      this.options.sql.query(`UPDATE ${TABLE} SET status = 'pending', updated_at = now() WHERE inquiry_id = $1 AND status = 'created'`, [inquiryId]),
    );
    const inquiry = await this.findInquiry(inquiryId);
    if (inquiry === null) throw new SandboxInquiryNotFoundError(inquiryId);
    return inquiry;
  }

  /**
   * Decides the inquiry, then delivers the signed webhook. Resolves with the delivered event id;
   * throws ProviderError when the receiver never accepted it (the decision stays recorded, as at a
   * real provider: calling again with the same outcome re-delivers it under a new event id).
   */
  async complete(inquiryId: string, outcome: SandboxOutcome): Promise<string> {
    if (!isSandboxOutcome(outcome)) throw new Error(`outcome must be one of ${SANDBOX_OUTCOMES.join(', ')}`);
    const inquiry = await this.store(() => this.options.sql.transaction((tx) => this.decideIn(tx, inquiryId, outcome)));
    const body: SandboxWebhookBody = {
      id: randomId('evt_sandbox_'),
      type: `inquiry.${outcome}`,
      createdAt: new Date().toISOString(),
      data: { inquiryId: inquiry.inquiryId, referenceId: inquiry.referenceId, status: inquiry.status, snapshot: snapshotOf(inquiry) },
    };
    await this.delivery.deliver(body.id, JSON.stringify(body));
    return body.id;
  }

  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): IdentityWebhookEvent {
    verifySignature(this.options.webhookSecret, rawBody, headerValue(headers, 'x-signature'), {
      toleranceSeconds: this.options.webhookToleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
      nowSeconds: this.nowSeconds(),
    });
    const body = parseJson(rawBody.toString('utf8'));
    const data = objectAt(body, 'data');
    const eventId = stringAt(body, 'id');
    const inquiryId = stringAt(data, 'inquiryId');
    const status = KYC_STATUSES.find((s) => s === stringAt(data, 'status'));
    const occurredAt = isoOrNull(stringAt(body, 'createdAt'));
    if (eventId === null || inquiryId === null || status === undefined || occurredAt === null) {
      throw new ProviderError('Malformed sandbox identity webhook', PROVIDER);
    }
    const raw = objectAt(data, 'snapshot');
    const snapshotStatus = KYC_STATUSES.find((s) => s === stringAt(raw, 'status'));
    const snapshot: InquirySnapshot | null =
      raw === null || snapshotStatus === undefined
        ? null
        : {
            inquiryId: stringAt(raw, 'inquiryId') ?? inquiryId,
            referenceId: stringAt(raw, 'referenceId') ?? stringAt(data, 'referenceId') ?? '',
            status: snapshotStatus,
            riskLevel: stringAt(raw, 'riskLevel'),
            riskScore: typeof raw.riskScore === 'number' ? raw.riskScore : null,
            reasons: stringArray(raw.reasons),
            document: documentFrom(raw.document),
            updatedAt: isoOrNull(stringAt(raw, 'updatedAt')) ?? occurredAt,
          };
    return { eventId, inquiryId, status, occurredAt, snapshot };
  }

  private async decideIn(tx: SqlQueryable, inquiryId: string, outcome: SandboxOutcome): Promise<SandboxInquiry> {
    const rows = await tx.query<InquiryRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE inquiry_id = $1 FOR UPDATE`, [inquiryId]);
    if (rows[0] === undefined) throw new SandboxInquiryNotFoundError(inquiryId);
    const current = toInquiry(rows[0]);
    if (FINAL.includes(current.status)) {
      // Same outcome again: nothing changes, the caller only wants the webhook re-sent.
      if (current.status === outcome) return current;
      throw new SandboxInquiryConflictError(inquiryId, current.status);
    }
    const d = decide(outcome, inquiryId, rows[0].prefill, this.baseUrl(), new Date());
    const updated = await tx.query<InquiryRow>(
      `UPDATE ${TABLE} SET status = $2, risk_level = $3, risk_score = $4, reasons = $5::jsonb, document = $6::jsonb, updated_at = now()
       WHERE inquiry_id = $1 RETURNING ${COLUMNS}`,
      [
        inquiryId,
        outcome,
        d.riskLevel,
        d.riskScore,
        d.reasons === null ? null : JSON.stringify(d.reasons),
        d.document === null ? null : JSON.stringify(d.document),
      ],
    );
    if (updated[0] === undefined) throw new ProviderError(`Sandbox inquiry vanished during update: ${inquiryId}`, PROVIDER);
    return toInquiry(updated[0]);
  }

  private baseUrl(): string {
    return this.options.publicBaseUrl().replace(/\/+$/, '');
  }

  /** Store failures are reported through the port's error type; the cause is kept. */
  private store<T>(fn: () => Promise<T>): Promise<T> {
    return throughStore(PROVIDER, 'Sandbox identity', fn);
  }
}
