import { Type } from '@sinclair/typebox';
import { WebhookSignatureError } from '../../providers/identity/port';
import { HttpError, MESSAGES } from '../errors';
import { type HttpRequest, route } from '../route';

const Received = Type.Object({ success: Type.Literal(true), received: Type.Literal(true) }, { $id: 'WebhookReceived' });

const rawBody = (req: HttpRequest) => req.rawBody ?? Buffer.alloc(0);

/** An adapter's reading of a callback: a bad signature is 401, anything else it cannot read 400. */
function parseSigned<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof WebhookSignatureError) throw new HttpError(401, 'Invalid webhook signature');
    throw new HttpError(400, 'Invalid webhook payload');
  }
}

const identityWebhook = (provider: string) =>
  route({
    method: 'post',
    path: `/webhooks/identity/${provider}`,
    auth: 'signed',
    tag: 'Provider callbacks',
    summary: `Signed callbacks of the ${provider} identity provider (deduplicated by its event id).`,
    body: Type.Object({}),
    responses: { 200: { description: 'Received', schema: Received }, 401: { description: 'Missing or bad signature: nothing changes' } },
    async handler({ tally, req }) {
      const adapter = tally.providers.identity.get(provider);
      if (!adapter) throw new HttpError(404, MESSAGES.notFound);
      await tally.kyc.applyWebhook(
        provider,
        parseSigned(() => adapter.parseWebhook(rawBody(req), req.headers)),
      );
      return { status: 200, body: { success: true, received: true } };
    },
  });

/** Payment and payout callbacks: same verification, then the ledger applies them (deduplicated by state). */
const ledgerWebhook = (kind: 'payments' | 'payouts', provider: string) =>
  route({
    method: 'post',
    path: `/webhooks/${kind}/${provider}`,
    auth: 'signed',
    tag: 'Provider callbacks',
    summary: `Signed callbacks of the ${provider} ${kind === 'payments' ? 'payment' : 'payout'} provider.`,
    body: Type.Object({}),
    responses: { 200: { description: 'Received', schema: Received }, 401: { description: 'Missing or bad signature: nothing changes' } },
    async handler({ tally, req }) {
      if (kind === 'payments') {
        const adapter = tally.providers.payments.get(provider);
        if (!adapter) throw new HttpError(404, MESSAGES.notFound);
        await tally.ledger.deposits.applyPaymentWebhook(
          provider,
          parseSigned(() => adapter.parseWebhook(rawBody(req), req.headers)),
        );
      } else {
        const adapter = tally.providers.payouts.get(provider);
        if (!adapter) throw new HttpError(404, MESSAGES.notFound);
        await tally.ledger.payouts.applyPayoutWebhook(
          provider,
          parseSigned(() => adapter.parseWebhook(rawBody(req), req.headers)),
        );
      }
      return { status: 200, body: { success: true, received: true } };
    },
  });

/** Card issuer callbacks: an application's decision (or a new status word of the issuer's). */
const cardIssuerWebhook = (provider: string) =>
  route({
    method: 'post',
    path: `/webhooks/cards/${provider}`,
    auth: 'signed',
    tag: 'Provider callbacks',
    summary: `Signed callbacks of the ${provider} card issuer (deduplicated by its event id).`,
    body: Type.Object({}),
    responses: { 200: { description: 'Received', schema: Received }, 401: { description: 'Missing or bad signature: nothing changes' } },
    async handler({ tally, req }) {
      const adapter = tally.providers.cards.get(provider);
      if (!adapter) throw new HttpError(404, MESSAGES.notFound);
      await tally.cards.applications.applyIssuerWebhook(
        provider,
        parseSigned(() => adapter.parseWebhook(rawBody(req), req.headers)),
      );
      return { status: 200, body: { success: true, received: true } };
    },
  });

export const webhookRoutes = [
  identityWebhook('sandbox'),
  identityWebhook('persona'),
  ledgerWebhook('payments', 'mock'),
  ledgerWebhook('payouts', 'mock'),
  cardIssuerWebhook('sandbox'),
];
