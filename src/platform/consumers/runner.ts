import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { comparePositions, type EventStore, type RecordedEvent } from '../../eventstore/port';
import type { Sql, SqlQueryable } from '../../eventstore/sql';
import { isOutage } from '../outage';
import { storableText } from '../../eventstore/storable';
import { BuildMemory, liveTables, type Projection, suffixedTables } from './projection';

const BATCH_SIZE = 2_000;
const REBUILD_BATCH = 10_000;
const LAG_COUNT_LIMIT = 1_000;
const POLL_INTERVAL_MS = 250;
/**
 * Short, so a node that crashed (and cannot release its leases) holds up its projections for
 * seconds, not minutes; renewing costs one UPDATE every couple of seconds.
 */
const LEASE_SECONDS = 6;
/** Leases are renewed well before they lapse, not on every batch. */
const LEASE_RENEW_EVERY_MS = 2_000;
const ERROR_BACKOFF_MS = 1_000;
/** A projection that cannot apply an event retries it after 1 s, 2 s, 4 s ... and then every minute. */
const FAILURE_BACKOFF_MS = 1_000;
const FAILURE_BACKOFF_MAX_MS = 60_000;
class CheckpointMoved extends Error {}

/** A node's id in the projections' leases (and the outbox's). */
export const newNodeId = (): string => `node-${randomUUID()}`;

/**
 * Errors that say nothing about the events: the database out of reach, or a transaction that lost a
 * race or a lock (serialization_failure, deadlock_detected, lock_not_available, query_canceled).
 * A projection retries them as they are; only other errors stop it on an event.
 */
const TRANSIENT_STATES = new Set(['40001', '40P01', '55P03', '57014']);
export const isTransientFailure = (error: unknown): boolean =>
  isOutage(error) || TRANSIENT_STATES.has(String((error as { code?: unknown } | null)?.code ?? ''));

export const CHECKPOINTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS projection_checkpoints (
  name         text PRIMARY KEY,
  position     text NOT NULL DEFAULT '',
  version      integer NOT NULL DEFAULT 1,
  owner        text,
  lease_until  timestamptz,
  updated_at   timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS version integer NOT NULL DEFAULT 1;
ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS failure jsonb;
CREATE TABLE IF NOT EXISTS projection_checkpoints_log (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  log_kind  text NOT NULL
);`;

/**
 * The kind of log the checkpoints are positions in. Postgres and PGlite write positions alike (and
 * keep their log beside their read models), KurrentDB another log with positions of the same shape:
 * read models built from one and then run on the other would compare positions of different logs
 * and, past the other's head, wait forever without a word.
 */
export const checkpointsLogKind = (store: Pick<EventStore, 'kind'>): string => (store.kind === 'kurrentdb' ? 'kurrentdb' : 'postgres');

export class CheckpointsOfAnotherLogError extends Error {
  constructor(recorded: string, current: string) {
    super(
      `The read models' checkpoints are positions in a ${recorded} event log, and this node's log is ${current}: ` +
        `point the node at the log they were built from, or drop projection_checkpoints_log and projection_checkpoints so that every read model is rebuilt from this log`,
    );
    this.name = 'CheckpointsOfAnotherLogError';
  }
}

/**
 * A projection stopped on an event it cannot apply. Only it stops: the others go on, and it retries
 * the event with backoff until the cause is fixed (or it is rebuilt). Kept in its checkpoint row,
 * so every node, the operator API and the CLI see it.
 */
export interface ProjectionFailure {
  /** When it first failed on this event (ISO 8601). */
  since: string;
  /** Its checkpoint: every event of its types before `event` is applied. */
  position: string;
  event: { position: string; id: string; stream: string; type: string };
  error: string;
  attempts: number;
  nextRetryAt: string;
}

export interface ProjectionStatus {
  name: string;
  position: string;
  headPosition: string;
  /** Events of this projection's types between its checkpoint and the head. */
  lag: number;
  /** The lag is counted up to LAG_COUNT_LIMIT: true means "at least that many". */
  lagAtLeast: boolean;
  owner: string | null;
  ownedHere: boolean;
  /** Set while the projection is stopped on an event it cannot apply. */
  failure: ProjectionFailure | null;
}

/**
 * Told what this node's runner commits for some projections: the events of each committed batch
 * (after the commit, before any read-your-writes wait resolves), and a reset whenever the runner may
 * have missed some (a lease taken or lost, a checkpoint moved by someone else, a rebuild).
 */
export interface ProjectionObserver {
  names: string[];
  onEvents(events: RecordedEvent[]): void;
  onReset(): void;
}

/**
 * What the service asks of its projections, wherever they run: on its main thread
 * (ProjectionEngine) or in a worker thread of their own (ProjectionThread, thread.ts).
 */
export interface Projections {
  readonly projections: Projection[];
  readonly nodeId: string;
  /** /readyz answers 503 once a projection has been stopped on an event this long. */
  unreadyAfterFailureMs: number;
  /** Rows a rebuild or verification remembers instead of reading them back (BuildMemory). */
  buildMemoryRows: number;
  prepare(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
  get(name: string): Projection;
  observe(observer: ProjectionObserver): void;
  owns(name: string): boolean;
  isStopped(name: string): boolean;
  passed(position: string, names: string[]): boolean;
  waitFor(position: string, options?: { names?: string[]; timeoutMs?: number }): Promise<boolean>;
  status(): Promise<ProjectionStatus[]>;
  rebuild(name: string, onProgress?: (applied: number, position: string) => void): Promise<{ events: number; position: string }>;
  verify(name: string): Promise<Array<{ table: string; differingRows: number }>>;
}

/** Where every projection stands, as a ProjectionThread's worker tells its main thread. */
export interface EngineState {
  positions: Array<[string, string]>;
  owned: string[];
  stopped: string[];
}

/** What a node knows of its projections, for waitForPositions. */
export interface Known {
  sql: SqlQueryable;
  /** Moved forward only. */
  positions: Map<string, string>;
  owns(name: string): boolean;
  stopped(name: string): boolean;
  /** Waits `ms` or until the projections move, telling the runner that a reader waits. */
  pause(ms: number): Promise<void>;
}

/**
 * Read-your-writes: true once every one of `names` has passed `position`, false when one is stopped
 * on an event or `timeoutMs` ran out first. The positions of projections another node owns are read
 * from their checkpoint rows.
 */
export async function waitForPositions(position: string, names: string[], timeoutMs: number, known: Known): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const behind = names.filter((n) => comparePositions(known.positions.get(n) ?? '', position) < 0);
    if (behind.length === 0) return true;
    // One stopped on an event will not get there by waiting: say so now rather than at the timeout.
    if (behind.some((n) => known.stopped(n))) return false;
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    // Another node may own the projection: then its checkpoint row is the truth.
    const notOwned = behind.filter((n) => !known.owns(n));
    if (notOwned.length > 0) {
      const rows = await known.sql.query<{ name: string; position: string }>(`SELECT name, position FROM projection_checkpoints WHERE name = ANY($1::text[])`, [
        notOwned,
      ]);
      for (const r of rows) if (comparePositions(r.position, known.positions.get(r.name) ?? '') > 0) known.positions.set(r.name, r.position);
    }
    await known.pause(Math.min(remaining, notOwned.length > 0 ? 25 : 1_000));
  }
}

/**
 * Runs every projection: catch up, then follow the log. Each batch of read-model writes commits
 * in one transaction with the checkpoint, which it moves compare-and-set (exactly-once effect even if
 * two nodes raced). A lease row keeps one owner per projection across nodes; a node that loses it
 * stops writing until the lease expires.
 */
export class ProjectionEngine implements Projections {
  private readonly progress = new EventEmitter();
  private readonly observers: ProjectionObserver[] = [];
  private readonly positions = new Map<string, string>();
  /** What waitFor reads and how it waits. */
  private readonly known: Known;
  private readonly owned = new Set<string>();
  /** Projections of this node stopped on an event, with when to try it again (epoch ms). */
  private readonly failures = new Map<string, ProjectionFailure & { retryAtMs: number }>();
  private running = false;
  /** Set while the database does not answer (logged once per outage). */
  private databaseDown = false;
  /** waitFor calls still waiting: the runner does not pause while there are any. */
  private waiting = 0;
  /** The same, of another thread's (a ProjectionThread's main thread, see waitingElsewhere). */
  private waitingOutside = 0;
  private loops: Promise<void>[] = [];
  readonly nodeId: string;
  /** Rows a rebuild or verification remembers instead of reading them back (BuildMemory). */
  buildMemoryRows = 1_000_000;
  /** /readyz answers 503 once a projection has been stopped on an event this long. */
  unreadyAfterFailureMs = 30_000;
  /**
   * A batch costs about ten round trips whatever its size, so the runner gathers events: after a
   * batch that did not fill up it waits until `paceMs` after that batch began before reading again,
   * unless someone waits to read their writes (waitFor cuts the pause short). Without the pause, a
   * trickle of appends would cost each of them a batch of its own: ten statements for one event.
   * 0 turns pacing off.
   */
  paceMs = 100;

  constructor(
    readonly store: EventStore,
    readonly sql: Sql,
    readonly projections: Projection[],
    private readonly log?: Logger,
    options: { nodeId?: string } = {},
  ) {
    this.known = {
      sql,
      positions: this.positions,
      owns: (name) => this.owned.has(name),
      stopped: (name) => this.failures.has(name),
      pause: (ms) => this.pause(ms),
    };
    this.nodeId = options.nodeId ?? newNodeId();
    this.progress.setMaxListeners(0);
  }

  /**
   * Readers waiting on another thread for these projections (ProjectionThread): while there are
   * any, the runner does not pause between batches, as for its own waitFor.
   */
  waitingElsewhere(count: number): void {
    this.waitingOutside = count;
    if (count > 0) this.progress.emit('hurry');
  }

  /** Every projection's position, those this node owns, and those stopped on an event. */
  state(): EngineState {
    return { positions: [...this.positions], owned: this.running ? [...this.owned] : [], stopped: [...this.failures.keys()] };
  }

  /** `listener` runs after every batch committed (or found moved by someone else). */
  onProgress(listener: () => void): void {
    this.progress.on('progress', listener);
  }

  /** Creates the checkpoint table and every projection's live tables (if absent). */
  async prepare(): Promise<void> {
    await this.sql.exec(CHECKPOINTS_SCHEMA);
    // Checkpoints kept before the log's kind was recorded are taken to be this log's, as they were.
    const kind = checkpointsLogKind(this.store);
    await this.sql.query(`INSERT INTO projection_checkpoints_log (log_kind) VALUES ($1) ON CONFLICT (only_row) DO NOTHING`, [kind]);
    const [recorded] = await this.sql.query<{ log_kind: string }>(`SELECT log_kind FROM projection_checkpoints_log`);
    if (recorded && recorded.log_kind !== kind) throw new CheckpointsOfAnotherLogError(recorded.log_kind, kind);
    for (const p of this.projections) {
      const exists = await this.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM projection_checkpoints WHERE name = $1`, [p.name]);
      if (exists[0]?.n === '0') {
        await this.sql.transaction(async (tx) => {
          for (const table of p.tables) await tx.query(`DROP TABLE IF EXISTS ${table}`);
          for (const statement of splitStatements(p.createTables(liveTables(p)))) await tx.query(statement);
          await tx.query(`INSERT INTO projection_checkpoints (name, position, version) VALUES ($1, '', $2) ON CONFLICT (name) DO NOTHING`, [p.name, p.version]);
        });
      }
      const [row] = await this.sql.query<{ position: string; version: number }>(`SELECT position, version FROM projection_checkpoints WHERE name = $1`, [
        p.name,
      ]);
      this.positions.set(p.name, row?.position ?? '');
      if (row && row.version !== p.version) {
        this.log?.info({ projection: p.name, from: row.version, to: p.version }, 'projection changed since this store was built: rebuilding');
        await this.rebuild(p.name);
      }
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loops = [this.runAll()];
  }

  async stop(): Promise<void> {
    this.running = false;
    this.progress.emit('stop');
    await Promise.all(this.loops);
    this.resetObservers(this.owned);
    for (const name of this.owned) {
      // Released so another node takes over at once; one that cannot be released (the database out
      // of reach) lapses by itself within LEASE_SECONDS, so stopping goes on.
      await this.sql
        .query(`UPDATE projection_checkpoints SET owner = NULL, lease_until = NULL WHERE name = $1 AND owner = $2`, [name, this.nodeId])
        .catch((error) => this.log?.warn({ err: error, projection: name }, 'projection lease not released at stop: it lapses by itself'));
    }
    this.owned.clear();
  }

  get(name: string): Projection {
    const p = this.projections.find((x) => x.name === name);
    if (!p) throw new Error(`Unknown projection ${name}`);
    return p;
  }

  observe(observer: ProjectionObserver): void {
    this.observers.push(observer);
  }

  /** True when this node's runner holds the projection's lease (it applies every event of it). */
  owns(name: string): boolean {
    return this.running && this.owned.has(name);
  }

  /**
   * True while the projection is stopped on an event it cannot apply, as far as this node knows (its
   * own failures, and those other nodes recorded, as of its last lease renewal): its read model may
   * miss any later event, so whoever must not act on a stale answer (a revoked session, a revoked
   * key) asks the log.
   */
  isStopped(name: string): boolean {
    return this.failures.has(name);
  }

  private resetObservers(names: Iterable<string>): void {
    const touched = new Set(names);
    for (const o of this.observers) if (o.names.some((n) => touched.has(n))) o.onReset();
  }

  /** True when every named projection has passed `position`, as far as this node knows. */
  passed(position: string, names: string[]): boolean {
    return names.every((n) => comparePositions(this.positions.get(n) ?? '', position) >= 0);
  }

  /**
   * Read-your-writes: resolves true once every named projection (all by default) has passed
   * `position`, false when `timeoutMs` ran out first.
   */
  waitFor(position: string, options: { names?: string[]; timeoutMs?: number } = {}): Promise<boolean> {
    return waitForPositions(position, options.names ?? this.projections.map((p) => p.name), options.timeoutMs ?? 5_000, this.known);
  }

  /** A reader waits `ms` or until the next batch: the runner must not pause meanwhile (see paceMs). */
  private async pause(ms: number): Promise<void> {
    this.waiting++;
    this.progress.emit('hurry');
    try {
      await new Promise<void>((resolve) => {
        const progress = this.progress;
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          progress.off('progress', done);
          resolve();
        }
        progress.once('progress', done);
      });
    } finally {
      this.waiting--;
    }
  }

  async status(): Promise<ProjectionStatus[]> {
    const head = await this.store.headPosition();
    const rows = await this.sql.query<{ name: string; position: string; owner: string | null; failure: ProjectionFailure | null }>(
      `SELECT name, position, owner, failure FROM projection_checkpoints`,
    );
    const result: ProjectionStatus[] = [];
    for (const p of this.projections) {
      const row = rows.find((r) => r.name === p.name);
      const position = row?.position ?? '';
      // Counted by reading, so bounded: /readyz calls this and must stay cheap when far behind.
      const pending = await this.store.readAll({
        fromPosition: position || undefined,
        filter: { eventTypes: p.eventTypes },
        maxCount: LAG_COUNT_LIMIT,
        projectionOnly: true,
      });
      result.push({
        name: p.name,
        position,
        headPosition: head,
        lag: pending.filter((e) => comparePositions(e.position, head) <= 0).length,
        lagAtLeast: pending.length >= LAG_COUNT_LIMIT,
        owner: row?.owner ?? null,
        ownedHere: this.owned.has(p.name),
        failure: row?.failure ?? null,
      });
    }
    return result;
  }

  /**
   * One loop for every projection this node owns: one read of the log and one transaction per
   * batch for all of them (each append used to cost every projection its own read and commit).
   * Projections may stand at different positions (after a rebuild): the read starts at the lowest,
   * and each projection applies only the events past its own checkpoint.
   */
  private async runAll(): Promise<void> {
    let leasesCheckedAt = 0;
    while (this.running) {
      try {
        if (Date.now() - leasesCheckedAt > LEASE_RENEW_EVERY_MS) {
          await this.holdLeases();
          leasesCheckedAt = Date.now();
        }
        for (const p of this.projections) {
          const failure = this.failures.get(p.name);
          if (failure && this.owned.has(p.name) && failure.retryAtMs <= Date.now()) await this.advanceAlone(p);
        }
        const batchStarted = Date.now();
        const size = await this.runBatch();
        // The pause comes after the batch's own frame is gone: events held across it would outlive
        // young collections, and the garbage collector would copy each batch into the old space.
        if (this.paceMs > 0 && size !== null && size < BATCH_SIZE) {
          const pause = batchStarted + this.paceMs - Date.now();
          if (pause > 0 && this.waiting + this.waitingOutside === 0) await this.sleep(pause, 'hurry');
        }
      } catch (error) {
        // The database out of reach: said once per outage (the store's outage log has the detail),
        // not a stack every second.
        if (isOutage(error)) {
          if (!this.databaseDown) this.log?.warn({ err: error }, 'projections paused: the database is out of reach');
          this.databaseDown = true;
        } else this.log?.error({ err: error }, 'projection batch failed');
        await this.sleep(ERROR_BACKOFF_MS);
      }
    }
  }

  /**
   * One batch of every projection this node owns and that is not stopped: the events of their
   * types past the lowest checkpoint, committed with every checkpoint moved. Returns how many events
   * were read, or null when it waited instead (nothing owned, nothing new, or a failed batch).
   */
  private async runBatch(): Promise<number | null> {
    // A projection stopped on an event is left out (its retry is in runAll), so the others go on.
    const owned = this.projections.filter((p) => this.owned.has(p.name) && !this.failures.has(p.name));
    if (owned.length === 0) {
      await this.sleep(Math.min(LEASE_RENEW_EVERY_MS, this.untilNextRetryMs()));
      return null;
    }
    const from = owned.map((p) => this.positions.get(p.name) ?? '').reduce((a, b) => (comparePositions(a, b) <= 0 ? a : b));
    const head = await this.store.headPosition();
    const types = [...new Set(owned.flatMap((p) => p.eventTypes))];
    const events = await this.store.readAll({ fromPosition: from || undefined, filter: { eventTypes: types }, maxCount: BATCH_SIZE, projectionOnly: true });
    const last = events[events.length - 1]?.position ?? from;
    // A short read drained every visible event of these types: all of them up to `head` (read
    // before) are in it, so the checkpoints may move to the head, past events nobody here needs.
    const to = events.length < BATCH_SIZE && comparePositions(head, last) > 0 ? head : last;
    const behind = owned.filter((p) => comparePositions(this.positions.get(p.name) ?? '', to) < 0);
    if (behind.length === 0) {
      await this.store.waitForAppend(POLL_INTERVAL_MS);
      return null;
    }
    try {
      await this.commit(behind, to, events);
    } catch (error) {
      // The batch of all of them failed: unless the database is out of reach, find which
      // projection (and which event) it was, moving each of them as far as it can go alone.
      if (isTransientFailure(error)) throw error;
      this.log?.warn({ err: error, projections: behind.map((p) => p.name) }, 'projection batch failed: applying each projection alone');
      for (const p of behind) await this.advanceAlone(p, to);
      return null;
    }
    return events.length;
  }

  /**
   * One transaction: move every projection's checkpoint compare-and-set (from the position this
   * node knows, while it holds the lease), then apply to each the events past its checkpoint.
   * Read models are derived and their checkpoints commit with them, so the commit need not wait for
   * its WAL flush: a commit lost in a crash is replayed from the log.
   */
  private async commit(projections: Projection[], to: string, events: RecordedEvent[]): Promise<void> {
    const from = projections.map((p) => this.positions.get(p.name) ?? '');
    const moved = await this.sql
      .transaction(async (tx) => {
        await tx.query('SET LOCAL synchronous_commit = off');
        const rows = await tx.query<{ name: string }>(
          `UPDATE projection_checkpoints c SET position = $3, updated_at = now()
           FROM unnest($1::text[], $2::text[]) AS x(name, position)
          WHERE c.name = x.name AND c.position = x.position AND c.owner = $4 RETURNING c.name`,
          [projections.map((p) => p.name), from, to, this.nodeId],
        );
        // Someone else moved one of them (a rebuild's swap, another node): undo all, reload, retry.
        if (rows.length !== projections.length) throw new CheckpointMoved();
        for (const [i, p] of projections.entries()) {
          const position = from[i] ?? '';
          const mine = events.filter((e) => comparePositions(e.position, position) > 0 && p.eventTypes.includes(e.type));
          if (mine.length) await p.apply(tx, mine, liveTables(p));
        }
        return true;
      })
      .catch(async (error) => {
        if (!(error instanceof CheckpointMoved)) throw error;
        this.resetObservers(projections.map((p) => p.name));
        const rows = await this.sql.query<{ name: string; position: string }>(`SELECT name, position FROM projection_checkpoints`);
        for (const r of rows) this.positions.set(r.name, r.position);
        return false;
      });
    if (moved) {
      const names = new Set(projections.map((p) => p.name));
      for (const o of this.observers) if (o.names.some((n) => names.has(n))) o.onEvents(events);
      for (const p of projections) this.positions.set(p.name, to);
    }
    this.progress.emit('progress');
  }

  /**
   * Moves one projection alone, an event at a time, up to `upTo` (or BATCH_SIZE events, for a retry):
   * the events it can apply are committed, and the first it cannot becomes its failure, retried with
   * backoff. Passing the event it had failed on clears the failure.
   */
  private async advanceAlone(p: Projection, upTo?: string): Promise<void> {
    const leaseCheckedAt = Date.now();
    for (let step = 0; step < BATCH_SIZE; step++) {
      // Stepping is slow: it must not outlive the lease (another node would take over meanwhile).
      if (Date.now() - leaseCheckedAt > LEASE_RENEW_EVERY_MS) await this.holdLeases();
      if (!this.owned.has(p.name)) return;
      const from = this.positions.get(p.name) ?? '';
      if (upTo !== undefined && comparePositions(from, upTo) >= 0) return;
      const [next] = await this.store.readAll({ fromPosition: from || undefined, filter: { eventTypes: p.eventTypes }, maxCount: 1, projectionOnly: true });
      if (!next || (upTo !== undefined && comparePositions(next.position, upTo) > 0)) {
        // Nothing of its types up to there: the batch's position is its own too.
        if (upTo !== undefined) await this.commit([p], upTo, []);
        return;
      }
      try {
        await this.commit([p], next.position, [next]);
      } catch (error) {
        if (isTransientFailure(error)) throw error;
        await this.recordFailure(p, next, error);
        return;
      }
      // The checkpoint moved elsewhere (a rebuild, another node): nothing was applied here.
      if (this.positions.get(p.name) !== next.position) return;
      if (this.failures.has(p.name)) {
        await this.clearFailure(p);
        // A retry that got past its event rejoins the others' batches.
        if (upTo === undefined) return;
      }
    }
  }

  private async recordFailure(p: Projection, event: RecordedEvent, error: unknown): Promise<void> {
    const previous = this.failures.get(p.name);
    const sameEvent = previous?.event.position === event.position;
    const attempts = sameEvent ? (previous?.attempts ?? 0) + 1 : 1;
    const delayMs = Math.min(FAILURE_BACKOFF_MAX_MS, FAILURE_BACKOFF_MS * 2 ** (attempts - 1));
    const retryAtMs = Date.now() + delayMs;
    const failure: ProjectionFailure = {
      since: (sameEvent && previous?.since) || new Date().toISOString(),
      position: this.positions.get(p.name) ?? '',
      event: { position: event.position, id: event.id, stream: event.stream, type: event.type },
      // The message may quote the very text that broke it: kept storable.
      error: storableText((error instanceof Error ? error.message : String(error)).slice(0, 2_000)),
      attempts,
      nextRetryAt: new Date(retryAtMs).toISOString(),
    };
    this.failures.set(p.name, { ...failure, retryAtMs });
    this.log?.error({ projection: p.name, event: failure.event, err: error, attempts, retryInMs: delayMs }, 'projection stopped on an event it cannot apply');
    await this.sql.query(`UPDATE projection_checkpoints SET failure = $2::jsonb WHERE name = $1 AND owner = $3`, [
      p.name,
      JSON.stringify(failure),
      this.nodeId,
    ]);
  }

  private async clearFailure(p: Projection): Promise<void> {
    const failure = this.failures.get(p.name);
    this.failures.delete(p.name);
    this.log?.info({ projection: p.name, event: failure?.event, attempts: failure?.attempts }, 'projection applied the event it had stopped on and goes on');
    await this.sql.query(`UPDATE projection_checkpoints SET failure = NULL WHERE name = $1 AND owner = $2`, [p.name, this.nodeId]);
  }

  private untilNextRetryMs(): number {
    let soonest = Number.POSITIVE_INFINITY;
    for (const [name, f] of this.failures) if (this.owned.has(name)) soonest = Math.min(soonest, f.retryAtMs - Date.now());
    return Math.max(10, soonest);
  }

  /** Takes or renews, in one statement, the lease of every projection no one else holds. */
  private async holdLeases(): Promise<void> {
    const rows = await this.sql.query<{ name: string; position: string; failure: ProjectionFailure | null }>(
      `UPDATE projection_checkpoints SET owner = $2, lease_until = now() + make_interval(secs => $3)
        WHERE name = ANY($1::text[]) AND (owner IS NULL OR owner = $2 OR lease_until < now()) RETURNING name, position, failure`,
      [this.projections.map((p) => p.name), this.nodeId, LEASE_SECONDS],
    );
    const now = new Set(rows.map((r) => r.name));
    for (const r of rows) {
      // Newly taken over: start from the stored checkpoint, not what this node last knew, and
      // keep the failure the last owner saw (its retry is due at once).
      if (!this.owned.has(r.name)) {
        this.positions.set(r.name, r.position);
        if (r.failure) this.failures.set(r.name, { ...r.failure, retryAtMs: Date.now() });
      }
      // Cleared elsewhere (a rebuild by the CLI, another process): this node follows.
      if (!r.failure) this.failures.delete(r.name);
    }
    // Projections other nodes hold: this node knows which of them are stopped (its reads of them
    // are stale, and waiting for them is pointless), though only their owner retries.
    const stopped = await this.sql.query<{ name: string; failure: ProjectionFailure }>(
      `SELECT name, failure FROM projection_checkpoints WHERE failure IS NOT NULL AND name = ANY($1::text[])`,
      [this.projections.map((p) => p.name).filter((n) => !now.has(n))],
    );
    for (const name of this.failures.keys()) if (!now.has(name) && !stopped.some((r) => r.name === name)) this.failures.delete(name);
    for (const r of stopped) if (!this.failures.has(r.name)) this.failures.set(r.name, { ...r.failure, retryAtMs: Date.now() });
    const changed = [...this.projections.map((p) => p.name)].filter((n) => now.has(n) !== this.owned.has(n));
    if (changed.length > 0) this.resetObservers(changed);
    this.owned.clear();
    for (const name of now) this.owned.add(name);
  }

  /** Sleeps `ms`, or less when the engine stops (or `also` is emitted). */
  private sleep(ms: number, also?: 'hurry'): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const events = this.progress;
      function done() {
        clearTimeout(timer);
        events.off('stop', done);
        if (also) events.off(also, done);
        resolve();
      }
      events.once('stop', done);
      if (also) events.once(also, done);
    });
  }

  /**
   * Rebuilds a projection from the start of the log into new tables beside the live ones, then
   * swaps them in one transaction: reads see the old model until the swap and the new one after,
   * never a half-built one. The checkpoint moves to where the rebuild stopped; the live runner
   * (its compare-and-set fails once) continues from there.
   */
  async rebuild(name: string, onProgress?: (applied: number, position: string) => void): Promise<{ events: number; position: string }> {
    const p = this.get(name);
    const suffix = `r${Date.now().toString(36)}${randomUUID().slice(0, 4)}`;
    const tables = suffixedTables(p, suffix);
    await this.sql.transaction(async (tx) => {
      for (const statement of splitStatements(p.createTables(tables, { bulk: true }))) await tx.query(statement);
    });
    let position = '';
    let applied = 0;
    const memory = new BuildMemory(this.buildMemoryRows);
    try {
      const read = (from: string) =>
        this.store.readAll({ fromPosition: from || undefined, filter: { eventTypes: p.eventTypes }, maxCount: REBUILD_BATCH, projectionOnly: true });
      // Tables nobody reads yet, UNLOGGED until finished: a crash here only loses the rebuild.
      const inTransaction = (fn: (tx: SqlQueryable) => Promise<void>) =>
        this.sql.transaction(async (tx) => {
          await tx.query('SET LOCAL synchronous_commit = off');
          await fn(tx);
        });
      // Three stages overlap: the next batch is read (another connection on a server) and folded
      // (from memory) while the previous one is written. Writes stay in batch order.
      let writing: Promise<void> = Promise.resolve();
      let next = read(position);
      while (true) {
        const events = await next;
        if (events.length === 0) break;
        next = read(events[events.length - 1]?.position ?? position);
        // The read ahead and the write behind are awaited later, where their errors are thrown to
        // the rebuild's caller; handled now too, so that one failing while this awaits something
        // else is not an unhandled rejection. Logged at debug only: an error that is not thrown
        // where awaited follows another one that ended the rebuild first, and that one is thrown.
        next.catch((error) => this.log?.debug({ err: error, projection: p.name }, 'rebuild read ahead failed'));
        const writes = p.prepareBulk ? await p.prepareBulk(events, tables, memory) : null;
        await writing;
        writing = writes ? inTransaction(writes) : inTransaction((tx) => p.apply(tx, events, tables, memory));
        writing.catch((error) => this.log?.debug({ err: error, projection: p.name }, 'rebuild write behind failed'));
        // Without prepared writes, the next batch reads rows back: it must see this one's.
        if (!writes) await writing;
        position = events[events.length - 1]?.position ?? position;
        applied += events.length;
        onProgress?.(applied, position);
      }
      await writing;
      if (p.finishBulk) {
        const finish = p.finishBulk;
        await this.sql.transaction(async (tx) => {
          for (const statement of splitStatements(finish(tables))) await tx.query(statement);
        });
      }
      await this.sql.transaction(async (tx) => {
        await tx.query(`SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, [p.name]);
        for (const table of p.tables) {
          await tx.query(`DROP TABLE IF EXISTS ${table}`);
          await tx.query(`ALTER TABLE ${tables[table]} RENAME TO ${table}`);
        }
        await tx.query(`UPDATE projection_checkpoints SET position = $2, version = $3, failure = NULL, updated_at = now() WHERE name = $1`, [
          p.name,
          position,
          p.version,
        ]);
      });
      this.failures.delete(p.name);
    } catch (error) {
      await this.dropScratchTables(p.name, tables);
      throw error;
    }
    this.resetObservers([p.name]);
    this.positions.set(p.name, position);
    this.progress.emit('progress');
    return { events: applied, position };
  }

  /**
   * Folds the log into scratch tables up to the live checkpoint and compares them row by row with
   * the live tables, holding the checkpoint row so the live runner cannot move between the two.
   * Returns the tables that differ (empty when the read model equals the fold of the log).
   */
  async verify(name: string): Promise<Array<{ table: string; differingRows: number }>> {
    const p = this.get(name);
    const suffix = `v${Date.now().toString(36)}${randomUUID().slice(0, 4)}`;
    const tables = suffixedTables(p, suffix);
    await this.sql.transaction(async (tx) => {
      for (const statement of splitStatements(p.createTables(tables, { bulk: true }))) await tx.query(statement);
    });
    const memory = new BuildMemory(this.buildMemoryRows);
    try {
      let position = '';
      for (let attempt = 0; attempt < 20; attempt++) {
        const [row] = await this.sql.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = $1`, [p.name]);
        const target = row?.position ?? '';
        while (comparePositions(position, target) < 0) {
          const events = (
            await this.store.readAll({ fromPosition: position || undefined, filter: { eventTypes: p.eventTypes }, maxCount: 5_000, projectionOnly: true })
          ).filter((e) => comparePositions(e.position, target) <= 0);
          if (events.length === 0) break;
          await this.sql.transaction((tx) => p.apply(tx, events, tables, memory));
          position = events[events.length - 1]?.position ?? position;
        }
        const result = await this.sql.transaction(async (tx) => {
          const [locked] = await tx.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, [p.name]);
          if ((locked?.position ?? '') !== target) return null;
          const diffs: Array<{ table: string; differingRows: number }> = [];
          for (const table of p.tables) {
            const [d] = await tx.query<{ n: string }>(
              `SELECT count(*)::text AS n FROM ((SELECT * FROM ${table} EXCEPT ALL SELECT * FROM ${tables[table]}) UNION ALL (SELECT * FROM ${tables[table]} EXCEPT ALL SELECT * FROM ${table})) d`,
            );
            if (d && d.n !== '0') diffs.push({ table, differingRows: Number(d.n) });
          }
          return diffs;
        });
        if (result) return result;
      }
      throw new Error(`Projection ${name} kept moving; verify again`);
    } finally {
      await this.dropScratchTables(p.name, tables);
    }
  }

  /**
   * Drops the tables a rebuild or a verification built beside the live ones, after it failed or was
   * compared. Nothing reads them, so one that cannot be dropped (the database out of reach) is left
   * behind, said in the log, and the caller's own answer or error goes on.
   */
  private async dropScratchTables(projection: string, tables: Record<string, string>): Promise<void> {
    for (const table of Object.values(tables)) {
      await this.sql
        .query(`DROP TABLE IF EXISTS ${table}`)
        .catch((error) => this.log?.warn({ err: error, projection, table }, 'scratch table of a rebuild or verification left behind: drop it by hand'));
    }
  }
}

export function splitStatements(ddl: string): string[] {
  return ddl
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}
