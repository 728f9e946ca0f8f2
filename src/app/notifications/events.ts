import type { NotificationType } from '../../domain/notifications/endpoint';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications/refusals';
import { plainArrayLiteral, type Sql, type SqlQueryable, textArrayLiteral } from '../../eventstore/sql';
import { PageFilter, pageOf } from './pages';

/**
 * How long a partner's notifications stay readable through the events API (docs/decisions.md,
 * "Events API": 30 days at least). A row is dropped only once it is older than this.
 */
export const EVENTS_RETENTION_DAYS = 30;
/** How often a node drops what is past the retention (with the outbox's next batch). */
const PRUNE_EVERY_MS = 3_600_000;

/** One notification as a delivery carries it, and as the events API answers it. */
export interface EventBody {
  id: string;
  type: NotificationType;
  createdAt: string;
  sequence: number;
  data: unknown;
}

/** One built notification as the outbox hands it to be stored: for its partner, about a log event. */
export interface NewEvent {
  partnerId: string;
  eventId: string;
  type: NotificationType;
  /** The log event's time. */
  createdAt: string;
  /** The notification's `data`, as JSON text. */
  data: string;
  /** Whether the partner's endpoint takes it: a delivery is made of it too. */
  delivered: boolean;
}

/**
 * Every notification the outbox made, once per partner, whether or not the partner has an endpoint
 * or listens to its type: the events API reads them here (newest first by `sequence`), so a partner
 * whose endpoint was down catches up on what it missed. Kept EVENTS_RETENTION_DAYS at least.
 */
export class EventLog {
  private lastPruneMs = 0;

  constructor(private readonly sql: Sql) {}

  /**
   * Stores the batch's notifications in the outbox's transaction, in one statement: each numbered by
   * the next `sequence` in the batch's order, its body `{id, type, createdAt, sequence, data}` fixed
   * once as text (a retry of its delivery sends the very same bytes, and the events API answers them);
   * and of those its partner listens to, a delivery with the stored id, sequence and body. One already
   * stored (same partner, log event, type) is left as it is, and its delivery made from it.
   */
  async insert(tx: SqlQueryable, events: NewEvent[]): Promise<void> {
    if (events.length === 0) return;
    await tx.query(
      `WITH input AS MATERIALIZED (
         SELECT t.*, gen_random_uuid() AS id, nextval('webhook_sequence') AS sequence
           FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[],
                       ARRAY(SELECT x.v::text FROM json_array_elements($5::json) WITH ORDINALITY x(v, i) ORDER BY x.i), $6::boolean[]) WITH ORDINALITY
             AS t(partner_id, event_id, type, created_at, data, delivered, n)
       ),
       made AS (
         INSERT INTO notification_events (id, partner_id, event_id, type, sequence, created_at, body)
         SELECT id, partner_id, event_id, type, sequence, created_at::timestamptz,
                '{"id":"' || id || '","type":"' || type || '","createdAt":"' || created_at || '","sequence":' || sequence || ',"data":' || data || '}'
           FROM input ORDER BY n
         ON CONFLICT (partner_id, event_id, type) DO NOTHING
         RETURNING id, partner_id, event_id, type, sequence, created_at, body
       ),
       stored AS (
         SELECT * FROM made
         UNION ALL
         SELECT e.id, e.partner_id, e.event_id, e.type, e.sequence, e.created_at, e.body
           FROM notification_events e JOIN input i USING (partner_id, event_id, type)
       )
       INSERT INTO webhook_deliveries (id, partner_id, event_id, type, sequence, created_at, body, next_attempt_at)
       SELECT s.id, s.partner_id, s.event_id, s.type, s.sequence, s.created_at, s.body, '-infinity'::timestamptz
         FROM stored s JOIN input i USING (partner_id, event_id, type)
        WHERE i.delivered
        ORDER BY s.sequence
       ON CONFLICT (partner_id, event_id, type) DO NOTHING`,
      // The arrays written here, not by the driver (textArrayLiteral); the data, JSON texts full of
      // quotes the driver would escape one by one, travel as one JSON array, unpacked in order.
      [
        textArrayLiteral(events.map((e) => e.partnerId)),
        textArrayLiteral(events.map((e) => e.eventId)),
        textArrayLiteral(events.map((e) => e.type)),
        textArrayLiteral(events.map((e) => e.createdAt)),
        `[${events.map((e) => e.data).join(',')}]`,
        plainArrayLiteral(events.map((e) => (e.delivered ? 't' : 'f'))),
      ],
      // Prepared: every outbox batch makes its notifications with it.
      'tally_notifications_insert',
    );
  }

  /** Drops what is past the retention, at most once an hour on this node (in the outbox's transaction). */
  async pruneIfDue(tx: SqlQueryable, nowMs = Date.now()): Promise<void> {
    if (nowMs - this.lastPruneMs < PRUNE_EVERY_MS) return;
    await tx.query(`DELETE FROM notification_events WHERE created_at < now() - make_interval(days => $1)`, [EVENTS_RETENTION_DAYS]);
    this.lastPruneMs = nowMs;
  }

  /** GET partner/events: newest first, cursor pagination, filters `type` and `createdFrom`/`createdTo` (inclusive). */
  async list(
    partnerId: string,
    query: { limit: number; cursor?: string; type?: string; createdFrom?: string; createdTo?: string },
  ): Promise<{ items: EventBody[]; nextCursor: string | null }> {
    const filter = new PageFilter('partner_id = $1', partnerId, 'sequence', query.cursor);
    if (query.type) filter.add('type = ?', query.type);
    if (query.createdFrom) filter.add('created_at >= ?::timestamptz', query.createdFrom);
    if (query.createdTo) filter.add('created_at <= ?::timestamptz', query.createdTo);
    const rows = await this.sql.query<{ body: string }>(`SELECT body FROM notification_events ${filter.tail('sequence', query.limit)}`, filter.params);
    return pageOf(
      rows,
      query.limit,
      (r) => JSON.parse(r.body) as EventBody,
      (body) => body.sequence,
    );
  }

  /** GET partner/events/:eventId: one of the partner's own (another partner's is not found). */
  async get(partnerId: string, id: string): Promise<EventBody> {
    const [row] = await this.sql.query<{ body: string }>('SELECT body FROM notification_events WHERE id = $1 AND partner_id = $2', [id, partnerId]);
    if (!row) throw NOTIFICATION_REFUSALS.eventNotFound();
    return JSON.parse(row.body) as EventBody;
  }
}
