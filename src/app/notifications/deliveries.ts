import type { Sql } from '../../eventstore/sql';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications/refusals';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const DELIVERY_NOT_FOUND = NOTIFICATION_REFUSALS.deliveryNotFound.template;

export interface AttemptView {
  at: string;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryView {
  id: string;
  type: string;
  eventId: string;
  sequence: number;
  createdAt: string;
  status: DeliveryStatus;
  nextAttemptAt: string | null;
  attempts: AttemptView[];
}

/** Attempts shown per delivery: far more than 24 hours of doubling waits make. */
const MAX_ATTEMPTS_SHOWN = 50;

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

export { decodeCursor, encodeCursor } from './pages';
import { PageFilter, pageOf } from './pages';

/** The delivery log a partner reads: newest first, each delivery with every attempt. */
export class DeliveryLog {
  constructor(private readonly sql: Sql) {}

  async list(
    partnerId: string,
    query: { limit: number; cursor?: string; status?: DeliveryStatus; type?: string; eventId?: string },
  ): Promise<{ items: DeliveryView[]; nextCursor: string | null }> {
    const filter = new PageFilter('d.partner_id = $1', partnerId, 'd.sequence', query.cursor);
    if (query.status) filter.add('d.status = ?', query.status);
    if (query.type) filter.add('d.type = ?', query.type);
    if (query.eventId) filter.add('d.event_id = ?', query.eventId);
    const rows = await this.sql.query<DeliveryRow>(`${SELECT} ${filter.tail('d.sequence', query.limit)}`, filter.params);
    return pageOf(rows, query.limit, toView, (view) => view.sequence);
  }

  /** Sends a delivery again now, with the same id; its 24 hours of retries start over. */
  async redeliver(partnerId: string, id: string): Promise<DeliveryView> {
    const updated = await this.sql.query<{ id: string }>(
      `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = '-infinity', first_attempt_at = NULL
        WHERE id = $1 AND partner_id = $2 RETURNING id::text`,
      [id, partnerId],
    );
    if (updated.length === 0) throw NOTIFICATION_REFUSALS.deliveryNotFound();
    const [row] = await this.sql.query<DeliveryRow>(`${SELECT} WHERE d.id = $1`, [id]);
    if (!row) throw NOTIFICATION_REFUSALS.deliveryNotFound();
    return toView(row);
  }
}

interface DeliveryRow {
  id: string;
  type: string;
  event_id: string;
  sequence: string;
  created_at: string;
  status: DeliveryStatus;
  next_attempt_at: string | null;
  attempts: AttemptView[] | null;
}

const SELECT = `SELECT d.id::text, d.type, d.event_id, d.sequence::text, to_char(d.created_at AT TIME ZONE 'UTC', ${ISO}) AS created_at, d.status,
  CASE WHEN d.status = 'pending' AND d.next_attempt_at > '-infinity' THEN to_char(d.next_attempt_at AT TIME ZONE 'UTC', ${ISO}) END AS next_attempt_at,
  (SELECT json_agg(json_build_object('at', to_char(a.at AT TIME ZONE 'UTC', ${ISO}), 'httpStatus', a.http_status, 'error', a.error, 'durationMs', a.duration_ms) ORDER BY a.attempt)
     FROM (SELECT * FROM webhook_attempts WHERE delivery_id = d.id ORDER BY attempt DESC LIMIT ${MAX_ATTEMPTS_SHOWN}) a) AS attempts
  FROM webhook_deliveries d`;

const toView = (r: DeliveryRow): DeliveryView => ({
  id: r.id,
  type: r.type,
  eventId: r.event_id,
  sequence: Number(r.sequence),
  createdAt: r.created_at,
  status: r.status,
  nextAttemptAt: r.next_attempt_at,
  attempts: r.attempts ?? [],
});
