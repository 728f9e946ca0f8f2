import { randomUUID } from 'node:crypto';
import type { KycStatus } from '../../domain/identity/kyc-statuses';
import { arrayAt, isObject, isoOrNull, type JsonObject, objectAt, parseJson, stringAt } from '../json';
import type { CreatedInquiry, IdentityProvider, IdentityWebhookEvent, InquiryPrefill, InquirySnapshot, KycDocument } from './port';
import { ProviderError } from '../errors';
import { currentUnixSeconds, DEFAULT_TOLERANCE_SECONDS, headerValue, verifySignature } from '../signature';

/**
 * The identity port on Persona's REST API (JSON:API, kebab-case keys, version pinned by header).
 * https://docs.withpersona.com/api-reference/inquiries
 */
export interface PersonaOptions {
  apiKey: string;
  /** `itmpl_...`: the inquiry template users go through. */
  templateId: string;
  /** Webhook secret(s) from the Persona dashboard; a list accepts old and new while rotating. */
  webhookSecret: string | readonly string[];
  baseUrl?: string;
  hostedFlowUrl?: string;
  /** Budget of one port call, retries included. Default 10000. */
  timeoutMs?: number;
  /** Attempts per call on network errors, 429 and (reads only) 5xx. Default 2. */
  maxAttempts?: number;
  /** Wait between attempts. Default 250. */
  retryDelayMs?: number;
  /** Default 300 (the Stripe SDKs' default; Persona documents no number). */
  webhookToleranceSeconds?: number;
  /** Clock for webhook timestamp checks (tests). */
  nowSeconds?: () => number;
  fetch?: typeof fetch;
}

const PROVIDER = 'persona';
/** The API version this mapping was written against; pinned so Persona changes nothing under us. */
export const PERSONA_API_VERSION = '2023-01-05';
const MAX_ERROR_DETAIL = 200;

/** Persona's inquiry statuses are a subset of ours with the same names. */
const PERSONA_STATUSES: Readonly<Record<string, KycStatus>> = {
  created: 'created',
  pending: 'pending',
  completed: 'completed',
  failed: 'failed',
  expired: 'expired',
  needs_review: 'needs_review',
  approved: 'approved',
  declined: 'declined',
};

/** Persona id-class codes mapped to the profile's governmentIdType values; others pass through. */
const ID_CLASSES: Readonly<Record<string, string>> = {
  pp: 'passport',
  dl: 'drivers_license',
  id: 'national_id',
  rp: 'residence_permit',
};

function mapStatus(status: string | null): KycStatus {
  const mapped = status === null ? undefined : PERSONA_STATUSES[status];
  if (mapped === undefined) throw new ProviderError(`Unknown Persona inquiry status: ${status}`, PROVIDER);
  return mapped;
}

interface Resource {
  type: string;
  id: string;
  attributes: JsonObject;
}

function resource(value: unknown): Resource | null {
  const type = stringAt(value, 'type');
  const id = stringAt(value, 'id');
  if (type === null || id === null) return null;
  return { type, id, attributes: objectAt(value, 'attributes') ?? {} };
}

function latestFirst(a: Resource, b: Resource): number {
  const time = (r: Resource) => Date.parse(stringAt(r.attributes, 'completed-at') ?? stringAt(r.attributes, 'created-at') ?? '') || 0;
  return time(b) - time(a);
}

/** The government-id verification that counts: the latest passed one, else the latest attempt. */
function governmentIdDocument(included: Resource[]): KycDocument | null {
  const candidates = included.filter((r) => r.type === 'verification/government-id').sort(latestFirst);
  const chosen = candidates.find((r) => stringAt(r.attributes, 'status') === 'passed') ?? candidates[0];
  if (chosen === undefined) return null;
  const a = chosen.attributes;
  const idClass = stringAt(a, 'id-class');
  return {
    issuingCountry: stringAt(a, 'country-code'),
    type: idClass === null ? null : (ID_CLASSES[idClass] ?? idClass),
    idNumber: stringAt(a, 'identification-number'),
    issuedDate: stringAt(a, 'issue-date'),
    expiryDate: stringAt(a, 'expiration-date'),
    imageFront: stringAt(a, 'front-photo-url'),
    imageBack: stringAt(a, 'back-photo-url'),
  };
}

/** Names of the failed checks of failed verifications: why Persona declined or failed the inquiry. */
function failureReasons(included: Resource[]): string[] | null {
  const reasons = new Set<string>();
  for (const r of included) {
    if (!r.type.startsWith('verification/') || stringAt(r.attributes, 'status') !== 'failed') continue;
    for (const check of arrayAt(r.attributes, 'checks')) {
      const name = stringAt(check, 'name');
      if (name !== null && stringAt(check, 'status') === 'failed') reasons.add(name);
    }
  }
  return reasons.size > 0 ? [...reasons] : null;
}

const TIMESTAMP_ATTRIBUTES = ['updated-at', 'decisioned-at', 'completed-at', 'failed-at', 'expired-at', 'marked-for-review-at', 'started-at', 'created-at'];

/** Maps a JSON:API document whose primary data is an inquiry (API answer or webhook payload). */
export function mapPersonaInquiry(document: unknown): InquirySnapshot {
  const data = resource(objectAt(document, 'data'));
  if (data === null || data.type !== 'inquiry') throw new ProviderError('Persona answer has no inquiry', PROVIDER);
  const included = arrayAt(document, 'included')
    .map(resource)
    .filter((r): r is Resource => r !== null);
  const a = data.attributes;
  const status = mapStatus(stringAt(a, 'status'));
  const times = TIMESTAMP_ATTRIBUTES.map((key) => isoOrNull(stringAt(a, key))).filter((t): t is string => t !== null);
  const behaviors = objectAt(a, 'behaviors');
  return {
    inquiryId: data.id,
    // Inquiries started from Persona's dashboard have no reference id; ours always do.
    referenceId: stringAt(a, 'reference-id') ?? '',
    status,
    riskLevel: stringAt(behaviors, 'behavior-threat-level'),
    // Persona gives no numeric score on the inquiry; scores live in reports we do not order.
    riskScore: null,
    reasons: status === 'declined' || status === 'failed' ? failureReasons(included) : null,
    document: governmentIdDocument(included),
    updatedAt: times.sort().at(-1) ?? new Date().toISOString(),
  };
}

function prefillFields(prefill: InquiryPrefill): Record<string, string> {
  const fields: Record<string, string> = {};
  if (prefill.firstName) fields['name-first'] = prefill.firstName;
  if (prefill.lastName) fields['name-last'] = prefill.lastName;
  if (prefill.email) fields['email-address'] = prefill.email;
  if (prefill.phone) fields['phone-number'] = prefill.phone;
  if (prefill.birthDate) fields.birthdate = prefill.birthDate;
  return fields;
}

function errorDetail(text: string): string {
  // Persona errors are `{errors: [{title, details}]}`; only titles are kept, bodies may echo input.
  const titles = arrayAt(parseJson(text), 'errors')
    .map((e) => stringAt(e, 'title'))
    .filter((t): t is string => t !== null);
  return titles.join('; ').slice(0, MAX_ERROR_DETAIL);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class PersonaIdentityProvider implements IdentityProvider {
  readonly name = PROVIDER;
  private readonly baseUrl: string;
  private readonly hostedFlowUrl: string;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: PersonaOptions) {
    if (!options.apiKey) throw new Error('Persona apiKey is required');
    if (!options.templateId) throw new Error('Persona templateId is required');
    this.baseUrl = (options.baseUrl ?? 'https://api.withpersona.com').replace(/\/+$/, '');
    this.hostedFlowUrl = options.hostedFlowUrl ?? 'https://inquiry.withpersona.com/inquiry';
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 250;
    if (!(this.timeoutMs > 0)) throw new Error('Persona timeoutMs must be > 0');
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1 || this.maxAttempts > 5) throw new Error('Persona maxAttempts must be 1..5');
    this.fetchImpl = options.fetch ?? fetch;
  }

  async createInquiry(input: { referenceId: string; prefill: InquiryPrefill }): Promise<CreatedInquiry> {
    const body = {
      data: {
        attributes: {
          'inquiry-template-id': this.options.templateId,
          'reference-id': input.referenceId,
          fields: prefillFields(input.prefill),
        },
      },
    };
    // One key for every attempt of this call: a retry after a lost answer cannot create a second inquiry.
    const answer = await this.request('POST', '/api/v1/inquiries', body, randomUUID());
    const snapshot = mapPersonaInquiry(answer);
    const url = new URL(this.hostedFlowUrl);
    url.searchParams.set('inquiry-id', snapshot.inquiryId);
    return { inquiryId: snapshot.inquiryId, verificationUrl: url.toString(), status: snapshot.status };
  }

  async getInquiry(inquiryId: string): Promise<InquirySnapshot> {
    const answer = await this.request('GET', `/api/v1/inquiries/${encodeURIComponent(inquiryId)}?include=verifications`);
    return mapPersonaInquiry(answer);
  }

  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): IdentityWebhookEvent {
    verifySignature(this.options.webhookSecret, rawBody, headerValue(headers, 'persona-signature'), {
      toleranceSeconds: this.options.webhookToleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
      nowSeconds: (this.options.nowSeconds ?? currentUnixSeconds)(),
    });
    const event = objectAt(parseJson(rawBody.toString('utf8')), 'data');
    const eventId = stringAt(event, 'id');
    const attributes = objectAt(event, 'attributes');
    const name = stringAt(attributes, 'name');
    if (stringAt(event, 'type') !== 'event' || eventId === null || name === null) throw new ProviderError('Malformed Persona webhook', PROVIDER);
    const payload = objectAt(attributes, 'payload');
    // Only inquiry events are subscribed; anything else is a dashboard misconfiguration worth seeing.
    if (stringAt(objectAt(payload, 'data'), 'type') !== 'inquiry') throw new ProviderError(`Unsupported Persona webhook event: ${name}`, PROVIDER);
    const snapshot = mapPersonaInquiry(payload);
    return {
      eventId,
      inquiryId: snapshot.inquiryId,
      status: snapshot.status,
      occurredAt: isoOrNull(stringAt(attributes, 'created-at')) ?? snapshot.updatedAt,
      snapshot,
    };
  }

  /**
   * One API call under one deadline. Retried: network errors and 429 (POSTs carry an
   * Idempotency-Key, so a retry is safe), 5xx on reads only: Persona replays a stored 5xx to the same key.
   */
  private async request(method: 'GET' | 'POST', path: string, body?: JsonObject, idempotencyKey?: string): Promise<unknown> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const startedAt = Date.now();
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.options.apiKey}`,
      'Persona-Version': PERSONA_API_VERSION,
      'Key-Inflection': 'kebab',
      Accept: 'application/json',
    };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
    const label = `Persona ${method} ${path.split('?')[0]}`;

    for (let attempt = 1; ; attempt += 1) {
      let failure: ProviderError;
      try {
        const response = await this.fetchImpl(`${this.baseUrl}${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: deadline,
        });
        const text = await response.text();
        if (response.ok) {
          const parsed = parseJson(text);
          if (!isObject(parsed)) throw new ProviderError(`${label} answered ${response.status} with a body that is not JSON`, PROVIDER);
          return parsed;
        }
        const detail = errorDetail(text);
        failure = new ProviderError(`${label} answered ${response.status}${detail ? `: ${detail}` : ''}`, PROVIDER);
        const retryable = response.status === 429 || (method === 'GET' && response.status >= 500);
        if (!retryable) throw failure;
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        if (deadline.aborted) throw new ProviderError(`${label} timed out after ${this.timeoutMs} ms`, PROVIDER, { cause: error });
        failure = new ProviderError(`${label} failed: ${error instanceof Error ? error.message : String(error)}`, PROVIDER, { cause: error });
      }
      const remainingMs = this.timeoutMs - (Date.now() - startedAt);
      if (attempt >= this.maxAttempts || remainingMs <= this.retryDelayMs) throw failure;
      await sleep(this.retryDelayMs * attempt);
    }
  }
}
