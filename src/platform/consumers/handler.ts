import { randomUUID } from 'node:crypto';
import type { RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';
import { liveTables, type Projection } from './projection';
import { LIMITS } from '../limits';

/** A batch's writes: made in the transaction that moves the handler's checkpoint. */
export type Writes = (tx: SqlQueryable) => Promise<void>;

/** What a handler reads next: these event types, at most `maxCount` of them (the loop's batch size by default). */
export interface Selection {
  eventTypes: string[];
  maxCount?: number;
}

/**
 * A consumer of the log, as the loop (LogConsumer) runs it: a checkpoint row of its own, batches of
 * the events of its types past it, and their writes committed with the checkpoint's move. Two kinds:
 * a projection folds events into its read model (projectionHandler); a reactor turns them into
 * effects recorded as rows in the same transaction (the partner notifications' outbox), which the
 * node then carries out (delivery).
 */
export interface LogHandler {
  /** Its checkpoint row's name. */
  readonly name: string;
  /** Every event type it may read (its lag is counted over these). */
  readonly eventTypes: string[];
  /** Before each read, when what it reads depends on its state (otherwise: all of eventTypes). */
  select?(): Promise<Selection>;
  /**
   * The writes of a batch (its events past its checkpoint, of the types it selected, in log order).
   * Work before the transaction goes here (a reactor reads what its effects say); a RetryLater
   * thrown here retries the batch as it is, any other error stops it on the event that fails.
   */
  handle(events: RecordedEvent[]): Promise<Writes>;
  /** Told after a batch of its writes committed. */
  afterCommit?(): void;
}

/** A projection on the loop: its batch folded into its live tables. */
export const projectionHandler = (p: Projection): LogHandler => ({
  name: p.name,
  eventTypes: p.eventTypes,
  handle: async (events) => (tx) => p.apply(tx, events, liveTables(p)),
});

/** How a loop reads and holds its consumers. */
export interface LoopOptions {
  /** What its consumers are, in its logs ('projections', 'reactors'). */
  label: string;
  /** Most events read at once. */
  batchSize: number;
  /** After a batch that did not fill up, the next read waits until this long after it began (see LogConsumer.paceMs). */
  paceMs: number;
  /** Short, so a node that crashed (and cannot release its leases) holds up its consumers for seconds, not minutes. */
  leaseSeconds: number;
  /** Leases are renewed well before they lapse, not on every batch. */
  leaseRenewEveryMs: number;
  /**
   * Read models are derived and their checkpoints commit with them, so their commit need not wait
   * for its WAL flush: one lost in a crash is replayed from the log. A reactor's effects (a delivery
   * a partner may already have been sent) must be durable.
   */
  durable: boolean;
}

/** The projections' loop: batches of up to 2,000 events, gathered for 100 ms. */
export const PROJECTION_LOOP: LoopOptions = { label: 'projections', ...LIMITS.consumers.projections, durable: false };

/** The reactors' loop: smaller batches (each reads app data for its effects), gathered for 100 ms (see LIMITS). */
export const REACTOR_LOOP: LoopOptions = { label: 'reactors', ...LIMITS.consumers.reactors, durable: true };

/** A node's id in the consumers' leases. */
export const newNodeId = (): string => `node-${randomUUID()}`;

/**
 * Told what a loop commits for some consumers: the events of each committed batch (after the
 * commit, before any read-your-writes wait resolves), and a reset whenever the loop may have missed
 * some (a lease taken or lost, a checkpoint moved by someone else, a rebuild).
 */
export interface ProjectionObserver {
  names: string[];
  onEvents(events: RecordedEvent[]): void;
  onReset(): void;
}

/** Where every consumer of a loop stands, as a ProjectionThread's worker tells its main thread. */
export interface EngineState {
  positions: Array<[string, string]>;
  owned: string[];
  stopped: string[];
}
