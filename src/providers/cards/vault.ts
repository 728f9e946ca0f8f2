import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Card secrets at rest: AES-256-GCM, each value sealed with a fresh 96-bit IV and bound (as
 * additional data) to what it is the secret of, so a sealed CVC cannot pass for another card's or
 * for a PIN. The key is derived (HKDF-SHA256) from the service keys, never stored beside the data.
 * Sealed form: `v1.<iv>.<tag>.<ciphertext>`, base64url; the version names the key derivation.
 */
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class CardVault {
  private constructor(private readonly key: Buffer) {}

  /** The vault's key from a service secret (the keys' pepper): the same secret gives the same key on every node. */
  static fromSecret(secret: string): CardVault {
    if (!secret) throw new Error('the card vault needs a non-empty secret');
    const key = Buffer.from(hkdfSync('sha256', secret, 'tally', `card-vault/${VERSION}`, 32));
    return new CardVault(key);
  }

  seal(plaintext: string, boundTo: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), data].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  /** Throws when the value was altered, sealed under another key or bound to something else. */
  open(sealed: string, boundTo: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed card secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}
