import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookSignatureError } from './errors';

/**
 * Webhook signatures in the Stripe/Persona style:
 *
 *   t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
 *
 * Several `v1=` values may follow one `t=` (Stripe, while a secret is rolled), and Persona sends two
 * whole `t=..,v1=..` groups separated by a space during its rotation. A header is accepted when any
 * v1 of any group matches, and the timestamp of the matching group is within the tolerance.
 */

/** Stripe's and Persona's SDK default: bounds how long a captured request can be replayed. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** SHA-256 digest length; a v1 of any other length cannot match and is skipped. */
const DIGEST_BYTES = 32;
/** Guards against absurd headers: rotation needs two groups, a few more cost nothing. */
const MAX_GROUPS = 8;
const MAX_HEADER_LENGTH = 4096;

export interface VerifyOptions {
  /** How far the signed timestamp may be from now, either way. Default 300. */
  toleranceSeconds?: number;
  /** The clock, in unix seconds. Default: the system clock. */
  nowSeconds?: number;
}

export function currentUnixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function requireSecret(secret: string): void {
  // An empty key would make every signature forgeable: a wiring error, not a bad request.
  if (typeof secret !== 'string' || secret.length === 0) throw new Error('webhook secret must be a non-empty string');
}

function toBuffer(rawBody: Buffer | string): Buffer {
  return typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
}

function digest(secret: string, timestamp: number, rawBody: Buffer): Buffer {
  // The raw bytes are signed, never a re-serialisation: JSON.stringify(JSON.parse(body)) may differ.
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(rawBody).digest();
}

/** The hex HMAC of `"<t>.<raw body>"`. */
export function computeSignature(secret: string, rawBody: Buffer | string, timestamp: number): string {
  requireSecret(secret);
  return digest(secret, timestamp, toBuffer(rawBody)).toString('hex');
}

/** The header value `t=<nowSeconds>,v1=<hex>` for `rawBody`. */
export function signPayload(secret: string, rawBody: Buffer | string, nowSeconds: number = currentUnixSeconds()): string {
  if (!Number.isSafeInteger(nowSeconds) || nowSeconds < 0) throw new Error(`nowSeconds must be a non-negative integer, got ${nowSeconds}`);
  return `t=${nowSeconds},v1=${computeSignature(secret, rawBody, nowSeconds)}`;
}

interface SignatureGroup {
  timestamp: number;
  signatures: Buffer[];
}

/** Parses `t=..,v1=..[,v1=..][ t=..,v1=..]`. Unknown schemes (v0, ...) are ignored, as Stripe does. */
export function parseSignatureHeader(header: string): SignatureGroup[] {
  if (header.length > MAX_HEADER_LENGTH) throw new WebhookSignatureError('Signature header too long');
  const groups: SignatureGroup[] = [];
  for (const chunk of header.trim().split(/\s+/)) {
    if (chunk === '') continue;
    let timestamp: number | null = null;
    const signatures: Buffer[] = [];
    for (const part of chunk.split(',')) {
      const eq = part.indexOf('=');
      if (eq <= 0) continue;
      const key = part.slice(0, eq).trim();
      const value = part.slice(eq + 1).trim();
      if (key === 't') {
        // Digits only: Number('1e3') or Number(' 12') would accept forms a signer never produces.
        if (!/^\d{1,12}$/.test(value)) throw new WebhookSignatureError('Malformed signature timestamp');
        timestamp = Number(value);
      } else if (key === 'v1') {
        // Buffer.from(hex) stops silently at the first non-hex character, so validate first.
        if (/^[0-9a-fA-F]+$/.test(value) && value.length === DIGEST_BYTES * 2) signatures.push(Buffer.from(value, 'hex'));
      }
    }
    if (timestamp !== null && signatures.length > 0) groups.push({ timestamp, signatures });
    if (groups.length > MAX_GROUPS) throw new WebhookSignatureError('Too many signature groups');
  }
  return groups;
}

function headerText(header: string | string[] | undefined): string {
  if (header === undefined) return '';
  // A repeated header reaches Node as an array; its groups are considered together.
  return Array.isArray(header) ? header.join(' ') : header;
}

/**
 * Verifies `header` over `rawBody`. Returns the signed timestamp of the matching group.
 * Throws WebhookSignatureError when the header is missing or malformed, no signature matches, or
 * the matching timestamp is further than `toleranceSeconds` from now (past or future).
 * `secret` may be a list, to accept the old and the new secret while rotating ours.
 */
export function verifySignature(
  secret: string | readonly string[],
  rawBody: Buffer | string,
  header: string | string[] | undefined,
  options: VerifyOptions = {},
): number {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0) throw new Error('at least one webhook secret is required');
  for (const s of secrets) requireSecret(s);
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) throw new Error(`toleranceSeconds must be >= 0, got ${toleranceSeconds}`);
  const nowSeconds = options.nowSeconds ?? currentUnixSeconds();

  const text = headerText(header);
  if (text.trim() === '') throw new WebhookSignatureError('Missing signature header');
  const groups = parseSignatureHeader(text);
  if (groups.length === 0) throw new WebhookSignatureError('No v1 signature in the signature header');

  const body = toBuffer(rawBody);
  let matchedTimestamp: number | null = null;
  for (const group of groups) {
    for (const s of secrets) {
      const expected = digest(s, group.timestamp, body);
      // Every candidate is compared in full (no early exit on a match) so timing says nothing about which matched.
      for (const candidate of group.signatures) {
        if (timingSafeEqual(expected, candidate) && (matchedTimestamp === null || group.timestamp > matchedTimestamp)) {
          matchedTimestamp = group.timestamp;
        }
      }
    }
  }
  if (matchedTimestamp === null) throw new WebhookSignatureError('No signature matches the payload');
  // Checked after the match, as Stripe does: an unsigned timestamp proves nothing about freshness.
  if (Math.abs(nowSeconds - matchedTimestamp) > toleranceSeconds) throw new WebhookSignatureError('Signature timestamp outside the tolerance');
  return matchedTimestamp;
}

/** Finds a header case-insensitively (Node lower-cases incoming names; hand-built maps may not). */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | string[] | undefined {
  const wanted = name.toLowerCase();
  if (headers[wanted] !== undefined) return headers[wanted];
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}
