import client from 'prom-client';
import type { EventStore } from '../eventstore/port';
import type { PostgresEventStore } from '../eventstore/postgres';
import type { Outage } from '../platform/outage';
import type { ProjectionStatus } from '../platform/consumers/projections';
export { type HttpMetrics, httpMetrics } from '../platform/http/metrics';

/**
 * The domain's figures beside the HTTP ones, read when Prometheus scrapes: each projection's lag and
 * whether it is stopped on an event, the store's availability, and the Postgres log's group commit
 * (appends, batches, fallbacks, appends held back). The one bookkeeping done as requests run is the
 * log's two latency histograms, observed after each batch (the batch once, each of its appends once).
 */
export function registerDomainMetrics(
  registry: client.Registry,
  sources: { consumers: { status(): Promise<ProjectionStatus[]> }; outage: Pick<Outage, 'down'>; store: EventStore },
): void {
  // One read of the projections per scrape: prom-client collects the metrics of a scrape all at
  // once, so the gauges share the read of the moment (reused for up to a second).
  let read: { at: number; status: Promise<ProjectionStatus[] | null> } | undefined;
  const projections = (): Promise<ProjectionStatus[] | null> => {
    if (!read || Date.now() - read.at > 1_000)
      read = {
        at: Date.now(),
        // The store out of reach: the figures keep their last values, and scrape_ok says so.
        status: sources.consumers.status().catch(() => null),
      };
    return read.status;
  };
  new client.Gauge({
    name: 'tally_projection_lag_events',
    help: 'Events of its types between a projection and the head of the log (counted up to 1,000)',
    labelNames: ['projection'],
    registers: [registry],
    async collect() {
      for (const s of (await projections()) ?? []) this.set({ projection: s.name }, s.lag);
    },
  });
  new client.Gauge({
    name: 'tally_projection_stopped_seconds',
    help: 'How long a projection has been stopped on an event it cannot apply (0 while it runs)',
    labelNames: ['projection'],
    registers: [registry],
    async collect() {
      for (const s of (await projections()) ?? [])
        this.set({ projection: s.name }, s.failure ? Math.max(0, (Date.now() - Date.parse(s.failure.since)) / 1000) : 0);
    },
  });
  new client.Gauge({
    name: 'tally_projections_scrape_ok',
    help: '1 when the projections could be read at this scrape, 0 when the store did not answer',
    registers: [registry],
    async collect() {
      this.set((await projections()) ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'tally_store_available',
    help: '0 while this node sees the store out of reach (from the first failed request until a probe succeeds)',
    registers: [registry],
    collect() {
      this.set(sources.outage.down ? 0 : 1);
    },
  });
  registerLogAppendMetrics(registry, sources.store);
  registerLogAppendLatency(registry, sources.store);
}

/** Seconds, from a millisecond to ten: a lone append takes a few ms, one behind a stall hundreds. */
const APPEND_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** How long the Postgres log's appends take: each request from queued to answered, and each batch's SQL. */
function registerLogAppendLatency(registry: client.Registry, store: EventStore): void {
  // Only the Postgres store times its appends.
  const timed = (store as Partial<Pick<PostgresEventStore, 'onAppendTimed'>>).onAppendTimed;
  if (!timed) return;
  const requests = new client.Histogram({
    name: 'tally_log_append_seconds',
    help: 'An append request to the Postgres log, from queued to answered: the wait for its group-commit batch to leave, and the batch',
    buckets: APPEND_BUCKETS,
    registers: [registry],
  });
  const batches = new client.Histogram({
    name: 'tally_log_append_batch_seconds',
    help: "A group-commit batch's es_append_batch call (its SQL and commit, the round trip included)",
    buckets: APPEND_BUCKETS,
    registers: [registry],
  });
  timed.call(store, (timing) => {
    batches.observe(timing.sqlMs / 1_000);
    for (const ms of timing.requestMs) requests.observe(ms / 1_000);
  });
}

/** The Postgres log's group commit: appends, batches, fallbacks, appends held back (other stores keep no such figures). */
function registerLogAppendMetrics(registry: client.Registry, store: EventStore): void {
  const stats = (store as { stats?: { requests: number; batches: number; fallbacks: number; heldBack: number } }).stats;
  if (!stats) return;
  for (const [name, help, key] of [
    ['tally_log_append_requests_total', 'Append requests (appendMany calls) that reached the Postgres log', 'requests'],
    ['tally_log_append_batches_total', 'Group-commit batches written to the Postgres log (requests / batches = mean batch size)', 'batches'],
    ['tally_log_append_fallbacks_total', 'Batches that failed as a whole and were retried request by request', 'fallbacks'],
    ['tally_log_append_held_back_total', 'Times a queued append waited for a batch in flight that writes one of its streams', 'heldBack'],
  ] as const) {
    let seen = 0;
    new client.Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const now = stats[key];
        this.inc(Math.max(0, now - seen));
        seen = now;
      },
    });
  }
}
