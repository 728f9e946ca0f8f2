import { randomUUID } from 'node:crypto';
import type { NotificationType } from '../../domain/notifications/endpoint';
import type { RecordedEvent } from '../../eventstore/port';
import type { Sql, SqlQueryable } from '../../eventstore/sql';
import { RetryLater } from '../../platform/consumers/failures';
import type { Selection, Writes } from '../../platform/consumers/handler';
import type { Projections } from '../../platform/consumers/projections';
import type { Reactor } from '../../platform/consumers/reactors';
import { batchReads, type Notification, type NotificationSources, NOTIFYING_EVENTS, notificationFor, partnerOfEvent, READ_MODELS } from './builders';
import { LIMITS } from '../../platform/limits';

/** How long a batch waits for the read models its data comes from before it is retried. */
const READ_MODELS_WAIT_MS = LIMITS.consumers.reactorReadModelsWaitMs;

const CONFIG_EVENT = 'WebhookEndpointConfigured';
/** Notification data read at once by a batch: enough to overlap round trips, few beside the pool's connections. */
const READ_CONCURRENCY = 8;

type Subscriptions = Map<string, NotificationType[] | null>;

export type OutboxDeps = NotificationSources & {
  sql: Sql;
  engine: Pick<Projections, 'waitFor'>;
};

/**
 * The outbox: a reactor on the log consumer's loop (platform/consumers), its checkpoint the row
 * 'outbox' among the projections'. Each batch of events becomes the deliveries it makes, inserted
 * in the same transaction that moves the checkpoint (compare-and-set), so a crash loses none and
 * makes none twice. Which partner wants which type is folded from the endpoint events in the same
 * order, so a notification follows the configuration of its moment. One node at a time runs it (the
 * loop's lease), so sequences follow the log.
 */
export class Outbox implements Reactor {
  readonly name = 'outbox';
  readonly eventTypes = [...NOTIFYING_EVENTS, CONFIG_EVENT];
  /** Who listens to what, as of the batch being read (select reads it). */
  private subscriptions: Subscriptions = new Map();
  /** The batch being committed made deliveries. */
  private made = false;
  /** Told after each batch that inserted deliveries. */
  onDeliveries: () => void = () => {};

  constructor(private readonly deps: OutboxDeps) {}

  /**
   * With no partner listening, events notify nobody until an endpoint is configured: only that
   * configuration is read (up to the first one), not every event; the checkpoint moves past the rest.
   */
  async select(): Promise<Selection> {
    const rows = await this.deps.sql.query<{ partner_id: string; events: NotificationType[] | null }>(
      'SELECT partner_id::text, events FROM webhook_subscriptions',
    );
    this.subscriptions = new Map(rows.map((r) => [r.partner_id, r.events]));
    return this.subscriptions.size > 0 ? { eventTypes: this.eventTypes } : { eventTypes: [CONFIG_EVENT], maxCount: 1 };
  }

  /** The batch's deliveries, built once the read models their data comes from have passed its events. */
  async handle(events: RecordedEvent[]): Promise<Writes> {
    const last = events[events.length - 1]?.position ?? '';
    if (!(await this.deps.engine.waitFor(last, { names: READ_MODELS, timeoutMs: READ_MODELS_WAIT_MS })))
      throw new RetryLater(`the read models notifications are built from (${READ_MODELS.join(', ')}) have not reached ${last}`);
    const { notifications, changed } = await this.build(events, this.subscriptions);
    this.made = notifications.length > 0;
    return async (tx) => {
      for (const [partnerId, types] of changed)
        await tx.query(`INSERT INTO webhook_subscriptions (partner_id, events) VALUES ($1, $2) ON CONFLICT (partner_id) DO UPDATE SET events = $2`, [
          partnerId,
          types,
        ]);
      await insertDeliveries(tx, notifications, events);
    };
  }

  afterCommit(): void {
    if (this.made) this.onDeliveries();
    this.made = false;
  }

  /**
   * Its checkpoint before it was a reactor: the row of its own table, where a node upgraded over an
   * existing database goes on from (the table is left as it was: a node of the release before reads it still).
   */
  async startFrom(tx: SqlQueryable): Promise<string> {
    const [table] = await tx.query<{ t: string | null }>(`SELECT to_regclass('webhook_outbox_checkpoint')::text AS t`);
    if (!table?.t) return '';
    const [row] = await tx.query<{ position: string }>(`SELECT position FROM webhook_outbox_checkpoint WHERE name = 'outbox'`);
    return row?.position ?? '';
  }

  /**
   * The batch's notifications, in log order. The endpoint events are folded in order first, so each
   * event is judged by the subscriptions of its moment. What tells an event's partner cheaply (the
   * event itself, or one query for the whole batch: its users' partners, its transactions) is read
   * first, and an event for a partner with no endpoint goes no further; the others' data is read a
   * few at a time (the reads are independent; one at a time they would hold the outbox to one
   * database round trip per event).
   */
  private async build(events: RecordedEvent[], subscriptions: Subscriptions): Promise<{ notifications: Notification[]; changed: Subscriptions }> {
    const changed: Subscriptions = new Map();
    let current = subscriptions;
    const candidates: Array<{ event: RecordedEvent; subscriptions: Subscriptions }> = [];
    for (const event of events) {
      if (event.type === CONFIG_EVENT) {
        const d = event.data as { partnerId: string; events: NotificationType[] | null };
        current = new Map(current).set(d.partnerId, d.events);
        changed.set(d.partnerId, d.events);
        continue;
      }
      const named = (event.data as { partnerId?: unknown }).partnerId;
      if (current.size === 0 || (typeof named === 'string' && !current.has(named))) continue;
      candidates.push({ event, subscriptions: current });
    }
    const batch = await batchReads(
      this.deps,
      candidates.map((c) => c.event),
    );
    const wanted = candidates.filter((c) => {
      const partnerId = partnerOfEvent(c.event, batch);
      return partnerId === undefined || c.subscriptions.has(partnerId);
    });
    const made = await mapInOrder(wanted, READ_CONCURRENCY, (w) => notificationFor(this.deps, w.event, batch));
    const notifications: Notification[] = [];
    made.forEach((notification, i) => {
      const subscribed = wanted[i]?.subscriptions;
      if (!notification || !subscribed?.has(notification.partnerId)) return;
      const types = subscribed.get(notification.partnerId);
      if (types === null || types?.includes(notification.type)) notifications.push(notification);
    });
    return { notifications, changed };
  }
}

/** `fn` over `items` with at most `limit` at once; the results in the items' order. */
async function mapInOrder<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * Inserts the batch's deliveries in log order, each with the next sequence and its body fixed once
 * (a retry sends the very same bytes); a delivery already made for the same event, partner and type
 * is left as it is.
 */
async function insertDeliveries(tx: SqlQueryable, notifications: Notification[], events: RecordedEvent[]): Promise<void> {
  if (notifications.length === 0) return;
  const recordedAt = new Map(events.map((e) => [e.id, e.recordedAt]));
  const sequences = await tx.query<{ n: string }>(`SELECT nextval('webhook_sequence')::text AS n FROM generate_series(1, $1)`, [notifications.length]);
  const ordered = sequences.map((s) => BigInt(s.n)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const rows = notifications.map((n, i) => {
    const id = randomUUID();
    const createdAt = recordedAt.get(n.eventId) ?? new Date().toISOString();
    const sequence = Number(ordered[i]);
    return { id, n, createdAt, sequence, body: JSON.stringify({ id, type: n.type, createdAt, sequence, data: n.data }) };
  });
  await tx.query(
    `INSERT INTO webhook_deliveries (id, partner_id, event_id, type, sequence, created_at, body, next_attempt_at)
     SELECT id, partner_id, event_id, type, sequence, created_at, body, '-infinity'::timestamptz
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[])
         AS t(id, partner_id, event_id, type, sequence, created_at, body)
     ON CONFLICT (partner_id, event_id, type) DO NOTHING`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.n.partnerId),
      rows.map((r) => r.n.eventId),
      rows.map((r) => r.n.type),
      rows.map((r) => String(r.sequence)),
      rows.map((r) => r.createdAt),
      rows.map((r) => r.body),
    ],
  );
}
