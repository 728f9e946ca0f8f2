import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Partner signing secrets at rest: the log keeps them sealed (AES-256-GCM, a fresh IV each, bound
 * to the partner and secret id as additional data), under a key derived from the service keys'
 * pepper, so a copy of the log does not let anyone forge notifications.
 */
const VERSION = 'v1';
const IV_BYTES = 12;

export class SecretBox {
  private readonly key: Buffer;

  constructor(serviceSecret: string) {
    if (!serviceSecret) throw new Error('the webhook secret box needs a non-empty service secret');
    this.key = Buffer.from(hkdfSync('sha256', serviceSecret, 'tally', `webhook-secrets/${VERSION}`, 32));
  }

  seal(plaintext: string, boundTo: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
  }

  open(sealed: string, boundTo: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed webhook secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** `whsec_` + base64 of 32 random bytes: the form Standard Webhooks libraries take as is. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The bytes Standard Webhooks signs with: the base64 after the `whsec_` prefix, decoded. */
export const standardKeyBytes = (secret: string): Buffer => Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');

/**
 * Both signature schemes of the decisions, one entry per secret (two during a rotation's overlap):
 * `X-Webhook-Signature: t=<t>,v1=<hex>[,v1=<hex>]` over "<t>.<body>" keyed with the secret as
 * shown, and Standard Webhooks' `webhook-signature: v1,<b64>[ v1,<b64>]` over "<id>.<t>.<body>"
 * keyed with the secret's bytes.
 */
export function signatureHeaders(secrets: string[], deliveryId: string, unixSeconds: number, body: string): Record<string, string> {
  const t = String(unixSeconds);
  const hex = secrets.map((s) => `v1=${createHmac('sha256', s).update(`${t}.${body}`).digest('hex')}`);
  const standard = secrets.map((s) => `v1,${createHmac('sha256', standardKeyBytes(s)).update(`${deliveryId}.${t}.${body}`).digest('base64')}`);
  return {
    'X-Webhook-Signature': [`t=${t}`, ...hex].join(','),
    'webhook-id': deliveryId,
    'webhook-timestamp': t,
    'webhook-signature': standard.join(' '),
  };
}
