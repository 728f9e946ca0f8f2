import { type Static, Type } from '@sinclair/typebox';
import { ENDPOINT_NOT_CONFIGURED, MAX_URL_LENGTH, NOTIFICATION_TYPES } from '../../domain/webhooks/endpoint';
import { HttpError } from '../errors';
import { route } from '../route';
import { IsoDateTime, Success } from '../schemas';

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
    async handler({ tally, body, partnerId, command }) {
      const data = await tally.notifications.endpoints.configure(partnerId, body, command());
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
    async handler({ tally, partnerId }) {
      const data = await tally.notifications.endpoints.get(partnerId);
      if (!data) throw new HttpError(404, ENDPOINT_NOT_CONFIGURED);
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
    async handler({ tally, partnerId, command }) {
      const data = await tally.notifications.endpoints.rotate(partnerId, command());
      return { status: 200, body: { success: true, data } };
    },
  }),
];
