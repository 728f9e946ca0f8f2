import type { Logger } from 'pino';
import type { EventStore } from '../../eventstore/port';
import { SCHEMA_LOCK, type Sql } from '../../eventstore/sql';
import { LogConsumer } from './engine';
import { type EngineState, PROJECTION_LOOP, type ProjectionObserver, projectionHandler } from './handler';
import { liveTables, type Projection } from './projection';
import { waitForPositions } from './read-your-writes';
import { rebuildProjection, splitStatements, verifyProjection } from './rebuild';
import { consumerStatus, type ProjectionStatus } from './status';

export type { ProjectionStatus } from './status';

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

/**
 * The projections on the log consumer's loop (LogConsumer, PROJECTION_LOOP), in this thread: their
 * tables created (and rebuilt when a projection changed), read-your-writes waits, status, rebuilds
 * and verifications.
 */
export class ProjectionEngine implements Projections {
  readonly consumer: LogConsumer;
  /** Rows a rebuild or verification remembers instead of reading them back (BuildMemory). */
  buildMemoryRows = 1_000_000;
  /** /readyz answers 503 once a projection has been stopped on an event this long. */
  unreadyAfterFailureMs = 30_000;

  constructor(
    readonly store: EventStore,
    readonly sql: Sql,
    readonly projections: Projection[],
    readonly log?: Logger,
    options: { nodeId?: string } = {},
  ) {
    this.consumer = new LogConsumer(store, sql, projections.map(projectionHandler), PROJECTION_LOOP, log, options.nodeId);
  }

  get nodeId(): string {
    return this.consumer.nodeId;
  }

  /** See LogConsumer.paceMs. */
  get paceMs(): number {
    return this.consumer.paceMs;
  }

  set paceMs(ms: number) {
    this.consumer.paceMs = ms;
  }

  /** Creates the checkpoint table and every projection's live tables (if absent); rebuilds those changed since. */
  async prepare(): Promise<void> {
    const { checkpoints } = this.consumer;
    await checkpoints.prepare(this.store);
    for (const p of this.projections) {
      if (!(await checkpoints.exists(p.name))) {
        await this.sql.transaction(async (tx) => {
          // Another node starting beside this one may have made them meanwhile: looked at again under the lock.
          await tx.query(SCHEMA_LOCK);
          if (await checkpoints.exists(p.name, tx)) return;
          for (const table of p.tables) await tx.query(`DROP TABLE IF EXISTS ${table}`);
          for (const statement of splitStatements(p.createTables(liveTables(p)))) await tx.query(statement);
          await checkpoints.create(tx, p.name, '', p.version);
        });
      }
      const row = await checkpoints.read(p.name);
      this.consumer.positions.set(p.name, row?.position ?? '');
      if (row && row.version !== p.version) {
        this.log?.info({ projection: p.name, from: row.version, to: p.version }, 'projection changed since this store was built: rebuilding');
        await this.rebuild(p.name);
      }
    }
  }

  start(): void {
    this.consumer.start();
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }

  get(name: string): Projection {
    const p = this.projections.find((x) => x.name === name);
    if (!p) throw new Error(`Unknown projection ${name}`);
    return p;
  }

  observe(observer: ProjectionObserver): void {
    this.consumer.observe(observer);
  }

  /** True when this node's loop holds the projection's lease (it applies every event of it). */
  owns(name: string): boolean {
    return this.consumer.owns(name);
  }

  /**
   * True while the projection is stopped on an event it cannot apply, as far as this node knows (its
   * own failures, and those other nodes recorded, as of its last lease renewal): its read model may
   * miss any later event, so whoever must not act on a stale answer (a revoked session, a revoked
   * key) asks the log.
   */
  isStopped(name: string): boolean {
    return this.consumer.failures.has(name);
  }

  passed(position: string, names: string[]): boolean {
    return this.consumer.passed(position, names);
  }

  /**
   * Read-your-writes: resolves true once every named projection (all by default) has passed
   * `position`, false when `timeoutMs` ran out first (or one is stopped on an event).
   */
  waitFor(position: string, options: { names?: string[]; timeoutMs?: number } = {}): Promise<boolean> {
    return waitForPositions(position, options.names ?? this.projections.map((p) => p.name), options.timeoutMs ?? 5_000, this.consumer.known);
  }

  /** For a ProjectionThread's worker: see LogConsumer. */
  waitingElsewhere(position: string): void {
    this.consumer.waitingElsewhere(position);
  }

  state(): EngineState {
    return this.consumer.state();
  }

  onProgress(listener: () => void): void {
    this.consumer.onProgress(listener);
  }

  async status(): Promise<ProjectionStatus[]> {
    return consumerStatus(this.store, this.consumer, this.projections);
  }

  /** See rebuildProjection; this node's loop then goes on from the rebuilt checkpoint. */
  async rebuild(name: string, onProgress?: (applied: number, position: string) => void): Promise<{ events: number; position: string }> {
    const built = await rebuildProjection(this, this.get(name), onProgress);
    this.consumer.movedElsewhere(name, built.position);
    return built;
  }

  verify(name: string): Promise<Array<{ table: string; differingRows: number }>> {
    return verifyProjection(this, this.get(name));
  }
}
