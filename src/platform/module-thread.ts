import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { extname } from 'node:path';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import type { Logger } from 'pino';

type ToModule = { type: 'call'; id: number; method: string; args: unknown[] };
type FromModule = { type: 'reply'; id: number; result?: unknown; error?: { message: string } } | { type: 'event'; name: string; payload: unknown };

export interface ModuleThreadOptions {
  /** The module the worker runs (the composition root names it: the platform imports no capability). */
  file: string;
  /** What the module reads with `moduleData()` (cloned: plain data only). */
  data: unknown;
  log: Logger;
  /** An event the module told (`tellMain`). */
  onEvent(name: string, payload: unknown): void;
  /** The worker ended without being stopped (a fault of its own); the calls in flight have failed. */
  onExit?(code: number): void;
  /**
   * Work that may wait: the thread runs at the lowest CPU priority (see `runInBackground`), so that
   * the process's other threads and the database's processes have the CPUs when they want them.
   */
  background?: boolean;
}

/**
 * A module run in a worker thread of its own, called by method name; it may tell events between
 * calls. Work that would hold the requests' event loop for a long while (a pass over every stream of
 * the log) runs there. The worker starts at the first call and ends at stop(), or when it fails: then
 * the calls in flight fail, and the next call starts a new one.
 */
export class ModuleThread {
  private worker: Worker | undefined;
  private readonly replies = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private calls = 0;

  constructor(private readonly options: ModuleThreadOptions) {}

  call(method: string, ...args: unknown[]): Promise<unknown> {
    const worker = this.worker ?? this.spawn();
    const id = ++this.calls;
    return new Promise((resolve, reject) => {
      this.replies.set(id, { resolve, reject });
      worker.postMessage({ type: 'call', id, method, args } satisfies ToModule);
    });
  }

  /** Calls the module's `stop` (when the worker runs), then ends the worker. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    await this.call('stop').catch((error) => this.options.log.warn({ err: error }, 'a module thread did not stop cleanly'));
    this.worker = undefined;
    await worker.terminate();
  }

  private spawn(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file: this.options.file, data: this.options.data, background: this.options.background === true },
    });
    this.worker = worker;
    worker.on('message', (message: FromModule) => this.receive(message));
    worker.on('error', (error) => this.options.log.error({ err: error }, 'a module thread failed'));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const { reject } of this.replies.values()) reject(new Error(`the module thread exited (${code})`));
      this.replies.clear();
      this.options.onExit?.(code);
    });
    return worker;
  }

  private receive(message: FromModule): void {
    if (message.type === 'event') {
      this.options.onEvent(message.name, message.payload);
      return;
    }
    const reply = this.replies.get(message.id);
    this.replies.delete(message.id);
    if (message.error) reply?.reject(new Error(message.error.message));
    else reply?.resolve(message.result);
  }
}

/** In the worker: the data the ModuleThread was given. */
export const moduleData = <T>(): T => (workerData as { data: T }).data;

/**
 * The calling thread at the lowest CPU priority (nice 19): the kernel then gives it the CPUs other
 * threads leave, and a share of about 1.5% against each thread that wants one at the default. Linux
 * keeps a nice value per thread (`/proc/thread-self` names this one); elsewhere nothing changes, and
 * false says so.
 */
export function runInBackground(): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, 19);
    return true;
  } catch {
    return false;
  }
}

/** In the worker: answers the ModuleThread's calls with `methods` (an unknown method is refused). */
export function serveModule(methods: Record<string, (...args: unknown[]) => Promise<unknown>>): void {
  const port = parentPort;
  if (!port) throw new Error('serveModule runs in a worker thread');
  if ((workerData as { background?: boolean }).background) runInBackground();
  port.on('message', (message: ToModule) => {
    const method = methods[message.method];
    const answer = method ? method(...message.args) : Promise.reject(new Error(`no such call: ${message.method}`));
    answer.then(
      (result) => port.postMessage({ type: 'reply', id: message.id, result } satisfies FromModule),
      (error: unknown) =>
        port.postMessage({ type: 'reply', id: message.id, error: { message: error instanceof Error ? error.message : String(error) } } satisfies FromModule),
    );
  });
}

/** In the worker: tells the main thread an event (ModuleThreadOptions.onEvent). */
export function tellMain(name: string, payload: unknown): void {
  parentPort?.postMessage({ type: 'event', name, payload } satisfies FromModule);
}

/**
 * What a worker of this process is started with (`eval`): it loads the module named by its
 * `workerData.file`; from the TypeScript sources (npm start, the tests) through the loader the main
 * thread runs under, which a worker does not inherit.
 */
export const WORKER_SOURCE = `${extname(__filename) === '.ts' ? "require('tsx/cjs');" : ''} require(require('node:worker_threads').workerData.file);`;
