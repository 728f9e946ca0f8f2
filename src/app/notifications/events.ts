import type { NotificationType } from '../../domain/notifications/endpoint';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications/refusals';
import type { Sql, SqlQueryable } from '../../eventstore/sql';
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

/** One built notification as the outbox stores it: for its partner, about a log event. */
export interface StoredEvent {
  partnerId: string;
  eventId: string;
  body: EventBody;
  /** The body's exact text: what every delivery of it sends, byte for byte. */
  text: string;
}

/**
 * Every notification the outbox made, once per partner, whether or not the partner has an endpoint
 * or listens to its type: the events API reads them here (newest first by `sequence`), so a partner
 * whose endpoint was down catches up on what it missed. Kept EVENTS_RETENTION_DAYS at least.
 */
export class EventLog {
  private lastPruneMs = 0;

  constructor(private readonly sql: Sql) {}

  /** Stores the batch's notifications in the outbox's transaction; one already stored (same partner, log event, type) is left as it is. */
  async insert(tx: SqlQueryable, events: StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    await tx.query(
      `INSERT INTO notification_events (id, partner_id, event_id, type, sequence, created_at, body)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[])
       ON CONFLICT (partner_id, event_id, type) DO NOTHING`,
      [
        events.map((e) => e.body.id),
        events.map((e) => e.partnerId),
        events.map((e) => e.eventId),
        events.map((e) => e.body.type),
        events.map((e) => String(e.body.sequence)),
        events.map((e) => e.body.createdAt),
        events.map((e) => e.text),
      ],
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
