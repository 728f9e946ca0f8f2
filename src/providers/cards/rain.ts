import { constants, createDecipheriv, createCipheriv, createHmac, publicEncrypt, randomBytes, timingSafeEqual } from 'node:crypto';
import BigNumber from 'bignumber.js';
import type { ApplicationStatus, CardType } from '../../domain/cards/application';
import type { CardLimit } from '../../domain/cards/limit';
import { isObject, isoOrNull, type JsonObject, objectAt, parseJson, stringAt } from '../json';
import { ProviderError, WebhookSignatureError } from '../errors';
import { headerValue } from '../signature';
import type { CardIssuer, CardIssuerWebhookEvent, CardSecrets, IssuedCard, IssuerApplication, IssuerApplicationRequest } from './port';

/**
 * The card issuer port on Rain's issuing API (the issuer whose fields the interface's 2.8-2.10
 * carry: wallet addresses, an identity share token, limit frequencies, encrypted secrets).
 * Secrets travel encrypted under a session key we make per call: the key goes to Rain encrypted with
 * Rain's RSA public key (header `SessionId`), and Rain answers `{iv, data}` in AES-128-GCM under it.
 */
export interface RainOptions {
  apiKey: string;
  /** Rain's RSA public key (PEM) for SessionId. */
  publicKeyPem: string;
  webhookSecret: string;
  baseUrl?: string;
  /** Budget of one call, retries included. Default 10000. */
  timeoutMs?: number;
  /** Attempts of a read on network errors, 429 and 5xx. Default 2. */
  maxAttempts?: number;
  fetch?: typeof fetch;
}

const PROVIDER = 'rain';
const MAX_ERROR_DETAIL = 200;

/** Rain's application statuses, mapped to ours: only approved and denied (or later closed) decide. */
const APPLICATION_STATUSES: Readonly<Record<string, ApplicationStatus>> = {
  approved: 'approved',
  pending: 'pending',
  needsInformation: 'pending',
  needsVerification: 'pending',
  manualReview: 'pending',
  denied: 'declined',
  locked: 'declined',
  canceled: 'declined',
};

export function mapRainApplication(value: unknown): IssuerApplication {
  const id = stringAt(value, 'id');
  const external = stringAt(value, 'applicationStatus');
  const status = external === null ? undefined : APPLICATION_STATUSES[external];
  if (id === null || external === null || status === undefined) throw new ProviderError(`Unknown Rain application: status ${String(external)}`, PROVIDER);
  return { issuerApplicationId: id, externalStatus: external, status, reason: stringAt(value, 'applicationReason') };
}

/** Rain writes expiry months and years as numbers or strings, years in two or four digits. */
const twoDigits = (value: unknown): string | null => {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value : null;
  return text !== null && /^[0-9]{1,4}$/.test(text) ? text.slice(-2).padStart(2, '0') : null;
};

export function mapRainCard(value: unknown): IssuedCard {
  const reference = stringAt(value, 'id');
  const last4 = stringAt(value, 'last4');
  const expirationMonth = twoDigits(isObject(value) ? value.expirationMonth : null);
  const expirationYear = twoDigits(isObject(value) ? value.expirationYear : null);
  if (!reference || !last4 || !/^[0-9]{4}$/.test(last4) || !expirationMonth || !expirationYear)
    throw new ProviderError('Rain answered a card without its id, last4 or expiry', PROVIDER);
  return { reference, last4, expirationMonth, expirationYear };
}

/** Rain's limits are in cents; a limit is never rounded up past what was asked. */
export const limitInCents = (limit: CardLimit) => ({
  amount: new BigNumber(limit.amount).times(100).integerValue(BigNumber.ROUND_DOWN).toNumber(),
  frequency: limit.frequency,
});

/** One session: a fresh AES-128 key, and its SessionId header for Rain. */
export function newSession(publicKeyPem: string): { key: Buffer; sessionId: string } {
  const key = randomBytes(16);
  // Rain takes the hex key, base64-encoded, encrypted with RSA-OAEP.
  const encoded = Buffer.from(Buffer.from(key.toString('hex'), 'hex').toString('base64'), 'utf8');
  const sessionId = publicEncrypt({ key: publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING }, encoded).toString('base64');
  return { key, sessionId };
}

/** `{iv, data}`: base64 IV and base64 ciphertext with the 16-byte GCM tag at its end. */
export function decryptSecret(key: Buffer, value: unknown): string {
  const iv = stringAt(value, 'iv');
  const data = stringAt(value, 'data');
  if (!iv || !data) throw new ProviderError('Rain answered a secret without iv or data', PROVIDER);
  const bytes = Buffer.from(data, 'base64');
  const decipher = createDecipheriv('aes-128-gcm', key, Buffer.from(iv, 'base64'));
  decipher.setAuthTag(bytes.subarray(bytes.length - 16));
  return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8');
}

export function encryptSecret(key: Buffer, plaintext: string): { iv: string; data: string } {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-128-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { iv: iv.toString('base64'), data: data.toString('base64') };
}

/** ISO 9564 format 2 PIN block, as Rain takes a PIN: `2`, the length, the digits, `F` padding to 16. */
export const pinBlock = (pin: string) => `2${pin.length}${pin}`.padEnd(16, 'F');
export const pinFromBlock = (block: string): string => {
  const length = Number(block[1]);
  const pin = block.slice(2, 2 + length);
  if (block[0] !== '2' || !/^[0-9]{4,12}$/.test(pin)) throw new ProviderError('Rain answered a PIN block that is not ISO format 2', PROVIDER);
  return pin;
};

export class RainCardIssuer implements CardIssuer {
  readonly name = PROVIDER;
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: RainOptions) {
    if (!options.apiKey || !options.publicKeyPem || !options.webhookSecret) throw new Error('Rain apiKey, publicKeyPem and webhookSecret are required');
    this.baseUrl = (options.baseUrl ?? 'https://api.raincards.xyz/v1').replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 2;
    this.fetchImpl = options.fetch ?? fetch;
  }

  async submitApplication(request: IssuerApplicationRequest): Promise<IssuerApplication> {
    const optional = (key: string, value: string | null) => (value === null ? {} : { [key]: value });
    const body: JsonObject = {
      ...optional('personaShareToken', request.identityShareToken),
      ...optional('walletAddress', request.walletAddress),
      ...optional('solanaAddress', request.solanaAddress),
      ...optional('tronAddress', request.tronAddress),
      ...optional('chainId', request.chainId),
      ...optional('contractAddress', request.contractAddress),
      ...optional('ipAddress', request.ipAddress),
      sourceKey: request.sourceKey,
      occupation: request.occupation,
      annualSalary: request.annualSalary,
      accountPurpose: request.accountPurpose,
      expectedMonthlyVolume: request.expectedMonthlyVolume,
      isTermsOfServiceAccepted: request.isTermsOfServiceAccepted,
    };
    return mapRainApplication(await this.request('POST', '/issuing/applications/user', { body, idempotencyKey: request.applicationId }));
  }

  async getApplication(issuerApplicationId: string): Promise<IssuerApplication> {
    return mapRainApplication(await this.request('GET', `/issuing/applications/user/${encodeURIComponent(issuerApplicationId)}`));
  }

  async issueCard(request: { cardId: string; issuerApplicationId: string; type: CardType; limit: CardLimit }): Promise<IssuedCard> {
    // Rain's user id is its application id; the card id keys the call, so a retry makes one card.
    const body = { type: request.type, limit: limitInCents(request.limit) };
    return mapRainCard(
      await this.request('POST', `/issuing/users/${encodeURIComponent(request.issuerApplicationId)}/cards`, { body, idempotencyKey: request.cardId }),
    );
  }

  async updateCard(reference: string, change: { status?: 'active' | 'locked' | 'canceled'; limit?: CardLimit }): Promise<void> {
    const body: JsonObject = { ...(change.status ? { status: change.status } : {}), ...(change.limit ? { limit: limitInCents(change.limit) } : {}) };
    await this.request('PATCH', `/issuing/cards/${encodeURIComponent(reference)}`, { body });
  }

  async revealSecrets(reference: string): Promise<CardSecrets> {
    const session = newSession(this.options.publicKeyPem);
    const answer = await this.request('GET', `/issuing/cards/${encodeURIComponent(reference)}/secrets`, { sessionId: session.sessionId });
    const expirationMonth = twoDigits(isObject(answer) ? answer.expirationMonth : null);
    const expirationYear = twoDigits(isObject(answer) ? answer.expirationYear : null);
    if (!expirationMonth || !expirationYear) throw new ProviderError('Rain answered secrets without the expiry', PROVIDER);
    const cardNumber = decryptSecret(session.key, objectAt(answer, 'encryptedPan'));
    return { cardNumber, cvc: decryptSecret(session.key, objectAt(answer, 'encryptedCvc')), expirationMonth, expirationYear };
  }

  async revealPin(reference: string): Promise<string | null> {
    const session = newSession(this.options.publicKeyPem);
    const answer = await this.request('GET', `/issuing/cards/${encodeURIComponent(reference)}/pin`, { sessionId: session.sessionId });
    const encrypted = objectAt(answer, 'encryptedPin');
    return encrypted === null ? null : pinFromBlock(decryptSecret(session.key, encrypted));
  }

  async setPin(reference: string, pin: string): Promise<void> {
    const session = newSession(this.options.publicKeyPem);
    const body = { encryptedPin: encryptSecret(session.key, pinBlock(pin)) };
    await this.request('PUT', `/issuing/cards/${encodeURIComponent(reference)}/pin`, { body, sessionId: session.sessionId });
  }

  /** Rain signs the raw body: header `signature`, the hex HMAC-SHA256 under the webhook secret. */
  parseWebhook(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): CardIssuerWebhookEvent {
    const given = headerValue(headers, 'signature');
    const text = Array.isArray(given) ? given[0] : given;
    if (!text || !/^[0-9a-f]{64}$/i.test(text)) throw new WebhookSignatureError('Missing signature header');
    const expected = createHmac('sha256', this.options.webhookSecret).update(rawBody).digest();
    if (!timingSafeEqual(expected, Buffer.from(text, 'hex'))) throw new WebhookSignatureError('No signature matches the payload');
    const event = parseJson(rawBody.toString('utf8'));
    const eventId = stringAt(event, 'id');
    const body = objectAt(event, 'body');
    if (!eventId || stringAt(event, 'resource') !== 'user' || stringAt(event, 'action') !== 'updated' || body === null)
      throw new ProviderError(`Unsupported Rain webhook: ${stringAt(event, 'resource')}.${stringAt(event, 'action')}`, PROVIDER);
    const application = mapRainApplication(body);
    const occurredAt = isoOrNull(stringAt(event, 'createdAt') ?? stringAt(body, 'updatedAt')) ?? new Date().toISOString();
    return { eventId, ...application, occurredAt };
  }

  /** One call under one deadline; reads are retried on network errors, 429 and 5xx, writes only on 429. */
  private async request(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT',
    path: string,
    extra: { body?: JsonObject; idempotencyKey?: string; sessionId?: string } = {},
  ): Promise<unknown> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const headers: Record<string, string> = { 'Api-Key': this.options.apiKey, Accept: 'application/json' };
    if (extra.body) headers['Content-Type'] = 'application/json';
    if (extra.idempotencyKey) headers['Idempotency-Key'] = extra.idempotencyKey;
    if (extra.sessionId) headers.SessionId = extra.sessionId;
    const label = `Rain ${method} ${path}`;
    for (let attempt = 1; ; attempt++) {
      let failure: ProviderError;
      try {
        const response = await this.fetchImpl(`${this.baseUrl}${path}`, {
          method,
          headers,
          body: extra.body ? JSON.stringify(extra.body) : undefined,
          signal: deadline,
        });
        const text = await response.text();
        if (response.ok) return text === '' ? {} : parseJson(text);
        // Only the error's message is kept: a body may echo the request, secrets included.
        const detail = (stringAt(parseJson(text), 'message') ?? '').slice(0, MAX_ERROR_DETAIL);
        failure = new ProviderError(`${label} answered ${response.status}${detail ? `: ${detail}` : ''}`, PROVIDER);
        if (response.status !== 429 && !(method === 'GET' && response.status >= 500)) throw failure;
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        if (deadline.aborted) throw new ProviderError(`${label} timed out after ${this.timeoutMs} ms`, PROVIDER, { cause: error });
        failure = new ProviderError(`${label} failed: ${error instanceof Error ? error.message : String(error)}`, PROVIDER, { cause: error });
        if (method !== 'GET') throw failure;
      }
      if (attempt >= this.maxAttempts) throw failure;
    }
  }
}
