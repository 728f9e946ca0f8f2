import { EventEmitter } from 'node:events';
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { comparePositions, type RecordedEvent } from '../../eventstore/port';
import type { PostgresEventStore } from '../../eventstore/postgres';
import type { Sql, SqlCounts } from '../../eventstore/sql';
import type { Projection } from './projection';
import { type EngineState, newNodeId, type ProjectionObserver } from './handler';
import type { Projections, ProjectionStatus } from './projections';
import { type Known, waitForPositions } from './read-your-writes';
import { LIMITS } from '../limits';
import type { KeyEncryptionKey } from '../keys';
import { WORKER_SOURCE } from '../module-thread';

/** What a ProjectionThread's worker is started with (workerData). */
export interface ThreadOptions {
  databaseUrl: string;
  /** The module whose `allProjections` the worker runs (the composition root names it: the platform imports no capability). */
  projectionsModule: string;
  nodeId: string;
  paceMs: number;
  poolSize: number;
  logLevel: string;
  /** The projection names of each observer of the main thread, in its order. */
  observed: string[][];
  /** Appends made on the main thread so far (one Int32, counting; notified at each). */
  appends: SharedArrayBuffer;
  /** How the worker opens the personal data of the events it folds (its own data keys, over its own pool). */
  sealing: ThreadSealing;
}

/** The worker's sealing: the module whose `personalData` lists the personal fields (the composition root names it), and the KEKs. */
export interface ThreadSealing {
  module: string;
  keks: KeyEncryptionKey[];
  /** Where keys.json is: a KEK added there (`tally keys rotate`) is read again on a miss, as the main thread does. */
  dataDir: string;
}

export type ToWorker =
  /** A reader here waits for `position`, further than any the worker was told of (LogConsumer.waitingElsewhere). */
  | { type: 'waiting'; position: string }
  /** A data key forgotten on the main thread (destroyed, say): the worker's copy goes too. */
  | { type: 'forget'; owner: string }
  | { type: 'call'; id: number; method: 'prepare' | 'start' | 'stop' | 'status' | 'rebuild' | 'verify'; args: unknown[] };

export type ToMain =
  | { type: 'ready' }
  | { type: 'state'; state: EngineState; observers: Array<{ events: RecordedEvent[]; reset: boolean }>; sql: SqlCounts }
  | { type: 'reply'; id: number; result?: unknown; error?: { message: string } };

/**
 * The projections in a worker thread of their own (Postgres only): the same ProjectionEngine, with
 * its own connections, folding and writing the read models while the main thread serves requests.
 * The main thread knows what the engine knows as of its last message (sent after every batch,
 * with the events its observers must see first), so waits, `passed` and the read-model memos work
 * as with the engine in process; status, rebuild and verify are calls into the worker.
 */
export class ProjectionThread implements Projections {
  readonly nodeId = newNodeId();
  unreadyAfterFailureMs = 30_000;
  buildMemoryRows = 1_000_000;
  /** The worker's statements and transactions so far, as of its last message (benchmarks). */
  readonly sqlCounts: SqlCounts = { statements: 0, transactions: 0 };
  private readonly progress = new EventEmitter();
  private readonly observers: ProjectionObserver[] = [];
  private readonly positions = new Map<string, string>();
  /** What waitFor reads and how it waits. */
  private readonly known: Known;
  private owned = new Set<string>();
  private stopped = new Set<string>();
  private worker: Worker | undefined;
  private readonly replies = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private calls = 0;
  /** The furthest position the worker was told a reader waits for (it keeps the furthest itself). */
  private told = '';
  private running = false;
  /**
   * Appends counted where the worker sees them without a message: its runner, waiting for one when
   * it found nothing new, wakes at the next (Atomics), while under load no append costs a message.
   */
  private readonly appends = new Int32Array(new SharedArrayBuffer(4));

  constructor(
    store: PostgresEventStore,
    sql: Sql,
    readonly projections: Projection[],
    private readonly options: { databaseUrl: string; projectionsModule: string; paceMs: number; log: Logger; sealing: ThreadSealing },
  ) {
    this.known = {
      sql,
      positions: this.positions,
      owns: (name) => this.owned.has(name),
      stopped: (name) => this.stopped.has(name),
      pause: (ms, position) => this.pause(ms, position),
    };
    this.progress.setMaxListeners(0);
    store.onAppended(() => this.appendedElsewhere());
  }

  /** An append the worker must hear of: this thread's, or another thread's of this process (the checkpointer's). */
  appendedElsewhere(): void {
    Atomics.add(this.appends, 0, 1);
    Atomics.notify(this.appends, 0);
  }

  get(name: string): Projection {
    const p = this.projections.find((x) => x.name === name);
    if (!p) throw new Error(`Unknown projection ${name}`);
    return p;
  }

  /** Observers are given to the worker when it starts (prepare): observe before that. */
  observe(observer: ProjectionObserver): void {
    if (this.worker) throw new Error('observers are registered before the projection thread starts');
    this.observers.push(observer);
  }

  /** Starts the worker and creates (or rebuilds) the read models there. */
  async prepare(): Promise<void> {
    if (this.worker) return;
    const data: ThreadOptions = {
      databaseUrl: this.options.databaseUrl,
      projectionsModule: this.options.projectionsModule,
      nodeId: this.nodeId,
      paceMs: this.options.paceMs,
      poolSize: 4,
      logLevel: this.options.log.level,
      observed: this.observers.map((o) => o.names),
      appends: this.appends.buffer as SharedArrayBuffer,
      sealing: this.options.sealing,
    };
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ...data, file: WORKER_FILE } });
    this.worker = worker;
    this.told = '';
    worker.on('message', (message: ToMain) => this.receive(message));
    worker.on('error', (error) => this.options.log.error({ err: error }, 'projection thread failed'));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const { reject } of this.replies.values()) reject(new Error(`the projection thread exited (${code})`));
      this.replies.clear();
      this.owned = new Set();
      for (const o of this.observers) o.onReset();
      // It ended while it should run (a fault of its own): a new one takes over from the checkpoints.
      if (this.running) {
        this.options.log.error({ exitCode: code }, 'projection thread exited: starting a new one');
        setTimeout(() => this.running && !this.worker && this.run(), RESTART_MS).unref();
      }
    });
    await new Promise<void>((ready, fail) => {
      worker.once('error', fail);
      this.progress.once('ready', () => {
        worker.off('error', fail);
        ready();
      });
    });
    await this.call('prepare');
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.run();
  }

  /** Starts the worker's runner (the worker first, when it is not there: stopped before, or ended). */
  private run(): void {
    const started = this.worker ? this.call('start') : this.prepare().then(() => this.call('start'));
    started.catch((error) => {
      this.options.log.error({ err: error }, 'projection thread did not start: trying again in a second');
      setTimeout(() => this.running && this.run(), RESTART_MS).unref();
    });
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    this.running = false;
    this.progress.emit('stop');
    if (!worker) return;
    await this.call('stop').catch((error) => this.options.log.warn({ err: error }, 'projection thread did not stop cleanly'));
    this.worker = undefined;
    await worker.terminate();
    this.owned = new Set();
    for (const o of this.observers) o.onReset();
  }

  /** Tells the worker to drop its copy of the owner's data key (DataKeys.onForget on the main thread's). */
  forgetKey(owner: string): void {
    this.worker?.postMessage({ type: 'forget', owner } satisfies ToWorker);
  }

  owns(name: string): boolean {
    return this.running && this.owned.has(name);
  }

  isStopped(name: string): boolean {
    return this.stopped.has(name);
  }

  passed(position: string, names: string[]): boolean {
    return names.every((n) => comparePositions(this.positions.get(n) ?? '', position) >= 0);
  }

  /** As ProjectionEngine.waitFor, on what the worker last said. */
  waitFor(position: string, options: { names?: string[]; timeoutMs?: number } = {}): Promise<boolean> {
    return waitForPositions(position, options.names ?? this.projections.map((p) => p.name), options.timeoutMs ?? 5_000, this.known);
  }

  /** A reader waits `ms` or until the worker's next message: its runner does not pause short of `position` meanwhile. */
  private async pause(ms: number, position: string): Promise<void> {
    // Told once per position further than the last: a position told is kept there until passed.
    if (comparePositions(position, this.told) > 0 && this.worker) {
      this.told = position;
      this.worker.postMessage({ type: 'waiting', position } satisfies ToWorker);
    }
    await this.sleep(ms, 'progress');
  }

  async status(): Promise<ProjectionStatus[]> {
    return (await this.call('status')) as ProjectionStatus[];
  }

  /** In the worker; no progress is reported from there (the CLI rebuilds with the engine in process). */
  async rebuild(name: string): Promise<{ events: number; position: string }> {
    this.get(name);
    return (await this.call('rebuild', name, this.buildMemoryRows)) as { events: number; position: string };
  }

  async verify(name: string): Promise<Array<{ table: string; differingRows: number }>> {
    this.get(name);
    return (await this.call('verify', name, this.buildMemoryRows)) as Array<{ table: string; differingRows: number }>;
  }

  private receive(message: ToMain): void {
    if (message.type === 'ready') this.progress.emit('ready');
    else if (message.type === 'reply') {
      const reply = this.replies.get(message.id);
      this.replies.delete(message.id);
      if (message.error) reply?.reject(new Error(message.error.message));
      else reply?.resolve(message.result);
    } else {
      // The observers first: a reader woken below must not find a memo that an event made stale.
      message.observers.forEach((told, i) => {
        const observer = this.observers[i];
        if (!observer) return;
        if (told.reset) observer.onReset();
        if (told.events.length > 0) observer.onEvents(told.events);
      });
      // Only forward: what this thread read from a checkpoint row meanwhile may be ahead of the message.
      for (const [name, position] of message.state.positions)
        if (comparePositions(position, this.positions.get(name) ?? '') > 0) this.positions.set(name, position);
      this.owned = new Set(message.state.owned);
      Object.assign(this.sqlCounts, message.sql);
      this.stopped = new Set(message.state.stopped);
      this.progress.emit('progress');
    }
  }

  private call(method: Extract<ToWorker, { type: 'call' }>['method'], ...args: unknown[]): Promise<unknown> {
    const worker = this.worker;
    if (!worker) return Promise.reject(new Error('the projection thread is not running'));
    const id = ++this.calls;
    return new Promise((resolve, reject) => {
      this.replies.set(id, { resolve, reject });
      worker.postMessage({ type: 'call', id, method, args } satisfies ToWorker);
    });
  }

  private sleep(ms: number, until: 'progress' | 'stop'): Promise<void> {
    return new Promise((resolve) => {
      const progress = this.progress;
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        progress.off(until, done);
        resolve();
      }
      progress.once(until, done);
    });
  }
}

/** A thread that failed to start, or ended, is started again after this long. */
const RESTART_MS = LIMITS.consumers.threadRestartMs;

/** The worker's module, beside this one (started by module-thread.ts's WORKER_SOURCE). */
const WORKER_FILE = join(__dirname, `thread-worker${extname(__filename)}`);
