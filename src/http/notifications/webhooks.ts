import { type Static, Type } from '@sinclair/typebox';
import { ENDPOINT_NOT_CONFIGURED, MAX_URL_LENGTH, NOTIFICATION_TYPES } from '../../domain/notifications/endpoint';
import { NOTIFICATION_REFUSALS as R } from '../../domain/notifications/refusals';
import { DELIVERY_NOT_FOUND, DELIVERY_STATUSES } from '../../app/notifications/deliveries';
import { routeFor } from '../../platform/http/route';
import type { WebhookSpec } from '../openapi';
import { IsoDateTime, StringEnum, Success, UUID_RE } from '../schemas';
import { NOTIFICATION_DATA, notificationBody } from './bodies';
import { partnerEventRoutes } from './events';
import { sandboxWebhookInboxRoutes } from './sandbox-inbox';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['notifications'] as const;
const route = routeFor<AppServices>()(USES);

const EventTypes = Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50, 'x-error': 'events must be an array of event types' });

const ConfigureBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, 'x-error': 'url must be a string' }),
  events: Type.Optional(EventTypes),
});

const Endpoint = Type.Object(
  {
    url: Type.String(),
    events: Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...NOTIFICATION_TYPES] })),
  },
  { $id: 'WebhookEndpoint' },
);

const EndpointWithSecret = Type.Object(
  { ...Endpoint.properties, secret: Type.String({ description: '`whsec_` + base64: the HMAC key of both signature schemes' }) },
  { $id: 'WebhookEndpointWithSecret' },
);

const SIGNING =
  'Each delivery is a POST of `{id, type, createdAt, sequence, data}` signed twice: `X-Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the secret as shown>`, ' +
  'and Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<t>.<body>" keyed with the base64-decoded part after whsec_>`).';

const Attempt = Type.Object(
  {
    at: IsoDateTime,
    httpStatus: Type.Union([Type.Integer(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    durationMs: Type.Integer(),
  },
  { $id: 'WebhookAttempt' },
);

const Delivery = Type.Object(
  {
    id: Type.String({ description: 'The notification id: the body `id` and `webhook-id` of every attempt' }),
    type: Type.String(),
    eventId: Type.String(),
    sequence: Type.Integer(),
    createdAt: IsoDateTime,
    status: StringEnum(DELIVERY_STATUSES),
    nextAttemptAt: Type.Union([IsoDateTime, Type.Null()]),
    attempts: Type.Array(Attempt),
  },
  { $id: 'WebhookDelivery' },
);

const DeliveriesQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ maxLength: 100 })),
  status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
  type: Type.Optional(StringEnum(NOTIFICATION_TYPES)),
  eventId: Type.Optional(Type.String({ maxLength: 100 })),
});

const DeliveryParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const partnerWebhookRoutes = [
  route<Static<typeof ConfigureBody>>({
    method: 'put',
    path: '/api/v1/partner/webhooks',
    auth: 'partner',
    tag: 'Webhooks',
    summary: 'Set where notifications go and which types (omitted: all); answers the signing secret.',
    description:
      'The url must be https (sandbox mode also allows http) and must not point to a private, loopback or link-local address outside sandbox mode. ' +
      'The secret is made on the first PUT and kept by later ones; rotate it with POST partner/webhooks/secret/rotate. ' +
      SIGNING,
    body: ConfigureBody,
    responses: {
      200: { description: 'The endpoint and its secret', schema: Success(EndpointWithSecret) },
      400: { description: 'A url the rules refuse, or an unknown event type' },
    },
    refuses: [
      R.urlTooLong,
      R.urlNotAbsolute,
      R.urlNotHttps,
      R.urlNotHttpOrHttps,
      R.urlHasCredentials,
      R.urlHasFragment,
      R.urlPortNotAllowed,
      R.urlHostUnresolvable,
      R.urlPrivateAddress,
      R.unknownEventType,
    ],
    async handler({ services, body, partnerId, command }) {
      const data = await services.notifications.endpoints.configure(partnerId, body, command());
      return { status: 200, body: { success: true, data } };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/partner/webhooks',
    auth: 'partner',
    tag: 'Webhooks',
    summary: "The partner's notification endpoint (its secret is shown only on PUT and rotation).",
    responses: {
      200: { description: 'The endpoint', schema: Success(Endpoint) },
      404: { description: ENDPOINT_NOT_CONFIGURED },
    },
    refuses: [R.endpointNotConfigured],
    async handler({ services, partnerId }) {
      const data = await services.notifications.endpoints.get(partnerId);
      if (!data) throw R.endpointNotConfigured();
      return { status: 200, body: { success: true, data } };
    },
  }),
  route({
    method: 'post',
    path: '/api/v1/partner/webhooks/secret/rotate',
    auth: 'partner',
    tag: 'Webhooks',
    summary: 'A new signing secret; for 24 hours deliveries carry signatures with both the new and the previous one.',
    responses: {
      200: {
        description: 'The new secret, and when the previous one stops signing',
        schema: Success(Type.Object({ secret: Type.String(), previousSecretExpiresAt: IsoDateTime }, { $id: 'WebhookSecretRotation' })),
      },
      404: { description: ENDPOINT_NOT_CONFIGURED },
    },
    refuses: [R.endpointNotConfigured],
    async handler({ services, partnerId, command }) {
      const data = await services.notifications.endpoints.rotate(partnerId, command());
      return { status: 200, body: { success: true, data } };
    },
  }),
  route<unknown, Static<typeof DeliveriesQuery>>({
    method: 'get',
    path: '/api/v1/partner/webhooks/deliveries',
    auth: 'partner',
    tag: 'Webhooks',
    summary: "The partner's notifications, newest first, each with every attempt (time, HTTP status or error, duration).",
    description: 'Cursor pagination: pass `nextCursor` as `cursor` for the next page (null on the last).',
    query: DeliveriesQuery,
    responses: {
      200: {
        description: 'A page of deliveries',
        schema: Success(Type.Object({ items: Type.Array(Delivery), nextCursor: Type.Union([Type.String(), Type.Null()]) }, { $id: 'WebhookDeliveryPage' })),
      },
    },
    refuses: [R.invalidCursor],
    async handler({ services, query, partnerId }) {
      const data = await services.notifications.deliveries.list(partnerId, query);
      return { status: 200, body: { success: true, data } };
    },
  }),
  route<unknown, unknown, Static<typeof DeliveryParams>>({
    method: 'post',
    path: '/api/v1/partner/webhooks/deliveries/{id}/redeliver',
    auth: 'partner',
    tag: 'Webhooks',
    summary: 'Send a notification again now, with the same id; if it fails, it is retried for 24 hours like a new one.',
    params: DeliveryParams,
    responses: {
      202: { description: 'Queued to be sent now', schema: Success(Delivery) },
      404: { description: DELIVERY_NOT_FOUND },
    },
    refuses: [R.deliveryNotFound],
    async handler({ services, params, partnerId }) {
      if (!UUID_RE.test(params.id)) throw R.deliveryNotFound();
      const data = await services.notifications.redeliver(partnerId, params.id.toLowerCase());
      return { status: 202, body: { success: true, data } };
    },
  }),
  ...partnerEventRoutes,
  ...sandboxWebhookInboxRoutes,
];

export const notificationWebhooks: WebhookSpec[] = NOTIFICATION_DATA.map(({ type, summary, data }) => ({
  name: type,
  summary: `${summary} ${SIGNING}`,
  body: notificationBody(type, data),
}));
