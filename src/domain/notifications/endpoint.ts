import { type Decider, invariant } from '../../platform/decider';
import { MAX_URL_LENGTH, NOTIFICATION_REFUSALS as R } from './refusals';

/** Partner notification types (docs/decisions.md, "Partner notifications"). */
export const NOTIFICATION_TYPES = [
  'user.status.updated',
  'kyc.status.updated',
  'deposit.completed',
  'deposit.failed',
  'transfer.completed',
  'payout.updated',
  'card.application.updated',
  'card.updated',
  'card.transaction.created',
  'card.transaction.updated',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

/** A rotated-out secret keeps signing this long, so receivers can switch without losing a delivery. */
export const SECRET_OVERLAP_MS = 24 * 3600 * 1000;
export { MAX_URL_LENGTH };

/** A signing secret as the log holds it: sealed (never in clear), with when it stops signing. */
export interface EndpointSecret {
  secretId: string;
  sealed: string;
  issuedAt: string;
  /** null while it is the current secret. */
  expiresAt: string | null;
}

export type WebhookEndpointEvent =
  | { type: 'WebhookEndpointConfigured'; data: { partnerId: string; url: string; events: NotificationType[] | null; at: string } }
  | { type: 'WebhookSecretIssued'; data: { partnerId: string; secretId: string; sealed: string; at: string; previousExpiresAt: string | null } };

export type WebhookEndpointCommand =
  | {
      type: 'Configure';
      partnerId: string;
      url: string;
      events: NotificationType[] | null;
      sandbox: boolean;
      newSecret: { secretId: string; sealed: string };
      at: string;
    }
  | { type: 'RotateSecret'; newSecret: { secretId: string; sealed: string }; at: string };

export interface WebhookEndpointState {
  partnerId: string | null;
  url: string | null;
  /** null: every type, including types added later. */
  events: NotificationType[] | null;
  /** Newest last; at most the current one and the one it replaced. */
  secrets: EndpointSecret[];
}

export const webhookEndpointStream = (partnerId: string) => `partner-webhooks-${partnerId}`;

export const ENDPOINT_NOT_CONFIGURED = R.endpointNotConfigured.template;

/**
 * The url rules a partner can be told without looking anything up: a well-formed absolute URL,
 * https outside sandbox mode (http also in sandbox), no credentials in it. Where its host points is
 * checked by the caller (DNS is I/O) and again at every delivery.
 */
export function checkEndpointUrl(raw: string, sandbox: boolean): URL {
  if (raw.length > MAX_URL_LENGTH) throw R.urlTooLong();
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw R.urlNotAbsolute();
  }
  const schemes = sandbox ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw sandbox ? R.urlNotHttpOrHttps() : R.urlNotHttps();
  if (url.username || url.password) throw R.urlHasCredentials();
  if (url.hash) throw R.urlHasFragment();
  // Outside sandbox mode only the https port (URL drops an explicit :443, so none is left): no
  // reaching the other services of a public host (an admin port, a database) through us.
  if (!sandbox && url.port !== '') throw R.urlPortNotAllowed();
  return url;
}

function withSecret(secrets: EndpointSecret[], issued: { secretId: string; sealed: string; at: string; previousExpiresAt: string | null }): EndpointSecret[] {
  const current = secrets[secrets.length - 1];
  const previous = current && issued.previousExpiresAt ? [{ ...current, expiresAt: issued.previousExpiresAt }] : [];
  return [...previous, { secretId: issued.secretId, sealed: issued.sealed, issuedAt: issued.at, expiresAt: null }];
}

export const webhookEndpointDecider: Decider<WebhookEndpointState, WebhookEndpointCommand, WebhookEndpointEvent> = {
  initialState: () => ({ partnerId: null, url: null, events: null, secrets: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'WebhookEndpointConfigured':
        return { ...state, partnerId: event.data.partnerId, url: event.data.url, events: event.data.events };
      case 'WebhookSecretIssued':
        return { ...state, secrets: withSecret(state.secrets, event.data) };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'Configure': {
        const url = checkEndpointUrl(command.url, command.sandbox).toString();
        const configured: WebhookEndpointEvent = {
          type: 'WebhookEndpointConfigured',
          data: { partnerId: command.partnerId, url, events: command.events, at: command.at },
        };
        // The secret is made once; changing the url or the types keeps it (rotation is its own step).
        if (state.secrets.length > 0) return [configured];
        const { secretId, sealed } = command.newSecret;
        return [configured, { type: 'WebhookSecretIssued', data: { partnerId: command.partnerId, secretId, sealed, at: command.at, previousExpiresAt: null } }];
      }
      case 'RotateSecret': {
        if (!state.url) throw R.endpointNotConfigured();
        invariant(state.partnerId && state.secrets.length > 0, 'a configured endpoint has a partner and a secret');
        const previousExpiresAt = new Date(Date.parse(command.at) + SECRET_OVERLAP_MS).toISOString();
        const { secretId, sealed } = command.newSecret;
        return [{ type: 'WebhookSecretIssued', data: { partnerId: state.partnerId, secretId, sealed, at: command.at, previousExpiresAt } }];
      }
    }
  },
};

/** The secrets that sign a delivery made at `atMs`: the current one, and the one it replaced within its overlap. */
export function signingSecrets(state: WebhookEndpointState, atMs: number): EndpointSecret[] {
  return state.secrets.filter((s) => s.expiresAt === null || Date.parse(s.expiresAt) > atMs);
}
