import type { Logger } from 'pino';
import type { EventStore } from '../../eventstore/port';
import type { Sql, SqlQueryable } from '../../eventstore/sql';
import { LogConsumer } from './engine';
import { type LogHandler, REACTOR_LOOP } from './handler';
import { waitForPositions } from './read-your-writes';
import { consumerStatus, type ProjectionStatus } from './status';

/**
 * A reactor: a consumer of the log whose batch becomes effects recorded as rows (an outbox's
 * deliveries), written in the transaction that moves its checkpoint, so each event's effects are
 * made once. The node carries them out afterwards (a dispatcher sends the deliveries).
 */
export interface Reactor extends LogHandler {
  /**
   * Where it starts when it has no checkpoint row yet (read in the transaction that creates the
   * row): a reactor that kept its checkpoint elsewhere before carries it over. The start of the log
   * by default.
   */
  startFrom?(tx: SqlQueryable): Promise<string>;
}

/**
 * The node's reactors, on the same loop as the projections (LogConsumer, with REACTOR_LOOP's batch
 * size, pace and lease): checkpoints in the same table, one node at a time each, a failing one
 * stopped alone on its event with backoff. On this thread, wherever the projections run: reactors
 * read through the app's services, which live here.
 */
export class Reactors {
  readonly consumer: LogConsumer;

  constructor(
    private readonly store: EventStore,
    private readonly sql: Sql,
    readonly reactors: Reactor[],
    log: Logger,
    nodeId: string,
  ) {
    this.consumer = new LogConsumer(store, sql, reactors, REACTOR_LOOP, log, nodeId);
  }

  /** Creates the checkpoint table and each reactor's row (where it starts), if absent. */
  async prepare(): Promise<void> {
    const { checkpoints } = this.consumer;
    await checkpoints.prepare(this.store);
    for (const r of this.reactors) {
      if (!(await checkpoints.exists(r.name))) {
        await this.sql.transaction(async (tx) => {
          if (await checkpoints.exists(r.name, tx)) return;
          await checkpoints.create(tx, r.name, (await r.startFrom?.(tx)) ?? '', 1);
        });
      }
      this.consumer.positions.set(r.name, (await checkpoints.read(r.name))?.position ?? '');
    }
  }

  start(): void {
    this.consumer.start();
  }

  /** Where each reactor stands, as the projections' status says it (readiness, metrics, the CLI). */
  status(): Promise<ProjectionStatus[]> {
    return consumerStatus(this.store, this.consumer, this.reactors);
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }

  /** One batch by hand (tests): see LogConsumer.step. */
  step(): Promise<boolean> {
    return this.consumer.step();
  }

  /**
   * True once `name` has passed `position`, or when no node runs it (no live lease: no batch of it
   * is in flight, and the next will read what is there then); false when it is stopped on an event
   * or `timeoutMs` ran out. Owned elsewhere, its checkpoint row is read (see waitForPositions).
   */
  async passed(name: string, position: string, timeoutMs: number): Promise<boolean> {
    if (!this.consumer.owned.has(name) && !(await this.consumer.checkpoints.leased(name))) return true;
    return waitForPositions(position, [name], timeoutMs, this.consumer.known);
  }

  isStopped(name: string): boolean {
    return this.consumer.failures.has(name);
  }
}
