import client from 'prom-client';
import type { Sql } from '../../eventstore/sql';
import { ATTEMPT_OUTCOMES, type Dispatcher } from './dispatcher';

/**
 * Notification figures, read at scrape time: deliveries waiting (queue depth), the age of the oldest
 * one still pending, and this node's attempts by outcome.
 */
export function registerNotificationMetrics(registry: client.Registry, sources: { sql: Sql; dispatcher: Pick<Dispatcher, 'attempts'> }): void {
  let read: { at: number; queue: Promise<{ depth: number; oldestSeconds: number } | null> } | undefined;
  // One query per scrape, shared by both gauges; the store out of reach keeps their last values.
  const queue = () => {
    if (!read || Date.now() - read.at > 1_000)
      read = {
        at: Date.now(),
        queue: sources.sql
          .query<{ depth: string; oldest: string | null }>(
            `SELECT count(*)::text AS depth, extract(epoch FROM now() - min(created_at))::text AS oldest FROM webhook_deliveries WHERE status = 'pending'`,
          )
          .then(([row]) => ({ depth: Number(row?.depth ?? 0), oldestSeconds: Math.max(0, Number(row?.oldest ?? 0)) }))
          .catch(() => null),
      };
    return read.queue;
  };
  new client.Gauge({
    name: 'tally_webhook_queue_depth',
    help: 'Partner notifications waiting for a successful delivery (first attempts and retries)',
    registers: [registry],
    async collect() {
      const q = await queue();
      if (q) this.set(q.depth);
    },
  });
  new client.Gauge({
    name: 'tally_webhook_oldest_pending_seconds',
    help: 'Age of the oldest partner notification still pending (0 when none)',
    registers: [registry],
    async collect() {
      const q = await queue();
      if (q) this.set(q.oldestSeconds);
    },
  });
  const seen = new Map<string, number>();
  new client.Counter({
    name: 'tally_webhook_attempts_total',
    help: 'Delivery attempts made by this node, by outcome',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const outcome of ATTEMPT_OUTCOMES) {
        const now = sources.dispatcher.attempts[outcome];
        this.inc({ outcome }, Math.max(0, now - (seen.get(outcome) ?? 0)));
        seen.set(outcome, now);
      }
    },
  });
}
