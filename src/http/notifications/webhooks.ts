import { type Static, Type } from '@sinclair/typebox';
import { ENDPOINT_NOT_CONFIGURED, MAX_URL_LENGTH, NOTIFICATION_TYPES } from '../../domain/notifications/endpoint';
import { NOTIFICATION_REFUSALS as R } from '../../domain/notifications/refusals';
import { DELIVERY_NOT_FOUND, DELIVERY_STATUSES } from '../../app/notifications/deliveries';
import { routeFor } from '../../platform/http/route';
import type { WebhookSpec } from '../openapi';
import { CursorPage, CursorParam, IsoDateTime, StringEnum, Success, UUID_RE } from '../schemas';
import { NOTIFICATION_DATA, notificationBody } from './bodies';
import { partnerEventRoutes } from './events';
import { sandboxWebhookInboxRoutes } from './sandbox-inbox';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['notifications'] as const;
const route = routeFor<AppServices>()(USES);

const EventTypes = Type.Array(Type.String({ maxLength: 100 }), {
  maxItems: 50,
  'x-error': 'events must be an array of event types',
  description:
    'The notification types to deliver (duplicates count once; an unknown one is 400). Omitted: every type, including types added later; `[]`: none (the events API still lists them).',
});

const ConfigureBody = Type.Object({
  url: Type.String({
    minLength: 1,
    maxLength: MAX_URL_LENGTH,
    'x-error': 'url must be a string',
    description:
      'Where notifications are POSTed: an absolute https URL (sandbox mode also allows http) without credentials or fragment; outside sandbox mode on port 443 only, and its host must not resolve to a private, loopback or link-local address.',
  }),
  events: Type.Optional(EventTypes),
});

const Endpoint = Type.Object(
  {
    url: Type.String({ description: 'Where notifications are POSTed, as the URL parser normalizes it (e.g. a bare host gains a trailing `/`)' }),
    events: Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...NOTIFICATION_TYPES] }), {
      description: 'The notification types delivered: every type when the last PUT omitted `events`, else the ones it named',
    }),
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
    at: Type.String({ format: 'date-time', description: 'When the attempt started (ISO 8601, UTC)' }),
    httpStatus: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The HTTP status the endpoint answered (only 2xx is a success; redirects are not followed); null when it gave no answer',
    }),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why there was no answer (a timeout, a connection error, a refused address, no endpoint configured); null when the endpoint answered',
    }),
    durationMs: Type.Integer({ description: 'Milliseconds from the start of the attempt to the end of its answer or its failure' }),
  },
  { $id: 'WebhookAttempt' },
);

const Delivery = Type.Object(
  {
    id: Type.String({ description: 'The notification id: the body `id` and `webhook-id` of every attempt' }),
    type: Type.String({ description: 'The notification type (the body `type`)' }),
    eventId: Type.String({
      description:
        'The id of the log event the notification was made from (a UUID): the `eventId` filter of this list, not the notification id of GET partner/events/{eventId}',
    }),
    sequence: Type.Integer({ description: 'The body `sequence`: increases with the event log' }),
    createdAt: Type.String({ format: 'date-time', description: 'The body `createdAt`: when the reported event was recorded (ISO 8601, UTC)' }),
    status: StringEnum(DELIVERY_STATUSES, {
      description:
        '`pending` until an attempt gets a 2xx answer (`succeeded`) or the last try, 24 hours after the first attempt, fails (`failed`); a redelivery makes it `pending` again',
    }),
    nextAttemptAt: Type.Union([IsoDateTime, Type.Null()], {
      description:
        'When the next retry is due (ISO 8601, UTC) while `pending` after a failed attempt; null when the next attempt is due at once (new or redelivered) and once `succeeded` or `failed`',
    }),
    attempts: Type.Array(Attempt, { description: 'Its attempts, oldest first (at most the latest 50); empty before the first' }),
  },
  { $id: 'WebhookDelivery' },
);

const DeliveriesQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Deliveries per page, 1 to 100' }),
  cursor: CursorParam(),
  status: Type.Optional(StringEnum(DELIVERY_STATUSES, { description: 'Only deliveries in this status' })),
  type: Type.Optional(StringEnum(NOTIFICATION_TYPES, { description: 'Only notifications of this type' })),
  eventId: Type.Optional(Type.String({ maxLength: 100, description: "Only the deliveries made from this log event (a delivery's `eventId`, exactly)" })),
});

const DeliveryParams = Type.Object({
  id: Type.String({
    maxLength: 100,
    description: "The delivery's `id` (the notification id, `webhook-id`); another partner's, or one that is not a UUID, is 404",
  }),
});

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
    // Not urlTooLong: the body's schema refuses a url that long first (validation_error).
    refuses: [
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
        schema: Success(
          Type.Object(
            {
              secret: Type.String({ description: 'The new signing secret, `whsec_` + base64, shown only here: it signs every delivery from now on' }),
              previousSecretExpiresAt: Type.String({
                format: 'date-time',
                description: 'When the secret this one replaced stops signing: 24 hours from now (ISO 8601, UTC)',
              }),
            },
            { $id: 'WebhookSecretRotation' },
          ),
        ),
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
        schema: Success(CursorPage(Delivery, 'Deliveries, newest first (by `sequence`)', 'WebhookDeliveryPage')),
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
