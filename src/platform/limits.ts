/**
 * The platform's limits in one place, as TigerBeetle keeps its constants: every bound the machinery
 * keeps on time, size and count, named with its unit, and the relations between them checked when
 * this module is loaded (a service whose limits contradict each other does not start). The rules of
 * the business (a login code's lifetime, a card's limit windows) stay beside their deciders.
 */
export const LIMITS = {
  http: {
    /** A request body's size (413 past it). */
    bodyBytes: 100 * 1024,
    /** How deep a request's JSON may nest (the store holds deeper: see store.storableDepth). */
    inputDepth: 16,
    /** Clients a rate limiter remembers at once (the oldest are forgotten first). */
    rateLimiterKeys: 100_000,
    /**
     * An idle keep-alive connection is closed after this long: past the idle timeouts of clients'
     * pools and load balancers in front (Node's agent 5 s, AWS ALB and nginx 60 s), so that the
     * server does not close a connection a client is writing its next request on (ECONNRESET).
     */
    keepAliveMs: 65_000,
    /**
     * Connections the kernel queues for the server to accept (Node's default is 511; the kernel caps
     * it at net.core.somaxconn, 4096 since Linux 5.4). Past it, a new connection's handshake is
     * dropped and the client's TCP tries again after 1, 3, 7, 15 s: a burst of new connections while
     * the event loop is busy waited seconds in the cards bench's open loop (docs/performance.md,
     * session 27).
     */
    listenBacklog: 4096,
  },
  commands: {
    /** Decisions a command makes before a concurrent writer wins for good (decided again on fresh state). */
    maxAttempts: 8,
  },
  store: {
    /** Events a read of the log returns per page; one read takes at most ten pages. */
    readBatch: 1_000,
    /** How deep an event's data may nest. */
    storableDepth: 32,
    /** A subscription's wait between polls of an idle log, and after an error. */
    subscriptionPollMs: 250,
    subscriptionErrorBackoffMs: 1_000,
  },
  postgres: {
    /**
     * A pooled connection left idle this long is closed (pg-pool's default is 10 s). Under traffic
     * that comes and goes, 10 s closed the connections a quieter second did not need, and the next
     * burst opened them again: a backend forked, its caches and prepared statements cold. The
     * closings and reopenings made the main thread's longest stall of the open loop at 50%
     * (docs/performance.md, session 30). Connections now stay warm through a quiet spell of up to
     * ten minutes (HikariCP by default never shrinks its pool); after a longer one a node lets go
     * of what a burst opened, for the other nodes sharing the server's `max_connections`.
     */
    idleConnectionMs: 600_000,
  },
  kurrentdb: {
    /** Plans of one append (after a conflict or an unknown outcome), and the time they may take in all. */
    appendAttempts: 12,
    appendBudgetMs: 10_000,
    /** Full-jitter backoff between plans: up to min(backoffMaxMs, backoffBaseMs * 2^attempt). */
    backoffBaseMs: 10,
    backoffMaxMs: 1_000,
    /** A write's reply; past it the outcome is read back (the server answers within its 2 s write timeout). */
    appendReplyTimeoutMs: 5_000,
    /** Appends of this process waiting on one stream. */
    queuedAppendsPerStream: 1_000,
    /** At start, how long a server out of reach is tried, and the longest wait between tries. */
    connectBudgetMs: 60_000,
    connectBackoffMaxMs: 5_000,
  },
  consumers: {
    /** The projections' loop: batches of up to 2,000 events, gathered for 100 ms. */
    projections: { batchSize: 2_000, paceMs: 100, leaseSeconds: 6, leaseRenewEveryMs: 2_000 },
    /**
     * The reactors' loop: smaller batches (each reads app data for its effects), gathered for 100 ms.
     * The outbox waits for the read models it builds from, which cuts the projections' pause short: at
     * 40 ms it made the projections run a batch every 20 ms at light load, ten round trips each (at
     * 300 transfers/s, 100 ms took 20% off the CPU per transfer of node and postgres alike, for 20-45 ms
     * more on a notification's p99: docs/performance.md, "Session 21").
     */
    reactors: { batchSize: 200, paceMs: 100, leaseSeconds: 10, leaseRenewEveryMs: 3_000 },
    /** How long a reactor waits for the read models it reads before it tries the batch again. */
    reactorReadModelsWaitMs: 5_000,
    /** An idle loop's longest wait for an append before it looks again. */
    pollIntervalMs: 250,
    /** After a loop's own error (the store out of reach), before it tries again. */
    errorBackoffMs: 1_000,
    /** A consumer stopped on an event retries it after 1 s, doubling up to 60 s. */
    failureBackoffMs: 1_000,
    failureBackoffMaxMs: 60_000,
    /** Events a rebuild or a verification reads per step. */
    rebuildBatch: 10_000,
    verifyBatch: 5_000,
    /** The projection thread: how often it tells the main thread where it stands, and its restart after it ended. */
    threadStateEveryMs: 250,
    threadRestartMs: 1_000,
  },
};

export type Limits = typeof LIMITS;

type Loop = { batchSize: number; paceMs: number; leaseSeconds: number; leaseRenewEveryMs: number };

/** The relations the limits must keep; each broken one, said plainly. */
export function brokenLimits(limits: Limits): string[] {
  const broken: string[] = [];
  const need = (holds: boolean, what: string) => holds || broken.push(what);
  const { consumers, store, kurrentdb, http } = limits;
  const pages = store.readBatch * 10;
  for (const [name, loop] of Object.entries({ projections: consumers.projections, reactors: consumers.reactors }) as Array<[string, Loop]>) {
    const leaseMs = loop.leaseSeconds * 1_000;
    need(loop.leaseRenewEveryMs * 2 <= leaseMs, `${name}: a lease is renewed at least twice before it lapses`);
    need(loop.paceMs < loop.leaseRenewEveryMs, `${name}: a batch's pace is shorter than a lease renewal`);
    need(consumers.pollIntervalMs < loop.leaseRenewEveryMs, `${name}: an idle loop looks again before its lease needs renewing`);
    need(consumers.errorBackoffMs < leaseMs, `${name}: a loop that met an error tries again before its lease lapses`);
    need(loop.batchSize >= 1 && loop.batchSize <= pages, `${name}: a batch fits one read of the log (at most ${pages} events)`);
  }
  need(consumers.reactorReadModelsWaitMs < consumers.reactors.leaseSeconds * 1_000, 'reactors: the wait for read models ends before the lease lapses');
  need(consumers.rebuildBatch <= pages && consumers.verifyBatch <= pages, 'a rebuild or verification step fits one read of the log');
  need(consumers.failureBackoffMs <= consumers.failureBackoffMaxMs, 'the failure backoff starts below its cap');
  need(consumers.threadStateEveryMs < consumers.projections.leaseRenewEveryMs, 'the projection thread reports more often than leases are renewed');
  need(kurrentdb.appendReplyTimeoutMs < kurrentdb.appendBudgetMs, 'kurrentdb: a write may time out and still be planned again within the budget');
  need(kurrentdb.backoffBaseMs <= kurrentdb.backoffMaxMs && kurrentdb.backoffMaxMs < kurrentdb.appendBudgetMs, 'kurrentdb: the backoff fits the append budget');
  need(kurrentdb.connectBackoffMaxMs < kurrentdb.connectBudgetMs, 'kurrentdb: start tries again within its budget');
  need(http.inputDepth <= store.storableDepth, 'whatever the API accepts, the store can hold (input depth)');
  return broken;
}

const broken = brokenLimits(LIMITS);
if (broken.length > 0) throw new Error(`The platform's limits contradict each other: ${broken.join('; ')}`);
