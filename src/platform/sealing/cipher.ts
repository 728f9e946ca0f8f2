import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * The one AES-256-GCM of the service. Every value is sealed with a fresh 96-bit IV and bound, as
 * additional data, to what it is of (a sealed CVC cannot pass for another card's, or for a PIN).
 * The sealed form names the key that sealed it, so keys can change and old values still open:
 *
 *   v2.<keyId>.<iv>.<tag>.<data>   (base64url; keyId is a data key's id, or a KEK's for a data key)
 *
 * `v1.<iv>.<tag>.<data>` is the form sealed before key ids, under keys derived from the pepper: the
 * log holds such values for ever, so they are opened for ever (openLegacy); nothing seals it now.
 */
const VERSION = 'v2';
const LEGACY_VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A key id must not hold the separator, nor be so long that a value is mostly its name. */
const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const isKeyId = (id: string): boolean => KEY_ID.test(id);

export interface SealedParts {
  keyId: string;
  iv: Buffer;
  tag: Buffer;
  data: Buffer;
}

/** A 32-byte AES key from a secret of any length (a KEK as configured, the pepper): HKDF-SHA256, one `purpose` per use. */
export const deriveKey = (secret: string, purpose: string): Buffer => Buffer.from(hkdfSync('sha256', secret, 'tally', purpose, 32));

export function sealWith(key: Buffer, keyId: string, plaintext: Buffer, boundTo: string): string {
  return sealWithIv(key, keyId, randomBytes(IV_BYTES), plaintext, boundTo);
}

/**
 * As sealWith, with a synthetic IV (as SIV makes one): HMAC-SHA256 of the binding and the plaintext
 * under a key derived from `key`, so the same value sealed under the same binding is the same text.
 * Events need it: an append sent again must carry the same content (the store compares digests) and
 * a migration run twice must write the same log. Equal texts tell only "the same value, bound to the
 * same thing" (an event's binding names its stream, event and field); two plaintexts share an IV
 * only by a 96-bit collision.
 */
/** Each data key's synthetic-IV key, derived once per key in memory (an HKDF costs about 15 us; a profile seals 18 values). */
const ivKeys = new WeakMap<Buffer, Buffer>();

function ivKeyOf(key: Buffer): Buffer {
  let ivKey = ivKeys.get(key);
  if (!ivKey) {
    ivKey = Buffer.from(hkdfSync('sha256', key, 'tally', 'synthetic-iv', 32));
    ivKeys.set(key, ivKey);
  }
  return ivKey;
}

export function sealDeterministic(key: Buffer, keyId: string, plaintext: Buffer, boundTo: string): string {
  const ivKey = ivKeyOf(key);
  const binding = Buffer.from(boundTo, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(binding.length);
  const iv = createHmac('sha256', ivKey).update(length).update(binding).update(plaintext).digest().subarray(0, IV_BYTES);
  return sealWithIv(key, keyId, iv, plaintext, boundTo);
}

function sealWithIv(key: Buffer, keyId: string, iv: Buffer, plaintext: Buffer, boundTo: string): string {
  if (!isKeyId(keyId)) throw new Error(`not a key id: ${JSON.stringify(keyId)}`);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `${VERSION}.${keyId}.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`;
}

/** The parts of a `v2` value; null for anything else (a `v1` value, or not a sealed value at all). */
export function parseSealed(sealed: string): SealedParts | null {
  const parts = sealed.split('.');
  const [version, keyId, iv, tag, data] = parts;
  if (parts.length !== 5 || version !== VERSION || keyId === undefined || !isKeyId(keyId)) return null;
  return { keyId, iv: Buffer.from(iv ?? '', 'base64url'), tag: Buffer.from(tag ?? '', 'base64url'), data: Buffer.from(data ?? '', 'base64url') };
}

export const isLegacySealed = (sealed: string): boolean => sealed.startsWith(`${LEGACY_VERSION}.`);

/** Throws when the value was altered, sealed under another key or bound to something else. */
export function openWith(key: Buffer, parts: Omit<SealedParts, 'keyId'>, boundTo: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, parts.iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(boundTo, 'utf8'));
  decipher.setAuthTag(parts.tag);
  return Buffer.concat([decipher.update(parts.data), decipher.final()]);
}

/** A `v1` value: `key` is the pepper-derived key of its kind, `boundTo` exactly as it was sealed with. */
export function openLegacy(key: Buffer, sealed: string, boundTo: string): string {
  const parts = sealed.split('.');
  const [version, iv, tag, data] = parts;
  if (parts.length !== 4 || version !== LEGACY_VERSION || iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed value');
  return openWith(key, { iv: Buffer.from(iv, 'base64url'), tag: Buffer.from(tag, 'base64url'), data: Buffer.from(data, 'base64url') }, boundTo).toString(
    'utf8',
  );
}
