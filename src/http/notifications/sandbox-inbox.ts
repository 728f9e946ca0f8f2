import { type Static, Type } from '@sinclair/typebox';
import { NOTIFICATION_REFUSALS as R } from '../../domain/notifications/refusals';
import { INBOX_KEEP, INBOX_SIGNATURE_ERROR } from '../../app/notifications/inbox';
import { routeFor } from '../../platform/http/route';
import { CursorPage, CursorParam, Success } from '../schemas';
import { type AppServices, sandboxOf } from '../services';

/** The services these routes use. */
const USES = ['notifications', 'providers'] as const;
const route = routeFor<AppServices>()(USES);

const INBOX_PATH = '/sandbox/v1/webhook-inbox';

/** A header's value when sent once (a repeated one is no signature). */
const one = (value: string | string[] | undefined) => (typeof value === 'string' ? value : undefined);

const InboxQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Received notifications per page, 1 to 100' }),
  cursor: CursorParam(),
});

const InboxItem = Type.Object(
  {
    id: Type.Integer({ description: 'Increases with arrival' }),
    receivedAt: Type.String({ format: 'date-time', description: 'When the receiver kept it (ISO 8601, UTC)' }),
    deliveryId: Type.String({ description: 'The notification id (`webhook-id`), as GET partner/webhooks/deliveries lists it' }),
    headers: Type.Object(
      {
        'webhook-id': Type.String({ description: 'The `webhook-id` header: the notification id' }),
        'webhook-timestamp': Type.String({ description: "The `webhook-timestamp` header: the attempt's time in unix seconds, as text" }),
        'webhook-signature': Type.String({
          description: "The `webhook-signature` header as sent: `v1,<base64>` per signing secret, space-separated (two during a rotation's 24 hours)",
        }),
        'x-webhook-signature': Type.Union([Type.String(), Type.Null()], {
          description: 'The `X-Webhook-Signature` header as sent (`t=<unix seconds>,v1=<hex>`...), not checked by the receiver; null when absent',
        }),
      },
      { description: 'The signature headers the delivery carried' },
    ),
    rawBody: Type.String({ description: 'The body byte for byte, as the signatures cover it' }),
    notification: Type.Object({}, { additionalProperties: true, description: 'The body parsed: `{id, type, createdAt, sequence, data}`' }),
  },
  { $id: 'SandboxWebhookInboxItem' },
);

/** The sandbox's webhook receiver: point partner/webhooks at it, then read what arrived. */
export const sandboxWebhookInboxRoutes = [
  route({
    method: 'post',
    path: INBOX_PATH,
    auth: 'public',
    tag: 'Sandbox',
    summary:
      "The sandbox's webhook receiver: PUT partner/webhooks with this url (sandbox mode allows http and the service's own address) and read what arrived with GET.",
    description:
      'Reads the signature headers of a delivery (`webhook-id`, `webhook-timestamp`, `webhook-signature`, and `X-Webhook-Signature`, kept as sent). ' +
      `Keeps a notification only when this service signed it: \`webhook-id\` names one of its deliveries and the Standard Webhooks signature verifies with that partner's secret (timestamp within 5 minutes). ` +
      `Anything else is 401 and kept nowhere. The newest ${INBOX_KEEP} per partner are kept.`,
    body: Type.Object({}, { additionalProperties: true, description: 'A notification as this service sends it: `{id, type, createdAt, sequence, data}`' }),
    responses: {
      200: {
        description: 'Kept',
        schema: Type.Object(
          {
            success: Type.Literal(true, { description: 'Always true on a success answer' }),
            received: Type.Literal(true, { description: 'Always true: the notification was verified and kept' }),
          },
          { $id: 'SandboxWebhookReceived' },
        ),
      },
      401: { description: INBOX_SIGNATURE_ERROR },
    },
    refuses: [R.invalidWebhookSignature],
    async handler({ services, req }) {
      sandboxOf(services);
      const raw = (req.rawBody ?? Buffer.alloc(0)).toString('utf8');
      await services.notifications.inbox.receive(raw, {
        id: one(req.headers['webhook-id']),
        timestamp: one(req.headers['webhook-timestamp']),
        signature: one(req.headers['webhook-signature']),
        xWebhookSignature: one(req.headers['x-webhook-signature']),
      });
      return { status: 200, body: { success: true, received: true } };
    },
  }),
  route<unknown, Static<typeof InboxQuery>>({
    method: 'get',
    path: INBOX_PATH,
    auth: 'partner',
    tag: 'Sandbox',
    summary: "What the sandbox's webhook receiver got for the calling partner, newest first (only its own notifications).",
    description: 'Cursor pagination: pass `nextCursor` as `cursor` for the next page (null on the last).',
    query: InboxQuery,
    responses: {
      200: {
        description: 'A page of received notifications',
        schema: Success(CursorPage(InboxItem, 'What arrived, newest first', 'SandboxWebhookInboxPage')),
      },
    },
    refuses: [R.invalidCursor],
    async handler({ services, query, partnerId }) {
      sandboxOf(services);
      const data = await services.notifications.inbox.list(partnerId, query);
      return { status: 200, body: { success: true, data } };
    },
  }),
];
