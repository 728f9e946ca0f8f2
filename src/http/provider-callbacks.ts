import type { IncomingHttpHeaders } from 'node:http';
import { Type } from '@sinclair/typebox';
import { WebhookSignatureError } from '../providers/errors';
import { IDENTITY_REFUSALS } from '../domain/identity';
import { LEDGER_REFUSALS } from '../domain/ledger';
import { NOTIFICATION_REFUSALS } from '../domain/notifications';
import { HttpError, MESSAGES, PLATFORM_CODES } from '../platform/http/errors';
import { type HttpRequest, type RequestContext, type RouteSpec, routeFor } from '../platform/http/route';
import type { AppServices } from './services';

/** The services these routes use. */
const USES = ['cards', 'kyc', 'ledger', 'providers'] as const;
type Services = Pick<AppServices, (typeof USES)[number]>;
const route = routeFor<AppServices>()(USES);

const Received = Type.Object(
  {
    success: Type.Literal(true, { description: 'Always true' }),
    received: Type.Literal(true, { description: 'Always true: the callback was verified and taken; one whose event id was seen before changes nothing' }),
  },
  { $id: 'WebhookReceived' },
);

/** What every provider adapter does with a callback: verify its signature over the raw bytes, and read it. */
interface CallbackReader<Callback> {
  parseWebhook(raw: Buffer, headers: IncomingHttpHeaders): Callback;
}

/**
 * A provider's callback as its adapter reads it: 404 for a provider we do not have (as for a path
 * not served: the platform's `not_found`), 401 for a missing or bad signature, 400 for anything
 * else the adapter cannot read.
 */
function readCallback<Callback>(adapter: CallbackReader<Callback> | undefined, req: HttpRequest): Callback {
  if (!adapter) throw new HttpError(404, MESSAGES.notFound, { code: PLATFORM_CODES.notFound });
  try {
    return adapter.parseWebhook(req.rawBody ?? Buffer.alloc(0), req.headers);
  } catch (error) {
    if (error instanceof WebhookSignatureError) throw NOTIFICATION_REFUSALS.invalidWebhookSignature();
    throw NOTIFICATION_REFUSALS.invalidWebhookPayload();
  }
}

/** A signed provider callback route: read by the provider's adapter, then applied (deduplicated there). */
function signedCallback(
  path: string,
  summary: string,
  apply: (ctx: RequestContext<unknown, unknown, unknown, Services>) => Promise<unknown>,
  refuses: RouteSpec['refuses'] = [],
) {
  return route({
    method: 'post',
    path,
    auth: 'signed',
    tag: 'Provider callbacks',
    summary,
    body: Type.Object({}, { additionalProperties: true, description: 'The provider’s event in its own format, read from the raw bytes it signed' }),
    responses: { 200: { description: 'Received', schema: Received }, 401: { description: 'Missing or bad signature: nothing changes' } },
    refuses: [NOTIFICATION_REFUSALS.invalidWebhookSignature, NOTIFICATION_REFUSALS.invalidWebhookPayload, ...refuses],
    async handler(ctx) {
      await apply(ctx);
      return { status: 200, body: { success: true, received: true } };
    },
  });
}

const identityWebhook = (provider: string) =>
  signedCallback(
    `/webhooks/identity/${provider}`,
    `Signed callbacks of the ${provider} identity provider (deduplicated by its event id).`,
    ({ services, req }) => services.kyc.applyWebhook(provider, readCallback(services.providers.identity.get(provider), req)),
    [IDENTITY_REFUSALS.unknownInquiry],
  );

export const webhookRoutes = [
  identityWebhook('sandbox'),
  identityWebhook('persona'),
  signedCallback(
    '/webhooks/payments/mock',
    'Signed callbacks of the mock payment provider.',
    ({ services, req }) => services.ledger.deposits.applyPaymentWebhook('mock', readCallback(services.providers.payments.get('mock'), req)),
    [LEDGER_REFUSALS.transactionNotFound],
  ),
  signedCallback(
    '/webhooks/payouts/mock',
    'Signed callbacks of the mock payout provider.',
    ({ services, req }) => services.ledger.payouts.applyPayoutWebhook('mock', readCallback(services.providers.payouts.get('mock'), req)),
    [LEDGER_REFUSALS.transactionNotFound],
  ),
  // The card issuer's callbacks: an application's decision (or a new status word of the issuer's).
  cardIssuerWebhook('sandbox'),
  cardIssuerWebhook('rain'),
];

function cardIssuerWebhook(issuer: 'sandbox' | 'rain') {
  return signedCallback(`/webhooks/cards/${issuer}`, `Signed callbacks of the ${issuer} card issuer (deduplicated by its event id).`, ({ services, req }) =>
    services.cards.applications.applyIssuerWebhook(issuer, readCallback(services.providers.cards.get(issuer), req)),
  );
}
