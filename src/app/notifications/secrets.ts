import { createHmac, randomBytes } from 'node:crypto';
import { keyOwner, type Sealer, type Sealing } from '../../platform/sealing/sealer';

/**
 * Partner signing secrets at rest: the log keeps them sealed by the platform's sealer under the
 * partner's data key, bound to the partner and secret id, so a copy of the log does not let anyone
 * forge notifications. Secrets sealed before data keys (`v1`, under a key derived from the pepper)
 * still open: the log keeps them for ever.
 */
const KIND = 'webhook-secrets';
const boundTo = (partnerId: string, secretId: string) => `partner-webhook-secret:${partnerId}:${secretId}`;

export class SecretBox {
  private readonly sealing: Sealing;

  constructor(sealer: Sealer) {
    this.sealing = sealer.of(KIND);
  }

  seal(partnerId: string, secretId: string, plaintext: string): Promise<string> {
    return this.sealing.seal(keyOwner.partner(partnerId), plaintext, boundTo(partnerId, secretId));
  }

  /** Rejects when the value was altered or is not the partner's secret of that id. */
  async open(partnerId: string, secretId: string, sealed: string): Promise<string> {
    const opened = await this.sealing.open(sealed, boundTo(partnerId, secretId));
    // A partner's data key is never destroyed (erasure is of users): a destroyed one is a fault.
    if (opened.erased) throw new Error(`the webhook secret ${secretId} of partner ${partnerId} is erased`);
    return opened.value;
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
