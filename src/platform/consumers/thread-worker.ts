import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import type { EventStore, RecordedEvent } from '../../eventstore/port';
import { PostgresEventStore } from '../../eventstore/postgres';
import { PgSql } from '../../eventstore/sql';
import { allProjections } from '../../projections/index';
import { ProjectionEngine } from './runner';
import type { ThreadOptions, ToMain, ToWorker } from './thread';

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
  const appends = new Appends(new Int32Array(options.appends));
  const store = withAppends(new PostgresEventStore(sql), appends);
  const engine = new ProjectionEngine(store, sql, allProjections, pino({ level: options.logLevel }), { nodeId: options.nodeId });
  engine.paceMs = options.paceMs;

  // Per observer of the main thread, in its order: the events of its projections' types, and resets.
  const observed = options.observed.map((names) => {
    const types = new Set(names.flatMap((n) => engine.get(n).eventTypes));
    const pending = { events: [] as RecordedEvent[], reset: false };
    engine.observe({
      names,
      onEvents: (events) => {
        for (const e of events) if (types.has(e.type)) pending.events.push(e);
      },
      onReset: () => {
        pending.reset = true;
        tellSoon();
      },
    });
    return pending;
  });
  const send = (message: ToMain) => port.postMessage(message);
  const tell = () => {
    told = false;
    const observers = observed.map((o) => {
      const out = { events: o.events, reset: o.reset };
      o.events = [];
      o.reset = false;
      return out;
    });
    send({ type: 'state', state: engine.state(), observers, sql: sql.counts });
  };
  let told = false;
  const tellSoon = () => {
    if (told) return;
    told = true;
    queueMicrotask(tell);
  };
  engine.onProgress(tell);
  // Leases taken or lost and failures found between batches reach the main thread within this.
  const ticker = setInterval(tellSoon, STATE_EVERY_MS);
  ticker.unref();

  const calls: Record<string, (args: unknown[]) => Promise<unknown>> = {
    prepare: async () => engine.prepare(),
    start: async () => engine.start(),
    stop: async () => {
      clearInterval(ticker);
      await engine.stop();
      tell();
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
  port.on('message', (message: ToWorker) => {
    if (message.type === 'waiting') engine.waitingElsewhere(message.count);
    else {
      const call = calls[message.method];
      if (!call) return send({ type: 'reply', id: message.id, error: { message: `no such call: ${message.method}` } });
      call(message.args).then(
        (result) => {
          send({ type: 'reply', id: message.id, result });
          tellSoon();
        },
        (error: unknown) => send({ type: 'reply', id: message.id, error: { message: error instanceof Error ? error.message : String(error) } }),
      );
    }
  });
  send({ type: 'ready' });
}

const STATE_EVERY_MS = 250;

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

/** The store as the engine reads it here: its own reads, and the main thread's count of appends. */
function withAppends(store: PostgresEventStore, appends: Appends): EventStore {
  const view = Object.create(store) as EventStore;
  view.readAll = (options) => {
    appends.reading();
    return store.readAll(options);
  };
  view.waitForAppend = (timeoutMs: number) => appends.wait(timeoutMs);
  return view;
}

main();
