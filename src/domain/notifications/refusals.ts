import { refusal } from '../../platform/refusals';

/** Long enough for any real endpoint; bounds what the log and every delivery carry. */
export const MAX_URL_LENGTH = 2_048;

/**
 * The notifications capability's refusals: each its stable code, kind (hence status) and exact
 * message. The url rules each have a code of their own (a partner fixes each differently); the
 * signature and payload refusals answer the provider callbacks and the sandbox inbox alike.
 */
export const NOTIFICATION_REFUSALS = {
  endpointNotConfigured: refusal('webhook_endpoint_not_configured', 'not_found', 'Webhook endpoint not configured'),
  urlTooLong: refusal('webhook_url_too_long', 'invalid', `url must be at most ${MAX_URL_LENGTH} characters`, { param: 'url' }),
  urlNotAbsolute: refusal('webhook_url_not_absolute', 'invalid', 'url must be an absolute URL', { param: 'url' }),
  urlNotHttps: refusal('webhook_url_not_https', 'invalid', 'url must use https', { param: 'url' }),
  /** Sandbox mode's scheme rule: http is allowed too. */
  urlNotHttpOrHttps: refusal('webhook_url_not_http_or_https', 'invalid', 'url must use https or http', { param: 'url' }),
  urlHasCredentials: refusal('webhook_url_has_credentials', 'invalid', 'url must not contain credentials', { param: 'url' }),
  urlHasFragment: refusal('webhook_url_has_fragment', 'invalid', 'url must not contain a fragment', { param: 'url' }),
  urlPortNotAllowed: refusal('webhook_url_port_not_allowed', 'invalid', 'url must use the https port (443)', { param: 'url' }),
  urlHostUnresolvable: refusal('webhook_url_host_unresolvable', 'invalid', 'url host does not resolve', { param: 'url' }),
  urlPrivateAddress: refusal('webhook_url_private_address', 'invalid', 'url must not point to a private, loopback or link-local address', { param: 'url' }),
  unknownEventType: refusal('unknown_event_type', 'invalid', (types: string) => `Unknown event type: ${types}`, ['type'], { param: 'events' }),
  invalidCursor: refusal('invalid_cursor', 'invalid', 'cursor is not valid', { param: 'cursor' }),
  deliveryNotFound: refusal('delivery_not_found', 'not_found', 'Delivery not found'),
  eventNotFound: refusal('event_not_found', 'not_found', 'Event not found'),
  invalidWebhookSignature: refusal('invalid_webhook_signature', 'unauthenticated', 'Invalid webhook signature'),
  invalidWebhookPayload: refusal('invalid_webhook_payload', 'invalid', 'Invalid webhook payload'),
} as const;
