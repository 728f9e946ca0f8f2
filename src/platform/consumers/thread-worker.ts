import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { loggerOptions } from '../logging';
import type { EventStore, RecordedEvent } from '../../eventstore/port';
import { PostgresEventStore } from '../../eventstore/postgres';
import { PgSql } from '../../eventstore/sql';
import type { Projection } from './projection';
import { ProjectionEngine } from './projections';
import type { ThreadOptions, ThreadSealing, ToMain, ToWorker } from './thread';
import { LIMITS } from '../limits';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyEncryptionKey } from '../keys';
import { DataKeys } from '../sealing/data-keys';
import { Keks } from '../sealing/keks';
import { PersonalData, type PersonalFields } from '../sealing/personal-data';
import { sealedStore } from '../sealing/sealed-store';

/**
 * The worker side of a ProjectionThread: the service's ProjectionEngine over a connection pool of
 * its own, told by the main thread when events were appended and when readers wait, telling it after
 * every batch where each projection stands and which events its observers must see.
 */
function main(): void {
  const port = parentPort;
  if (!port) throw new Error('thread-worker.ts runs in a worker thread');
  const options = workerData as ThreadOptions;
  const sql = new PgSql(options.databaseUrl, { max: options.poolSize, applicationName: 'tally-projections' });
  const dataKeys = new DataKeys(sql, new Keks(options.sealing.keks, () => keksOf(options.sealing)));
  const { personalData } = require(options.sealing.module) as { personalData: PersonalFields[] };
  const raw = withAppends(new PostgresEventStore(sql), new Appends(new Int32Array(options.appends)));
  const store = sealedStore(raw, new PersonalData(dataKeys, personalData));
  const { allProjections } = require(options.projectionsModule) as { allProjections: Projection[] };
  const engine = new ProjectionEngine(store, sql, allProjections, pino(loggerOptions(options.logLevel)), { nodeId: options.nodeId });
  engine.paceMs = options.paceMs;
  const send = (message: ToMain) => port.postMessage(message);
  const reporter = new Reporter(engine, options.observed, () => send({ type: 'state', state: engine.state(), observers: reporter.take(), sql: sql.counts }));
  engine.onProgress(() => reporter.tell());
  // Leases taken or lost and failures found between batches reach the main thread within this.
  const ticker = setInterval(() => reporter.tellSoon(), STATE_EVERY_MS);
  ticker.unref();
  const calls: Record<string, (args: unknown[]) => Promise<unknown>> = {
    prepare: async () => engine.prepare(),
    start: async () => engine.start(),
    stop: async () => {
      clearInterval(ticker);
      await engine.stop();
      reporter.tell();
      await sql.close();
    },
    status: async () => engine.status(),
    rebuild: async ([name, memoryRows]) => {
      engine.buildMemoryRows = memoryRows as number;
      return engine.rebuild(name as string);
    },
    verify: async ([name, memoryRows]) => {
      engine.buildMemoryRows = memoryRows as number;
      return engine.verify(name as string);
    },
  };
  serve(port, engine, calls, reporter, dataKeys);
  send({ type: 'ready' });
}

/** Answers the main thread's messages: its readers waiting, and its calls. */
function serve(
  port: MessagePort,
  engine: ProjectionEngine,
  calls: Record<string, (args: unknown[]) => Promise<unknown>>,
  reporter: Reporter,
  dataKeys: DataKeys,
): void {
  const send = (message: ToMain) => port.postMessage(message);
  port.on('message', (message: ToWorker) => {
    if (message.type === 'waiting') return engine.waitingElsewhere(message.position);
    if (message.type === 'forget') return dataKeys.forget(message.owner);
    const call = calls[message.method];
    if (!call) return send({ type: 'reply', id: message.id, error: { message: `no such call: ${message.method}` } });
    call(message.args).then(
      (result) => {
        send({ type: 'reply', id: message.id, result });
        reporter.tellSoon();
      },
      (error: unknown) => send({ type: 'reply', id: message.id, error: { message: error instanceof Error ? error.message : String(error) } }),
    );
  });
}

/**
 * What the main thread's observers must hear, per observer in its order: the events of its
 * projections' types, and resets; sent with the engine's state (tell), or soon after a reset.
 */
class Reporter {
  private readonly pending: Array<{ types: Set<string>; events: RecordedEvent[]; reset: boolean }>;
  private told = false;

  constructor(
    engine: ProjectionEngine,
    observed: string[][],
    private readonly send: () => void,
  ) {
    this.pending = observed.map((names) => {
      const pending = { types: new Set(names.flatMap((n) => engine.get(n).eventTypes)), events: [] as RecordedEvent[], reset: false };
      engine.observe({
        names,
        onEvents: (events) => {
          for (const e of events) if (pending.types.has(e.type)) pending.events.push(e);
        },
        onReset: () => {
          pending.reset = true;
          this.tellSoon();
        },
      });
      return pending;
    });
  }

  /** What each observer is to be told, taken (the next message starts empty). */
  take(): Array<{ events: RecordedEvent[]; reset: boolean }> {
    return this.pending.map((o) => {
      const out = { events: o.events, reset: o.reset };
      o.events = [];
      o.reset = false;
      return out;
    });
  }

  tell(): void {
    this.told = false;
    this.send();
  }

  tellSoon(): void {
    if (this.told) return;
    this.told = true;
    queueMicrotask(() => this.tell());
  }
}

const STATE_EVERY_MS = LIMITS.consumers.threadStateEveryMs;

/**
 * Appends happen on the main thread, which counts them in shared memory: a runner that found
 * nothing new waits for the count to move past what it was when it read the log.
 */
class Appends {
  private seenAtRead = 0;

  constructor(private readonly count: Int32Array) {}

  /** Called as the engine reads the log: an append after this one wakes the next wait at once. */
  reading(): void {
    this.seenAtRead = Atomics.load(this.count, 0);
  }

  async wait(timeoutMs: number): Promise<void> {
    const waited = waitAsync(this.count, 0, this.seenAtRead, timeoutMs);
    if (waited.async) await waited.value;
  }
}

/** Atomics.waitAsync (node 16 and later; in TypeScript's ES2024 library, not in the one this project targets). */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number, t: number): { async: boolean; value: unknown } }).waitAsync;

/**
 * The KEKs of keys.json, read (never written: the main thread keeps that file) when a data key names
 * one the worker lacks; with TALLY_KEYS the keys change only with a restart.
 */
function keksOf(sealing: ThreadSealing): KeyEncryptionKey[] {
  if (process.env.TALLY_KEYS) return sealing.keks;
  return (JSON.parse(readFileSync(join(sealing.dataDir, 'keys.json'), 'utf8')) as { keks?: KeyEncryptionKey[] }).keks ?? sealing.keks;
}

/** The store as the engine reads it here: its own reads, and the main thread's count of appends. */
function withAppends(store: PostgresEventStore, appends: Appends): EventStore {
  const view = Object.create(store) as EventStore;
  view.readAll = (options) => {
    appends.reading();
    return store.readAll(options);
  };
  view.readAllWithHead = (options) => {
    appends.reading();
    return store.readAllWithHead(options);
  };
  view.waitForAppend = (timeoutMs: number) => appends.wait(timeoutMs);
  return view;
}

main();
