import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { comparePositions, type EventStore, type RecordedEvent } from '../../eventstore/port';
import type { Sql } from '../../eventstore/sql';
import { isOutage } from '../outage';
import { advanceAlone, type Loop, runBatch } from './batch';
import { Checkpoints } from './checkpoints';
import { Failures, RetryLater } from './failures';
import { type EngineState, type LogHandler, type LoopOptions, newNodeId, type ProjectionObserver } from './handler';
import { holdLeases } from './lease';
import type { Known } from './read-your-writes';
import { LIMITS } from '../limits';

const POLL_INTERVAL_MS = LIMITS.consumers.pollIntervalMs;
const ERROR_BACKOFF_MS = LIMITS.consumers.errorBackoffMs;

/**
 * The log consumer: runs its handlers (projections, or reactors), catching up, then following the
 * log. One read of the log and one transaction per batch for all of them; each handler's writes
 * commit with its checkpoint, moved compare-and-set. A lease row keeps one owner per handler across
 * nodes; a node that loses it stops writing until the lease expires. A handler that cannot handle
 * an event stops alone on it (Failures), retried with backoff, while the others go on.
 */
export class LogConsumer implements Loop {
  readonly nodeId: string;
  readonly checkpoints: Checkpoints;
  /**
   * A batch costs about ten round trips whatever its size, so the loop gathers events: after a
   * batch that did not fill up it waits until `paceMs` after that batch began before reading again,
   * unless someone waits for a position it has not passed (waitFor cuts the pause short). Without the pause, a
   * trickle of appends would cost each of them a batch of its own: ten statements for one event.
   * 0 turns pacing off.
   */
  paceMs: number;
  private readonly progress = new EventEmitter();
  private readonly observers: ProjectionObserver[] = [];
  readonly positions = new Map<string, string>();
  readonly owned = new Set<string>();
  readonly failures: Failures;
  /** What read-your-writes waits read and how they wait. */
  readonly known: Known;
  private running = false;
  private loop: Promise<void> | undefined;
  private leasesCheckedAt = 0;
  /** Set while the database does not answer (logged once per outage). */
  private databaseDown = false;
  /**
   * The furthest position a reader has waited for (here, or on another thread): the loop does not
   * pause while a handler it runs is short of it. A position, not a count of readers: a reader whose
   * position a batch passed no longer holds the loop from its pause, though it has not yet woken
   * (on another thread, its wake takes a message each way; counted, each wait cost a second batch).
   */
  private awaited = '';

  constructor(
    readonly store: EventStore,
    readonly sql: Sql,
    readonly handlers: LogHandler[],
    readonly options: LoopOptions,
    readonly log?: Logger,
    nodeId?: string,
  ) {
    this.nodeId = nodeId ?? newNodeId();
    this.paceMs = options.paceMs;
    this.checkpoints = new Checkpoints(sql, this.nodeId);
    this.failures = new Failures(this.checkpoints, log);
    this.known = {
      sql,
      positions: this.positions,
      owns: (name) => this.owned.has(name),
      stopped: (name) => this.failures.has(name),
      pause: (ms, position) => this.pause(ms, position),
    };
    this.progress.setMaxListeners(0);
  }

  private get names(): string[] {
    return this.handlers.map((h) => h.name);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.progress.emit('stop');
    await this.loop;
    this.resetObservers(this.owned);
    for (const name of this.owned) {
      // Released so another node takes over at once; one that cannot be released (the database out
      // of reach) lapses by itself within the lease, so stopping goes on.
      await this.checkpoints.release(name).catch((error) => this.log?.warn({ err: error, consumer: name }, 'lease not released at stop: it lapses by itself'));
    }
    this.owned.clear();
    this.leasesCheckedAt = 0;
  }

  /**
   * One round by hand (tests, tools): the leases when due, then one batch, its errors thrown to the
   * caller rather than contained. False when there was nothing to do (or another node holds them all).
   */
  async step(): Promise<boolean> {
    await this.holdLeasesWhenDue();
    const batch = await runBatch(this, false);
    return batch !== 'unowned' && batch !== 'idle';
  }

  observe(observer: ProjectionObserver): void {
    this.observers.push(observer);
  }

  /** True when this node's loop runs and holds the handler's lease (it handles every event of it). */
  owns(name: string): boolean {
    return this.running && this.owned.has(name);
  }

  /** True when every named handler has passed `position`, as far as this node knows. */
  passed(position: string, names: string[]): boolean {
    return names.every((n) => comparePositions(this.positions.get(n) ?? '', position) >= 0);
  }

  /** Every handler's position, those this node owns, and those stopped on an event. */
  state(): EngineState {
    return { positions: [...this.positions], owned: this.running ? [...this.owned] : [], stopped: this.failures.names() };
  }

  /** `listener` runs after every batch committed (or found moved by someone else). */
  onProgress(listener: () => void): void {
    this.progress.on('progress', listener);
  }

  /** A reader on another thread (a ProjectionThread's main thread) waits for `position`: the loop does not pause short of it. */
  waitingElsewhere(position: string): void {
    this.readerWaits(position);
  }

  /** A handler's checkpoint was moved outside the loop (a rebuild's swap): this node follows. */
  movedElsewhere(name: string, position: string): void {
    this.failures.forget(name);
    this.resetObservers([name]);
    this.positions.set(name, position);
    this.progress.emit('progress');
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        await this.round();
        this.databaseDown = false;
      } catch (error) {
        this.failed(error);
        await this.sleep(ERROR_BACKOFF_MS);
      }
    }
  }

  private async round(): Promise<void> {
    await this.holdLeasesWhenDue();
    for (const h of this.handlers) if (this.owned.has(h.name) && this.failures.due(h.name)) await advanceAlone(this, h);
    const batchStarted = Date.now();
    const batch = await runBatch(this, true);
    // The waits come after the batch's own frame is gone: events held across a pause would outlive
    // young collections, and the garbage collector would copy each batch into the old space.
    if (batch === 'unowned') await this.sleep(Math.min(this.options.leaseRenewEveryMs, this.failures.untilNextRetryMs(this.owned)));
    else if (batch === 'idle') await this.store.waitForAppend(POLL_INTERVAL_MS);
    else if (batch !== 'again' && !batch.full && this.paceMs > 0) {
      const pause = batchStarted + this.paceMs - Date.now();
      if (pause > 0 && !this.behindAReader()) await this.sleep(pause, 'hurry');
    }
  }

  /** Said once per outage (the store's outage log has the detail), not a stack every second. */
  private failed(error: unknown): void {
    const { label } = this.options;
    if (isOutage(error)) {
      if (!this.databaseDown) this.log?.warn({ err: error }, `${label} paused: the database is out of reach`);
      this.databaseDown = true;
    } else if (error instanceof RetryLater) this.log?.warn({ err: error }, `${label} batch retried later: ${error.message}`);
    else this.log?.error({ err: error }, `${label} batch failed`);
  }

  private async holdLeasesWhenDue(): Promise<void> {
    if (Date.now() - this.leasesCheckedAt <= this.options.leaseRenewEveryMs) return;
    const changed = await holdLeases(this.checkpoints, this.names, this.options.leaseSeconds, this);
    if (changed.length > 0) this.resetObservers(changed);
    this.leasesCheckedAt = Date.now();
  }

  async committed(names: string[], events: RecordedEvent[] | null): Promise<void> {
    if (events) {
      for (const o of this.observers) if (o.names.some((n) => names.includes(n))) o.onEvents(events);
    } else {
      // Someone else moved a checkpoint: what this node knew may be stale, its leases too.
      this.resetObservers(names);
      for (const r of await this.checkpoints.rows(this.names)) this.positions.set(r.name, r.position);
      this.leasesCheckedAt = 0;
    }
    this.progress.emit('progress');
  }

  async renewLeases(): Promise<void> {
    this.leasesCheckedAt = 0;
    await this.holdLeasesWhenDue();
  }

  private resetObservers(names: Iterable<string>): void {
    const touched = new Set(names);
    for (const o of this.observers) if (o.names.some((n) => touched.has(n))) o.onReset();
  }

  /** A reader waits `ms` or until the next batch: the loop must not pause short of `position` meanwhile (see paceMs). */
  private async pause(ms: number, position: string): Promise<void> {
    this.readerWaits(position);
    await this.sleep(ms, 'progress', false);
  }

  /**
   * A reader waits for `position`: a pause is cut short, and none begins until the handlers pass it.
   * One they have passed already (the reader has not heard yet) cuts nothing: the batch it would
   * start would find nothing, and the loop would then wait for the next append without its pace.
   */
  private readerWaits(position: string): void {
    if (comparePositions(position, this.awaited) > 0) this.awaited = position;
    if (this.behindAReader()) this.progress.emit('hurry');
  }

  /** A handler this loop runs (owned, not stopped on an event) is short of the position a reader waits for. */
  private behindAReader(): boolean {
    return (
      this.awaited !== '' &&
      this.handlers.some((h) => this.owned.has(h.name) && !this.failures.has(h.name) && comparePositions(this.positions.get(h.name) ?? '', this.awaited) < 0)
    );
  }

  /** Sleeps `ms`, or less when `also` is emitted (or the loop stops, unless `orStop` is false). */
  private sleep(ms: number, also?: 'hurry' | 'progress', orStop = true): Promise<void> {
    return new Promise((resolve) => {
      const events = this.progress;
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        if (orStop) events.off('stop', done);
        if (also) events.off(also, done);
        resolve();
      }
      if (orStop) events.once('stop', done);
      if (also) events.once(also, done);
    });
  }
}
