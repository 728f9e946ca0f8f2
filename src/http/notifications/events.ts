import { type Static, Type } from '@sinclair/typebox';
import { NOTIFICATION_TYPES } from '../../domain/notifications/endpoint';
import { NOTIFICATION_REFUSALS as R } from '../../domain/notifications/refusals';
import { EVENTS_RETENTION_DAYS } from '../../app/notifications/events';
import { routeFor } from '../../platform/http/route';
import { CursorPage, CursorParam, DateFilter, instantOf, StringEnum, Success, UUID_RE } from '../schemas';
import { PartnerEvent } from './bodies';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['notifications'] as const;
const route = routeFor<AppServices>()(USES);

const EventsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Events per page, 1 to 100' }),
  cursor: CursorParam(),
  type: Type.Optional(StringEnum(NOTIFICATION_TYPES, { description: 'Only notifications of this type' })),
  // A date alone is 00:00 UTC of that day, for either bound (as on every route that filters by date).
  createdFrom: Type.Optional(DateFilter('createdFrom', 'lower')),
  createdTo: Type.Optional(DateFilter('createdTo', 'upper')),
});

const EventParams = Type.Object({
  eventId: Type.String({
    maxLength: 100,
    description:
      "The notification's `id` (a UUID, the `webhook-id` of its deliveries); another partner's, one no longer kept, or one that is not a UUID is 404",
  }),
});

const KEPT = `Kept ${EVENTS_RETENTION_DAYS} days at least.`;

/**
 * The events API: every notification made for the partner, whether or not an endpoint is
 * configured or takes its type, each exactly the body its delivery carries (or would carry).
 */
export const partnerEventRoutes = [
  route<unknown, Static<typeof EventsQuery>>({
    method: 'get',
    path: '/api/v1/partner/events',
    auth: 'partner',
    tag: 'Webhooks',
    summary:
      "The partner's notifications, newest first, whether or not an endpoint is configured or subscribed: each `{id, type, createdAt, sequence, data}` as a delivery carries it.",
    description:
      'Cursor pagination: pass `nextCursor` as `cursor` for the next page (null on the last). Filters `type`, `createdFrom` and `createdTo` (inclusive). ' +
      `A partner whose endpoint was down catches up here by \`sequence\`. ${KEPT}`,
    query: EventsQuery,
    responses: {
      200: {
        description: 'A page of events',
        schema: Success(CursorPage(PartnerEvent, 'Notifications, newest first (by `sequence`), each as its delivery carries it', 'PartnerEventPage')),
      },
    },
    refuses: [R.invalidCursor],
    async handler({ services, query, partnerId }) {
      // Bounds outside 1970-9999 are 400 naming the field (year 0 would otherwise be the database's 500).
      const createdFrom = query.createdFrom === undefined ? undefined : instantOf(query.createdFrom, 'createdFrom');
      const createdTo = query.createdTo === undefined ? undefined : instantOf(query.createdTo, 'createdTo');
      const data = await services.notifications.events.list(partnerId, { ...query, createdFrom, createdTo });
      return { status: 200, body: { success: true, data } };
    },
  }),
  route<unknown, unknown, Static<typeof EventParams>>({
    method: 'get',
    path: '/api/v1/partner/events/{eventId}',
    auth: 'partner',
    tag: 'Webhooks',
    summary: "One of the partner's notifications by its id (the body `id` and `webhook-id` of its deliveries), exactly as a delivery carries it.",
    description: KEPT,
    params: EventParams,
    responses: {
      200: { description: 'The event', schema: Success(PartnerEvent) },
      404: { description: R.eventNotFound.template },
    },
    refuses: [R.eventNotFound],
    async handler({ services, params, partnerId }) {
      // Another partner's event, or a malformed id, is indistinguishable from a missing one.
      if (!UUID_RE.test(params.eventId)) throw R.eventNotFound();
      const data = await services.notifications.events.get(partnerId, params.eventId.toLowerCase());
      return { status: 200, body: { success: true, data } };
    },
  }),
];
