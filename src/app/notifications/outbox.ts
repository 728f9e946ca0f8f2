import type { NotificationType } from '../../domain/notifications/endpoint';
import type { RecordedEvent } from '../../eventstore/port';
import type { Sql, SqlQueryable } from '../../eventstore/sql';
import { RetryLater } from '../../platform/consumers/failures';
import type { Selection, Writes } from '../../platform/consumers/handler';
import type { Projections } from '../../platform/consumers/projections';
import type { Reactor } from '../../platform/consumers/reactors';
import { batchReads, type Notification, type NotificationSources, NOTIFYING_EVENTS, notificationFor, READ_MODELS } from './builders';
import type { EventLog, NewEvent } from './events';
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

/** A built notification, and whether its partner's endpoint (as of its moment) takes its type. */
interface Made {
  notification: Notification;
  delivered: boolean;
}

/**
 * The outbox: a reactor on the log consumer's loop (platform/consumers), its checkpoint the row
 * 'outbox' among the projections'. Each batch of events becomes the notifications it makes, each
 * stored once for its partner (the events API reads them, endpoint or not) and, where the partner
 * listens to its type, a delivery with the very same body: all inserted in the same transaction
 * that moves the checkpoint (compare-and-set), so a crash loses none and makes none twice. Which
 * partner wants which type is folded from the endpoint events in the same order, so a delivery
 * follows the configuration of its moment. One node at a time runs it (the loop's lease), so
 * sequences follow the log.
 */
export class Outbox implements Reactor {
  readonly name = 'outbox';
  readonly eventTypes = [...NOTIFYING_EVENTS, CONFIG_EVENT];
  /** Who listens to what, as of the batch being read (select reads it). */
  private subscriptions: Subscriptions = new Map();
  /** The batch being committed made deliveries. */
  private madeDeliveries = false;
  /** Told after each batch that inserted deliveries. */
  onDeliveries: () => void = () => {};

  constructor(
    private readonly deps: OutboxDeps,
    private readonly events: EventLog,
  ) {}

  /** Every notifying event makes a notification (the events API lists them whether or not a partner listens). */
  async select(): Promise<Selection> {
    const rows = await this.deps.sql.query<{ partner_id: string; events: NotificationType[] | null }>(
      'SELECT partner_id::text, events FROM webhook_subscriptions',
    );
    this.subscriptions = new Map(rows.map((r) => [r.partner_id, r.events]));
    return { eventTypes: this.eventTypes };
  }

  /** The batch's deliveries, built once the read models their data comes from have passed its events. */
  async handle(events: RecordedEvent[]): Promise<Writes> {
    const last = events[events.length - 1]?.position ?? '';
    if (!(await this.deps.engine.waitFor(last, { names: READ_MODELS, timeoutMs: READ_MODELS_WAIT_MS })))
      throw new RetryLater(`the read models notifications are built from (${READ_MODELS.join(', ')}) have not reached ${last}`);
    const { made, changed } = await this.build(events, this.subscriptions);
    this.madeDeliveries = made.some((m) => m.delivered);
    return async (tx) => {
      for (const [partnerId, types] of changed)
        await tx.query(`INSERT INTO webhook_subscriptions (partner_id, events) VALUES ($1, $2) ON CONFLICT (partner_id) DO UPDATE SET events = $2`, [
          partnerId,
          types,
        ]);
      await this.events.insert(tx, toStore(made, events));
      await this.events.pruneIfDue(tx);
    };
  }

  afterCommit(): void {
    if (this.madeDeliveries) this.onDeliveries();
    this.madeDeliveries = false;
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
   * The batch's notifications, in log order, each marked with whether it is delivered. The endpoint
   * events are folded in order first, so each event is judged by the subscriptions of its moment.
   * What a batch reads for several events (its transactions, its users' partners) is read in one
   * query each; the rest of each notification's data a few at a time (the reads are independent;
   * one at a time they would hold the outbox to one database round trip per event).
   */
  private async build(events: RecordedEvent[], subscriptions: Subscriptions): Promise<{ made: Made[]; changed: Subscriptions }> {
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
      candidates.push({ event, subscriptions: current });
    }
    const batch = await batchReads(
      this.deps,
      candidates.map((c) => c.event),
    );
    const built = await mapInOrder(candidates, READ_CONCURRENCY, (c) => notificationFor(this.deps, c.event, batch));
    const made: Made[] = [];
    built.forEach((notification, i) => {
      if (!notification) return;
      const subscribed = candidates[i]?.subscriptions;
      const types = subscribed?.get(notification.partnerId);
      const delivered = subscribed?.has(notification.partnerId) === true && (types === null || types?.includes(notification.type) === true);
      made.push({ notification, delivered });
    });
    return { made, changed };
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

/** The batch's notifications as the event log stores them: in log order, each with its event's time and its data as JSON text. */
function toStore(made: Made[], events: RecordedEvent[]): NewEvent[] {
  const recordedAt = new Map(events.map((e) => [e.id, e.recordedAt]));
  return made.map(({ notification: n, delivered }) => ({
    partnerId: n.partnerId,
    eventId: n.eventId,
    type: n.type,
    createdAt: recordedAt.get(n.eventId) ?? new Date().toISOString(),
    data: JSON.stringify(n.data),
    delivered,
  }));
}
