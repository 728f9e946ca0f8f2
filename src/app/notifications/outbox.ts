import { BackgroundLoop } from '../../platform/consumers/background-loop';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { NotificationType } from '../../domain/notifications/endpoint';
import { comparePositions, type RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';
import { batchReads, type Notification, type NotificationSources, NOTIFYING_EVENTS, notificationFor, partnerOfEvent, READ_MODELS } from './builders';
import type { Projections } from '../../platform/consumers/projections';

const BATCH_SIZE = 200;
/** Short, so a crashed node holds up notifications for seconds. */
const LEASE_SECONDS = 10;
/**
 * The lease is renewed this often while held, not on every batch (a durable write each): in between,
 * a batch starts from the checkpoint this node last committed, and its commit checks that the
 * checkpoint and the lease are still this node's.
 */
const LEASE_RENEW_EVERY_MS = 3_000;
/**
 * After a batch that did not fill up, the next one waits until this long after it began: under a
 * stream of appends the outbox takes them a batch at a time, not one round of reads and a commit
 * per append. Notifications wait at most this much longer.
 */
const PACE_MS = 40;
const IDLE_WAIT_MS = 250;
const FAILURE_BACKOFF_MS = 1_000;
const FAILURE_BACKOFF_MAX_MS = 60_000;
/** How long a batch waits for the read models its data comes from before trying again. */
const READ_MODELS_WAIT_MS = 5_000;

const CONFIG_EVENT = 'WebhookEndpointConfigured';
/** Notification data read at once by a batch: enough to overlap round trips, few beside the pool's connections. */
const READ_CONCURRENCY = 8;

class CheckpointMoved extends Error {}

type Subscriptions = Map<string, NotificationType[] | null>;

export type OutboxDeps = NotificationSources & {
  engine: Pick<Projections, 'waitFor'>;
};

/**
 * The outbox: one more consumer of the log, with its own checkpoint. Each batch of events becomes
 * the deliveries it makes, inserted in the same transaction that moves the checkpoint (compare-and-
 * set), so a crash loses none and makes none twice. Which partner wants which type is folded from
 * the endpoint events in the same order, so a notification follows the configuration of its moment.
 * One node at a time runs it (a lease), so sequences follow the log.
 */
export class Outbox {
  private readonly background = new BackgroundLoop(() => this.run());
  private failures = 0;
  /** While this node holds the lease: the checkpoint it last committed, and when to renew the lease. */
  private lease: { position: string; renewAt: number } | undefined;
  /** The last batch was full: more events wait. */
  private backlog = false;
  /** Told after each batch that inserted deliveries. */
  onDeliveries: () => void = () => {};

  constructor(
    private readonly deps: OutboxDeps,
    private readonly log: Logger,
    private readonly nodeId: string,
  ) {}

  start(): void {
    this.background.start();
  }

  async stop(): Promise<void> {
    await this.background.stop();
    this.lease = undefined;
    await this.deps.sql
      .query(`UPDATE webhook_outbox_checkpoint SET owner = NULL, lease_until = NULL WHERE name = 'outbox' AND owner = $1`, [this.nodeId])
      .catch((error) => this.log.warn({ err: error }, 'outbox lease not released at stop: it lapses by itself'));
  }

  private async run(): Promise<void> {
    while (this.background.running) {
      let worked = false;
      const started = Date.now();
      try {
        worked = await this.step();
        this.failures = 0;
      } catch (error) {
        this.failures++;
        const delayMs = Math.min(FAILURE_BACKOFF_MAX_MS, FAILURE_BACKOFF_MS * 2 ** (this.failures - 1));
        this.log.error({ err: error, attempts: this.failures, retryInMs: delayMs }, 'notification outbox batch failed; retrying');
        await this.background.sleep(delayMs);
        continue;
      }
      if (!worked) await Promise.race([this.deps.store.waitForAppend(IDLE_WAIT_MS), this.background.sleep(IDLE_WAIT_MS)]);
      else if (!this.backlog && started + PACE_MS > Date.now()) await this.background.sleep(started + PACE_MS - Date.now());
    }
  }

  /** One batch; false when there was nothing to do (or another node holds the outbox). */
  async step(): Promise<boolean> {
    const position = await this.holdLease();
    if (position === null) return false;
    const head = await this.deps.store.headPosition();
    const subscriptions = await this.subscriptions();
    // With no partner listening, events notify nobody until an endpoint is configured: only that
    // configuration is read (up to the first one), not every event.
    const listening = subscriptions.size > 0;
    const maxCount = listening ? BATCH_SIZE : 1;
    const events = await this.deps.store.readAll({
      fromPosition: position || undefined,
      filter: { eventTypes: listening ? [...NOTIFYING_EVENTS, CONFIG_EVENT] : [CONFIG_EVENT] },
      maxCount,
      projectionOnly: true,
    });
    this.backlog = events.length === maxCount;
    const last = events[events.length - 1]?.position ?? position;
    // A short read drained every visible event of these types up to `head` (read before it): the
    // checkpoint may move there, past events the outbox does not need.
    const to = events.length < maxCount && comparePositions(head, last) > 0 ? head : last;
    if (comparePositions(to, position) <= 0) return false;
    // With no partner listening (and none starting to), the batch only moves the checkpoint: no read model is needed.
    const reads = subscriptions.size > 0 || events.some((e) => e.type === CONFIG_EVENT);
    if (reads && !(await this.deps.engine.waitFor(last, { names: READ_MODELS, timeoutMs: READ_MODELS_WAIT_MS })))
      throw new Error(`the read models notifications are built from (${READ_MODELS.join(', ')}) have not reached ${last}`);
    const { notifications, changed } = await this.build(events, subscriptions);
    try {
      await this.deps.sql.transaction(async (tx) => {
        const [row] = await tx.query<{ position: string; owner: string | null }>(
          `SELECT position, owner FROM webhook_outbox_checkpoint WHERE name = 'outbox' FOR UPDATE`,
        );
        if (row?.position !== position || row.owner !== this.nodeId) throw new CheckpointMoved();
        for (const [partnerId, types] of changed)
          await tx.query(`INSERT INTO webhook_subscriptions (partner_id, events) VALUES ($1, $2) ON CONFLICT (partner_id) DO UPDATE SET events = $2`, [
            partnerId,
            types,
          ]);
        await insertDeliveries(tx, notifications, events);
        await tx.query(`UPDATE webhook_outbox_checkpoint SET position = $1 WHERE name = 'outbox'`, [to]);
      });
    } catch (error) {
      // Another node took over (the next step finds out), or the commit failed: the lease is read again.
      this.lease = undefined;
      if (error instanceof CheckpointMoved) return true;
      throw error;
    }
    if (this.lease) this.lease.position = to;
    if (notifications.length > 0) this.onDeliveries();
    return true;
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

  private async subscriptions(): Promise<Subscriptions> {
    const rows = await this.deps.sql.query<{ partner_id: string; events: NotificationType[] | null }>(
      'SELECT partner_id::text, events FROM webhook_subscriptions',
    );
    return new Map(rows.map((r) => [r.partner_id, r.events]));
  }

  /** Takes or renews the outbox's lease; its checkpoint when held, null when another node holds it. */
  private async holdLease(): Promise<string | null> {
    if (this.lease && Date.now() < this.lease.renewAt) return this.lease.position;
    this.lease = undefined;
    const [row] = await this.deps.sql.query<{ position: string }>(
      `UPDATE webhook_outbox_checkpoint SET owner = $1, lease_until = now() + make_interval(secs => $2)
        WHERE name = 'outbox' AND (owner IS NULL OR owner = $1 OR lease_until < now()) RETURNING position`,
      [this.nodeId, LEASE_SECONDS],
    );
    if (row) this.lease = { position: row.position, renewAt: Date.now() + LEASE_RENEW_EVERY_MS };
    return row ? row.position : null;
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
