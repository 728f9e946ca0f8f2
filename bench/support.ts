import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { Session } from 'node:inspector';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { EventStore } from '../src/eventstore/port';
import type { PostgresEventStore } from '../src/eventstore/postgres';
import type { PgSql, Sql, SqlQueryable } from '../src/eventstore/sql';

/** A positive number (or 0 where allowed) from the environment, or the default when unset. */
export function envNumber(name: string, fallback: number, options: { integer?: boolean; zero?: boolean } = {}): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !options.zero) || (options.integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${options.integer ? 'integer' : 'number'}${options.zero ? ' or 0' : ''}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

export interface Measurement {
  ops: number;
  seconds: number;
  /** Operations per second. */
  rate: number;
  p50: number;
  p99: number;
}

export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

export function summarize(latenciesMs: number[], seconds: number): Measurement {
  const sorted = Float64Array.from(latenciesMs).sort();
  return { ops: sorted.length, seconds, rate: sorted.length / seconds, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
}

async function loop(writers: number, seconds: number, op: (writer: number) => Promise<void>, latencies?: number[]): Promise<number> {
  const start = performance.now();
  const deadline = start + seconds * 1_000;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await op(writer);
        latencies?.push(performance.now() - t0);
      }
    }),
  );
  return (performance.now() - start) / 1_000;
}

/**
 * Runs `op` in `writers` concurrent loops (each awaits its previous op) for a short unrecorded
 * warm-up, then (after `afterWarmUp`) for `seconds`, and returns the throughput and per-op latency.
 */
export async function measure(
  writers: number,
  seconds: number,
  op: (writer: number) => Promise<void>,
  afterWarmUp?: () => Promise<void>,
): Promise<Measurement> {
  await loop(writers, Math.min(1, seconds * 0.2), op);
  await afterWarmUp?.();
  const latencies: number[] = [];
  const elapsed = await loop(writers, seconds, op, latencies);
  return summarize(latencies, elapsed);
}

/** Where the time of a store-backed operation went: summed per store call. */
export class CallTimings {
  readonly totals = new Map<string, { calls: number; ms: number; each: number[] }>();

  add(name: string, ms: number): void {
    const t = this.totals.get(name) ?? { calls: 0, ms: 0, each: [] };
    t.calls++;
    t.ms += ms;
    t.each.push(ms);
    this.totals.set(name, t);
  }

  /** The p99 of one label's calls. */
  p99(name: string): number {
    return percentile(Float64Array.from(this.totals.get(name)?.each ?? []).sort(), 0.99);
  }

  reset(): void {
    this.totals.clear();
  }

  /** e.g. "readStream 0.41 ms, appendMany 1.20 ms (mean per call)". */
  describe(): string {
    return [...this.totals].map(([name, t]) => `${name} ${(t.ms / t.calls).toFixed(2)} ms x${t.calls}`).join(', ');
  }
}

/** The same store, with the time of its read and append calls recorded in `timings`. */
export function timedStore(store: EventStore, timings: CallTimings): EventStore {
  const wrap =
    <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const t0 = performance.now();
      try {
        return await fn(...args);
      } finally {
        timings.add(name, performance.now() - t0);
      }
    };
  const timed: EventStore = Object.create(store);
  timed.readStream = wrap('readStream', store.readStream.bind(store));
  timed.readAll = wrap('readAll', store.readAll.bind(store));
  timed.appendMany = wrap('appendMany', store.appendMany.bind(store));
  return timed;
}

/** WAL position and WAL fsync count at one instant. */
export interface WalSnapshot {
  lsn: string;
  walSyncs: number;
}

/**
 * Backends publish their statistics lazily (up to 10 s later when idle): ask every pooled
 * connection to flush them on its next idle moment, then read pg_stat_wal. WAL bytes come from the
 * LSN, which is exact.
 */
export async function walSnapshot(pools: PgSql[]): Promise<WalSnapshot> {
  for (const sql of pools) {
    const clients = await Promise.all(Array.from({ length: sql.pool.options.max ?? 10 }, () => sql.pool.connect()));
    await Promise.all(clients.map((c) => c.query('SELECT pg_stat_force_next_flush()')));
    for (const c of clients) c.release();
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  const [row] = await (pools[0] as PgSql).query<{ lsn: string; syncs: string }>(
    `SELECT pg_current_wal_lsn()::text AS lsn, wal_sync::text AS syncs FROM pg_stat_wal`,
  );
  return { lsn: row?.lsn ?? '0/0', walSyncs: Number(row?.syncs ?? 0) };
}

export async function walSince(pools: PgSql[], before: WalSnapshot): Promise<{ bytes: number; walSyncs: number }> {
  const after = await walSnapshot(pools);
  const [row] = await (pools[0] as PgSql).query<{ bytes: string }>(`SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS bytes`, [after.lsn, before.lsn]);
  return { bytes: Number(row?.bytes ?? 0), walSyncs: after.walSyncs - before.walSyncs };
}

/** One thread's name, CPU ms, and ms spent runnable but waiting for a CPU. */
export interface ThreadTimes {
  name: string;
  cpuMs: number;
  waitMs: number;
}

/** CPU time used so far by this process, by the Postgres server's processes and by the whole machine. */
export interface CpuSnapshot {
  at: number;
  nodeMs: number;
  /** pid -> CPU ms of the postmaster and its children; empty when the server is not local. */
  postgresMs: Map<string, number>;
  machineBusyMs: number;
  /** CPU time the hypervisor gave to others while this machine's CPUs wanted it (steal). */
  stealMs: number;
  /** This process's threads by tid (Linux; empty elsewhere). */
  threads: Map<string, ThreadTimes>;
  /** pid -> ms the postmaster and its children spent runnable but waiting for a CPU (Linux's schedstat). */
  postgresWaitMs: Map<string, number>;
}

/**
 * Threads of this process that generate load (the benches' HTTP clients, the webhook receiver): their
 * CPU is the load's, not the server's, so the figures per request leave it out and name it apart.
 */
const loadThreads = new Set<string>();

/** Marks a load thread by the tid it reported (see LOAD_THREAD_SOURCE). */
export function markLoadThread(tid: string): void {
  loadThreads.add(tid);
}

/**
 * Plain JavaScript for the top of a load worker's source: it posts `{type: 'tid', tid}` (its thread's
 * id, from /proc/thread-self) first, so that the bench can tell its CPU from the server's (Linux).
 */
export const LOAD_THREAD_SOURCE = `
try {
  require('node:worker_threads').parentPort.postMessage({ type: 'tid', tid: require('node:fs').readlinkSync('/proc/thread-self').split('/').pop() });
} catch {}
`;

const LOAD_CLIENT = 'load client';

let clockTicks: number | undefined;
const ticksToMs = (ticks: number) => {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return (ticks * 1_000) / clockTicks;
};

/**
 * proc(5) stat of one process (or `pid/task/tid`): its command name, parent pid, CPU ms (utime +
 * stime), and the CPU ms of the children it has waited for (cutime + cstime).
 */
export function procStat(pid: string): { comm: string; ppid: string; cpuMs: number; childrenCpuMs: number } | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined; // ended meanwhile, or not on this machine
  }
}

/** A proc(5) stat line, as procStat reads it. */
export function parseProcStat(stat: string): { comm: string; ppid: string; cpuMs: number; childrenCpuMs: number } {
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return {
    comm: stat.slice(stat.indexOf('(') + 1, close),
    ppid: fields[1] ?? '',
    cpuMs: ticksToMs(Number(fields[11]) + Number(fields[12])),
    childrenCpuMs: ticksToMs(Number(fields[13]) + Number(fields[14])),
  };
}

/**
 * Milliseconds a process (or `pid/task/tid`) has spent runnable on a run queue, waiting for a CPU:
 * the second field of proc(5)'s schedstat (nanoseconds); 0 where the kernel keeps none.
 */
export function runQueueWaitMs(pid: string): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6 || 0;
  } catch {
    return 0;
  }
}

/** CPU ms of another process on this machine: its main thread, and its other threads together (Linux). */
export function processCpu(pid: number): { mainMs: number; otherMs: number } {
  let mainMs = 0;
  let otherMs = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = procStat(`${pid}/task/${tid}`);
    if (!stat) continue;
    if (tid === String(pid)) mainMs += stat.cpuMs;
    else otherMs += stat.cpuMs;
  }
  return { mainMs, otherMs };
}

/** The postmaster's pid when the server behind `sql` runs on this machine (other clusters may run beside it). */
export async function localPostmaster(sql: SqlQueryable): Promise<string | undefined> {
  const [row] = await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = procStat(String(row?.pid));
  return backend?.comm === 'postgres' ? backend.ppid : undefined;
}

export function cpuSnapshot(postmaster: string | undefined): CpuSnapshot {
  const postgresMs = new Map<string, number>();
  const postgresWaitMs = new Map<string, number>();
  if (postmaster) {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = procStat(pid);
      if (stat?.comm !== 'postgres' || (pid !== postmaster && stat.ppid !== postmaster)) continue;
      postgresMs.set(pid, stat.cpuMs);
      postgresWaitMs.set(pid, runQueueWaitMs(pid));
    }
  }
  // First line of /proc/stat: user nice system idle iowait irq softirq steal ...
  const jiffies = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const busy = jiffies.slice(0, 8).reduce((a, b) => a + b, 0) - (jiffies[3] ?? 0) - (jiffies[4] ?? 0);
  const { user, system } = process.cpuUsage();
  const threads = new Map<string, ThreadTimes>();
  let tids: string[] = [];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    // not Linux
  }
  for (const tid of tids) {
    const stat = procStat(`self/task/${tid}`);
    const name = tid === String(process.pid) ? 'main' : loadThreads.has(tid) ? LOAD_CLIENT : stat?.comm;
    if (stat && name) threads.set(tid, { name, cpuMs: stat.cpuMs, waitMs: runQueueWaitMs(`self/task/${tid}`) });
  }
  return {
    at: performance.now(),
    nodeMs: (user + system) / 1_000,
    postgresMs,
    postgresWaitMs,
    machineBusyMs: ticksToMs(busy),
    stealMs: ticksToMs(jiffies[7] ?? 0),
    threads,
  };
}

/** A per-thread counter's growth between two snapshots, by role: the main thread, the load threads, the others. */
function byThreadRole(before: CpuSnapshot, after: CpuSnapshot, of: (t: ThreadTimes) => number): { main: number; load: number; other: number } {
  const sums = { main: 0, load: 0, other: 0 };
  for (const [tid, t] of after.threads) {
    const was = before.threads.get(tid);
    const ms = of(t) - (was ? of(was) : 0);
    if (t.name === 'main') sums.main += ms;
    else if (t.name === LOAD_CLIENT) sums.load += ms;
    else sums.other += ms;
  }
  return sums;
}

/**
 * CPU per operation between two snapshots, in microseconds: the server's share of this process (its
 * threads but the load's), its main thread, the load threads, and postgres (NaN when not local).
 */
export function cpuPerOp(before: CpuSnapshot, after: CpuSnapshot, ops: number): { nodeUs: number; mainUs: number; loadUs: number; postgresUs: number } {
  let pg = 0;
  for (const [pid, ms] of after.postgresMs) pg += ms - (before.postgresMs.get(pid) ?? 0);
  const { main, load } = byThreadRole(before, after, (t) => t.cpuMs);
  const per = (ms: number) => (ms * 1_000) / Math.max(1, ops);
  return {
    nodeUs: per(after.nodeMs - before.nodeMs - load),
    mainUs: per(main),
    loadUs: per(load),
    postgresUs: after.postgresMs.size > 0 ? per(pg) : Number.NaN,
  };
}

/**
 * Postgres CPU per operation by process, as pg_stat_activity names it (a client backend by its pool's
 * application_name, the others by backend type): which consumer of the service the database works for.
 * e.g. "postgres by process: tally 800 us, tally-projections 300 us, walwriter 12 us". Processes
 * that ended meanwhile are not named (their share is in the total only).
 */
export async function describePostgresSplit(sql: SqlQueryable, before: CpuSnapshot, after: CpuSnapshot, ops: number): Promise<string> {
  if (after.postgresMs.size === 0) return 'postgres by process: not local';
  const rows = await sql.query<{ pid: number; name: string }>(
    `SELECT pid, CASE WHEN backend_type = 'client backend' THEN coalesce(nullif(application_name, ''), 'client') ELSE backend_type END AS name FROM pg_stat_activity`,
  );
  const nameOf = new Map(rows.map((r) => [String(r.pid), r.name]));
  const byName = new Map<string, number>();
  for (const [pid, ms] of after.postgresMs) {
    const name = nameOf.get(pid) ?? 'unlisted (postmaster, logger)';
    byName.set(name, (byName.get(name) ?? 0) + ms - (before.postgresMs.get(pid) ?? 0));
  }
  const parts = [...byName]
    .filter(([, ms]) => ms * 1_000 >= ops)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${fmtInt((ms * 1_000) / Math.max(1, ops))} us`);
  return `postgres by process: ${parts.join(', ') || 'none above 1 us'}`;
}

/**
 * e.g. "CPU/op: server node 120 us (main 90 us, node 30 us), postgres 340 us; load client 50 us, not
 * counted; 2 CPUs 97% busy (other processes 12%)". Postgres time
 * is summed per process still alive at the end (a pooled connection closed meanwhile loses its share).
 */
export function describeCpu(before: CpuSnapshot, after: CpuSnapshot, ops: number): string {
  const perOp = cpuPerOp(before, after, ops);
  const node = after.nodeMs - before.nodeMs;
  const pg = after.postgresMs.size > 0 ? (perOp.postgresUs * Math.max(1, ops)) / 1_000 : 0;
  const capacity = (after.at - before.at) * availableParallelism();
  const busy = after.machineBusyMs - before.machineBusyMs;
  const others = Math.max(0, busy - node - pg);
  const us = (ms: number) => `${fmtInt((ms * 1_000) / Math.max(1, ops))} us`;
  const postgres = after.postgresMs.size > 0 ? `, postgres ${fmtInt(perOp.postgresUs)} us` : ' (postgres not local)';
  const pct = (ms: number) => `${((100 * ms) / capacity).toFixed(0)}%`;
  const byName = new Map<string, number>();
  for (const [tid, t] of after.threads) byName.set(t.name, (byName.get(t.name) ?? 0) + t.cpuMs - (before.threads.get(tid)?.cpuMs ?? 0));
  const threads = [...byName]
    .filter(([name, ms]) => name !== LOAD_CLIENT && ms * 1_000 >= ops)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${us(ms)}`)
    .join(', ');
  const steal = after.stealMs - before.stealMs;
  const stolen = steal > 0 ? `, ${pct(steal)} stolen by the hypervisor` : '';
  const load = byName.has(LOAD_CLIENT) ? `; load client ${fmtInt(perOp.loadUs)} us, not counted` : '';
  return `CPU/op: server node ${fmtInt(perOp.nodeUs)} us${threads ? ` (${threads})` : ''}${postgres}${load}; ${availableParallelism()} CPUs ${pct(busy)} busy (other processes ${pct(Math.max(0, others - steal))}${stolen})`;
}

/**
 * Time spent runnable but waiting for a CPU, per operation, by the server's main thread, its other
 * threads, postgres and the load client: what the CPUs' contention adds to the latencies (Linux;
 * empty elsewhere). e.g. "waiting for a CPU/op: main 300 us, other threads 90 us, postgres 250 us;
 * load client 40 us".
 */
export function describeCpuWaits(before: CpuSnapshot, after: CpuSnapshot, ops: number): string {
  const waited = { ...byThreadRole(before, after, (t) => t.waitMs), postgres: 0 };
  for (const [pid, ms] of after.postgresWaitMs) waited.postgres += ms - (before.postgresWaitMs.get(pid) ?? 0);
  if (after.threads.size === 0) return '';
  const us = (ms: number) => `${fmtInt((ms * 1_000) / Math.max(1, ops))} us`;
  const postgres = after.postgresWaitMs.size > 0 ? `, postgres ${us(waited.postgres)}` : '';
  const load = waited.load > 0 ? `; load client ${us(waited.load)}` : '';
  return `waiting for a CPU/op: main ${us(waited.main)}, other threads ${us(waited.other)}${postgres}${load}`;
}

/** Latency of an 8 kB write + fdatasync in the temp dir (where the throwaway cluster lives): the floor of a durable commit. */
export function probeFsync(count = 300): Measurement {
  const dir = mkdtempSync(join(tmpdir(), 'tally-fsync-'));
  const fd = openSync(join(dir, 'probe'), 'w');
  const page = Buffer.alloc(8_192, 7);
  const latencies: number[] = [];
  const start = performance.now();
  try {
    for (let i = 0; i < count; i++) {
      const t0 = performance.now();
      writeSync(fd, page, 0, page.length, (i % 16) * page.length);
      fdatasyncSync(fd);
      latencies.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  return summarize(latencies, (performance.now() - start) / 1_000);
}

/**
 * The kernel's writeback of dirty pages, where it can be read (Linux). PostgreSQL writes its data
 * files through the page cache without syncing them until a checkpoint; with Linux's defaults
 * (pages written back once 30 s old, or past 10% of memory) half a minute of them leaves at once,
 * and the WAL's fdatasync waits behind that burst for 100-250 ms here. A database host bounds it
 * (vm.dirty_background_bytes of a few MB): docs/scaling.md, "The tails".
 */
export function writebackSettings(): string {
  const read = (name: string) => {
    try {
      return readFileSync(`/proc/sys/vm/${name}`, 'utf8').trim();
    } catch {
      return null;
    }
  };
  const [expire, ratio, bytes] = [read('dirty_expire_centisecs'), read('dirty_background_ratio'), read('dirty_background_bytes')];
  if (expire === null) return 'kernel writeback: not readable here';
  const background = bytes && bytes !== '0' ? `past ${fmtInt(Number(bytes) / 1024)} kB dirty` : `past ${ratio}% of memory dirty`;
  const bursty = !bytes || bytes === '0' ? ' (bursts: see docs/scaling.md, "The tails")' : '';
  return `kernel writeback: dirty pages written once ${Number(expire) / 100} s old, in the background ${background}${bursty}`;
}

export const fmtInt = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
export const fmtMs = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : '-');

/** Prints an aligned text table: the first column left-aligned, the others right-aligned. */
export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** With BENCH_PG_SETTINGS=shared_preload_libraries=pg_stat_statements: the statements that took postgres' time. */
export async function statementStats(sql: Sql, reset: boolean): Promise<string[]> {
  if (!process.env.BENCH_PG_SETTINGS?.includes('pg_stat_statements')) return [];
  await sql.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  if (reset) {
    await sql.query('SELECT pg_stat_statements_reset()');
    return [];
  }
  // Planning is counted apart, and only with pg_stat_statements.track_planning=on (else 0).
  const rows = await sql.query<{ ms: string; plan: string; calls: string; toplevel: boolean; query: string }>(
    `SELECT round(total_exec_time)::text AS ms, round(total_plan_time)::text AS plan, calls::text, toplevel, regexp_replace(query, '\\s+', ' ', 'g') AS query
       FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time + total_plan_time DESC LIMIT 15`,
  );
  return ['postgres statements by total time (pg_stat_statements; nested ones are inside their caller; planning apart, with track_planning):'].concat(
    rows.map(
      (r) => `  ${r.ms.padStart(7)} ms ${r.plan.padStart(6)} ms planning ${r.calls.padStart(7)} calls ${r.toplevel ? 'top ' : 'nest'} ${r.query.slice(0, 150)}`,
    ),
  );
}

/**
 * How fast this machine runs a fixed piece of work right now: milliseconds for 20,000 SHA-256 of a
 * 256-byte text on this thread. Shared virtual machines go through slow and fast phases; a run whose
 * figure is higher than another's had less CPU to work with.
 */
export function cpuCalibration(): number {
  const text = 'x'.repeat(256);
  const start = performance.now();
  for (let i = 0; i < 20_000; i++) createHash('sha256').update(text).digest('hex');
  return Math.round((performance.now() - start) * 1_000) / 1_000;
}

/**
 * A profile of this process's main thread over what `body` measures (from when it calls `started`).
 * Its own module, which imports nothing of the service: compare's servers load it beside another
 * build's src/, and must load only that build's code.
 * BENCH_CPU_PROFILE=<dir>: the server's main thread is profiled during each measured loop (a
 * .cpuprofile per loop). BENCH_HEAP_PROFILE=<dir>: a sampled heap profile of the objects that
 * outlived young collections (the ones that make scavenges slow and fill the old space), a
 * .heapprofile per loop; bench/profile-diff.ts reads two of them. With BENCH_HEAP_ALL=1, every
 * sampled allocation instead (bytes allocated per transfer, by function: what makes scavenges frequent).
 */
export async function profiled<T>(name: string, body: (started: () => Promise<void>) => Promise<T>): Promise<T> {
  const cpuDir = process.env.BENCH_CPU_PROFILE;
  const heapDir = process.env.BENCH_HEAP_PROFILE;
  const dir = cpuDir ?? heapDir;
  if (!dir) return body(async () => {});
  const [domain, start, stop, extension] = cpuDir
    ? ['Profiler', 'start', 'stop', 'cpuprofile']
    : ['HeapProfiler', 'startSampling', 'stopSampling', 'heapprofile'];
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))));
  try {
    await post(`${domain}.enable`);
    const result = await body(async () => {
      await post(
        `${domain}.${start}`,
        cpuDir ? {} : { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: process.env.BENCH_HEAP_ALL === '1' },
      );
    });
    const { profile } = (await post(`${domain}.${stop}`)) as { profile: object };
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name}.${extension}`);
    writeFileSync(file, JSON.stringify(profile));
    console.log(`      ${cpuDir ? 'CPU' : 'Heap'} profile of the main thread: ${file}`);
    return result;
  } finally {
    session.disconnect();
  }
}

/**
 * What the bench's throwaway cluster did on its own, read from its log beside its data directory:
 * when it began each checkpoint (with why: `wal`, `time`, `immediate force wait`; logged by default
 * since PostgreSQL 15) and when each autovacuum or autoanalyze of a table ended, with its table and
 * how long it took (logged with benchClusterSettings' log_autovacuum_min_duration=0). Times in ms
 * since the epoch; none when the log cannot be read (DATABASE_URL elsewhere).
 */
export async function postgresOwnWork(sql: Sql): Promise<{ at: number; what: string }[]> {
  const [row] = await sql.query<{ data_directory: string }>('SHOW data_directory');
  let text: string;
  try {
    text = readFileSync(join(dirname(row?.data_directory ?? '/nonexistent'), 'log'), 'utf8');
  } catch {
    return [];
  }
  const found: { at: number; what: string }[] = [];
  const line =
    /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) UTC \[\d+\] LOG: {2}(checkpoint starting: (.*)|automatic (vacuum|analyze) of table "[^".]*\.[^".]*\.([^"]*)")/gm;
  for (const m of text.matchAll(line)) {
    const at = Date.parse(`${m[1]}T${m[2]}Z`);
    if (m[4] !== undefined) found.push({ at, what: `checkpoint (${m[4].trim()})` });
    else {
      const elapsed = /elapsed: ([\d.]+) s/.exec(text.slice((m.index ?? 0) + m[0].length, (m.index ?? 0) + m[0].length + 2_000))?.[1];
      found.push({ at, what: `${m[5]} ${m[6]} ended${elapsed ? ` (${elapsed} s)` : ''}` });
    }
  }
  return found;
}

/**
 * The settings of a bench's throwaway cluster: its autovacuum logged, for the open loops' timelines
 * (postgresOwnWork), then BENCH_PG_SETTINGS (`;`-separated).
 */
export const benchClusterSettings = (): string[] => ['log_autovacuum_min_duration=0', ...(process.env.BENCH_PG_SETTINGS?.split(';').filter(Boolean) ?? [])];

/**
 * The Postgres log's append times while a loop runs (the store's onAppendTimed, the figures behind
 * the tally_log_append_seconds metrics): `reset` at the loop's start, `line` at its end. None on
 * another store.
 */
export function appendTimes(store: object): { reset(): void; line(): string | undefined } {
  const timed = (store as Partial<Pick<PostgresEventStore, 'onAppendTimed'>>).onAppendTimed;
  let sql: number[] = [];
  let requests: number[] = [];
  timed?.call(store, (t) => {
    sql.push(t.sqlMs);
    for (const ms of t.requestMs) requests.push(ms);
  });
  const figures = (values: number[]) => {
    const sorted = Float64Array.from(values).sort();
    return `p50 ${fmtMs(percentile(sorted, 0.5))}, p99 ${fmtMs(percentile(sorted, 0.99))}, max ${fmtMs(sorted[sorted.length - 1] ?? Number.NaN)} ms`;
  };
  return {
    reset() {
      sql = [];
      requests = [];
    },
    line: () =>
      timed && requests.length > 0
        ? `log appends, queued to answered: ${figures(requests)}; their batches' SQL: ${figures(sql)} (${(requests.length / sql.length).toFixed(1)} appends a batch)`
        : undefined,
  };
}

/** `fn` over `items`, at most `limit` at a time; the results in the items' order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i] as T, i);
      }
    }),
  );
  return results;
}
