import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import supertest from 'supertest';
import { type CommandContext, load, StateCache } from '../src/platform/commands/commands';
import type { Tally } from '../src/compose/tally';
import { type Config, loadConfig } from '../src/config';
import { accountCreditStream, accountDecider, accountStream } from '../src/domain/ledger/account';
import { PgSql, type SqlCounts } from '../src/eventstore/sql';
import { type RunningServer, startServer } from '../src/server';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials } from '../test/support/app';
import { login } from '../test/support/identity';
import { type Customer, customer, fund } from '../test/support/ledger';
import { startTestCluster, type TestCluster } from '../test/support/postgres';
import { type PeerRun, pgbenchPeer } from './peer';
import {
  CallTimings,
  type CpuSnapshot,
  cpuCalibration,
  cpuPerOp,
  cpuSnapshot,
  describeCpu,
  describeCpuWaits,
  describePostgresSplit,
  envNumber,
  fmtInt,
  fmtMs,
  localPostmaster,
  mapLimit,
  percentile,
  printTable,
  probeFsync,
  writebackSettings,
  profiled,
  statementStats,
  type WalSnapshot,
  walSince,
  walSnapshot,
  LOAD_THREAD_SOURCE,
  markLoadThread,
  postgresOwnWork,
  benchClusterSettings,
} from './support';
import {
  type CpuPerRequest,
  LATE_MS,
  OPEN_LOOP_SOURCE,
  describeTimeline,
  watchMainThread,
  type OpenFigures,
  type OpenRate,
  type OpenStats,
  offeredOf,
  openRates,
  openTargetRows,
} from './open-loop';

/**
 * `npm run bench -- ledger`: HTTP transfers through the real server (in this process) against a
 * throwaway cluster with durable commits (or DATABASE_URL), then (part 3) the same closed loops on the
 * embedded store (PGlite in a fresh DATA_DIR, as `npm start` runs without DATABASE_URL), each beside
 * the Postgres figure of the same run. Measures, prints, asserts nothing.
 *   BENCH_SECONDS   seconds per closed-loop measurement (default 10)
 *   BENCH_WARMUP    seconds of each closed loop before its measured part (default 5): a fresh server
 *                   spends its first seconds in V8's compilers (their background thread takes a CPU
 *                   from the server and postgres), so the figures are of a warm server; the warm-up's
 *                   own rate is printed beside them
 *   BENCH_CLIENTS   concurrent HTTP clients of the closed loops (default 64; the targets are stated for 20 or more)
 *   BENCH_REFERENCE_CLIENTS  clients of one more 50-account loop, printed for reference beside the target
 *                   figure, never compared with a target (default 32; 0 skips it)
 *   BENCH_EMBEDDED_CLIENTS  clients of part 3's loops on the embedded store (default 32; 0 skips part 3); part 1
 *                   runs its loops at this count too (those it has not run already), to compare with
 *   BENCH_POSTGRES  0: part 3 alone (to compare two builds of the embedded store back to back)
 *   BENCH_ACCOUNTS  comma-separated account counts of the closed loops (default 50,10,2)
 *   BENCH_OPEN_RATES part 1b's open loops over the 50 accounts: comma-separated, `25%` a fraction of the
 *                   50-account closed loop's transfers/s, `600` transfers/s (default 25%,50%,90%; 0 skips them)
 *   BENCH_OPEN_SECONDS seconds per open loop (default BENCH_SECONDS); BENCH_OPEN_CONNECTIONS most
 *                   keep-alive connections an open loop opens (default 1,024)
 *   BENCH_HISTORY   events of the long account in part 2 (default 100,000; 0 skips part 2)
 *   BENCH_TIMINGS   1: time the server's transfer path per call (wraps its methods, which costs the server a little)
 *   BENCH_SAMPLES   sequential transfers out of each account in part 2 (default 500)
 *   BENCH_LOG_LEVEL the server's pino level (default warn)
 *   BENCH_CATCHUP   1: also the projections' catch-up alone, after a 50-account loop run with them stopped (CPU per transfer)
 *   BENCH_CPU_PROFILE directory for a CPU profile of the server's main thread during each measured loop
 *   BENCH_PG_SETTINGS extra settings of the throwaway cluster, `;`-separated (e.g. shared_preload_libraries=pg_stat_statements)
 *   BENCH_PEER      0: no part 1c (pgbench in a closed loop and at 25% of its rate, beside the open loop at 25%)
 * The HTTP clients run in a worker thread (a keep-alive HTTP/1.1 connection each) so that their CPU is not
 * spent on the server's event loop; the worker still shares the machine's CPUs.
 */

const ACCOUNT_COUNTS = (process.env.BENCH_ACCOUNTS ?? '50,10,2').split(',').map((n) => Number(n.trim()));
const LIGHT_EVENTS = 10;
const LIGHT_ACCOUNTS = 50;
const SETUP_CONCURRENCY = 8;
const TARGETS = { at50: 4_500, at2: 3_300, historyRatio: 1.2 };
const FUNDING = '1000000';
const TIMINGS = process.env.BENCH_TIMINGS === '1';

// ---------------------------------------------------------------------------------------------
// The load generator: plain JavaScript evaluated in a worker thread (no TypeScript loader needed).

/**
 * The HTTP/1.1 client of the load generators (bench/cards.ts uses it too): plain JavaScript for a
 * worker thread. It connects to `target` (a URL the source that includes it declares).
 */
export const HTTP_CONNECTION_SOURCE = `
const net = require('node:net');
const CRLF2 = Buffer.from('\\r\\n\\r\\n');
const CONTENT_LENGTH = Buffer.from('\\r\\nContent-Length: ');
const EMPTY = Buffer.alloc(0);

/**
 * One keep-alive HTTP/1.1 connection, one request at a time (as a browser or an SDK uses one): the
 * request is written as bytes, the answer read by its status line, Content-Length (or chunked
 * framing) and body. Leaner than node:http's client, so the machine's CPUs go to the server.
 */
class Connection {
  constructor() {
    this.socket = null;
    this.buffer = Buffer.alloc(0);
    this.pending = null;
  }

  open() {
    const socket = net.connect(Number(target.port), target.hostname);
    socket.setNoDelay(true);
    socket.on('data', (chunk) => {
      this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
      this.parse();
    });
    const fail = (e) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.buffer = Buffer.alloc(0);
      const pending = this.pending;
      this.pending = null;
      if (pending) pending({ status: 0, body: String((e && e.code) || e || 'connection closed') });
    };
    socket.on('error', fail);
    socket.on('close', () => fail(null));
    this.socket = socket;
  }

  parse() {
    const head = this.buffer.indexOf(CRLF2);
    if (head < 0 || !this.pending) return;
    const { status, length, chunked } = this.head(head);
    let body;
    let rest;
    if (chunked) {
      const last = this.buffer.indexOf('\\r\\n0\\r\\n\\r\\n', head);
      if (last < 0) return;
      body = this.buffer.toString('utf8', head + 4, last);
      rest = this.buffer.subarray(last + 7);
    } else {
      const total = head + 4 + Math.max(0, length);
      if (this.buffer.length < total) return;
      body = this.buffer.toString('utf8', head + 4, total);
      rest = this.buffer.subarray(total);
    }
    this.buffer = rest.length ? rest : EMPTY;
    const pending = this.pending;
    this.pending = null;
    pending({ status, body });
  }

  /** Status and framing of the answer whose head ends at \`head\`. */
  head(head) {
    const status = (this.buffer[9] - 48) * 100 + (this.buffer[10] - 48) * 10 + (this.buffer[11] - 48);
    // The usual answer: a Content-Length header as Node writes it, read without splitting the head.
    const at = this.buffer.lastIndexOf(CONTENT_LENGTH, head);
    if (at > 0) {
      let length = 0;
      for (let i = at + CONTENT_LENGTH.length; i < head; i++) {
        const c = this.buffer[i];
        if (c === 13) break;
        if (c >= 48 && c <= 57) length = length * 10 + (c - 48);
      }
      return { status, length, chunked: false };
    }
    let length = -1;
    let chunked = false;
    const lines = this.buffer.toString('latin1', 0, head).split('\\r\\n');
    for (let i = 1; i < lines.length; i++) {
      const colon = lines[i].indexOf(':');
      const name = lines[i].slice(0, colon).trim().toLowerCase();
      const value = lines[i].slice(colon + 1).trim();
      if (name === 'content-length') length = Number(value);
      else if (name === 'transfer-encoding' && value.toLowerCase().includes('chunked')) chunked = true;
    }
    return { status, length, chunked };
  }

  request(text) {
    if (!this.socket) this.open();
    return new Promise((resolve) => {
      this.pending = resolve;
      this.socket.write(text);
    });
  }

  close() {
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.destroy();
  }
}

`;

const CLIENT_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const target = new URL('/api/v1/transactions/transfer', workerData.url);
${HTTP_CONNECTION_SOURCE}
/** The request bytes of one (source, destination) pair, built once: the load generator's CPU is the server's too. */
const requests = new Map();

function transfer(connection, from, to) {
  const key = from.token + ' ' + to.accountId;
  let bytes = requests.get(key);
  if (!bytes) {
    const body = JSON.stringify({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: '0.01', description: 'bench' });
    bytes = Buffer.from(
      'POST ' + target.pathname + ' HTTP/1.1\\r\\nHost: ' + target.host + '\\r\\nContent-Type: application/json\\r\\nAuthorization: Bearer ' +
        from.token + '\\r\\nContent-Length: ' + Buffer.byteLength(body) + '\\r\\n\\r\\n' + body,
    );
    requests.set(key, bytes);
  }
  return connection.request(bytes);
}

function outcome() {
  return { latencies: [], statuses: {}, samples: {} };
}

function record(out, ms, res) {
  out.latencies.push(ms);
  out.statuses[res.status] = (out.statuses[res.status] || 0) + 1;
  if (res.status !== 201) {
    const list = out.samples[res.status] || (out.samples[res.status] = []);
    if (list.length < 3) list.push(res.body.slice(0, 200));
  }
}

${OPEN_LOOP_SOURCE}
/** The open loop's request: a transfer from a random account to another. */
function randomTransfer(accounts) {
  const n = accounts.length;
  return (k, connection) => {
    const i = Math.floor(Math.random() * n);
    let j = Math.floor(Math.random() * (n - 1));
    if (j >= i) j++;
    return transfer(connection, accounts[i], accounts[j]);
  };
}

async function loop(connections, accounts, seconds, out) {
  const n = accounts.length;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  await Promise.all(connections.map(async (connection) => {
    while (performance.now() < deadline) {
      const i = Math.floor(Math.random() * n);
      let j = Math.floor(Math.random() * (n - 1));
      if (j >= i) j++;
      const t0 = performance.now();
      const res = await transfer(connection, accounts[i], accounts[j]);
      if (out) record(out, performance.now() - t0, res);
    }
  }));
  return (performance.now() - start) / 1000;
}

const waitForGo = () => new Promise((resolve) => parentPort.once('message', resolve));

parentPort.on('message', async (msg) => {
  if (msg.type === 'loop') {
    const connections = Array.from({ length: msg.clients }, () => new Connection());
    const warm = outcome();
    const warmSeconds = await loop(connections, msg.accounts, msg.warmUpSeconds, warm);
    parentPort.postMessage({ type: 'warm', ok: warm.statuses['201'] || 0, seconds: warmSeconds });
    await waitForGo();
    const out = outcome();
    const seconds = await loop(connections, msg.accounts, msg.seconds, out);
    for (const c of connections) c.close();
    parentPort.postMessage({ type: 'done', seconds, ...out });
  } else if (msg.type === 'open') {
    const idle = [];
    const send = randomTransfer(msg.accounts);
    await openLoop(idle, msg, msg.warmUpSeconds, send, null);
    parentPort.postMessage({ type: 'warm' });
    await waitForGo();
    const out = outcome();
    const stats = await openLoop(idle, msg, msg.seconds, send, (k, ms, res) => record(out, ms, res));
    for (const c of idle) c.close();
    parentPort.postMessage({ type: 'done', ...stats, ...out });
  } else if (msg.type === 'sequence') {
    // One request at a time; the first warmUp pairs are not recorded. Outcomes by class.
    const connection = new Connection();
    const byClass = msg.classes.map(outcome);
    let warm = false;
    for (let k = 0; k < msg.pairs.length; k++) {
      if (k === msg.warmUp && !warm) {
        warm = true;
        parentPort.postMessage({ type: 'warm' });
        await waitForGo();
      }
      const [from, to, cls] = msg.pairs[k];
      const t0 = performance.now();
      const res = await transfer(connection, msg.accounts[from], msg.accounts[to]);
      if (k >= msg.warmUp) record(byClass[cls], performance.now() - t0, res);
    }
    connection.close();
    parentPort.postMessage({ type: 'done', byClass });
  }
});
`;

export interface ClientAccount {
  accountId: number;
  token: string;
}

export interface Outcome {
  latencies: number[];
  statuses: Record<string, number>;
  samples: Record<string, string[]>;
}

/**
 * The worker thread's side of one run: `onWarm` runs between the warm-up and the measured part, told
 * what the warm-up made where the loop counts it (transfers answered 201, and its length).
 */
export class LoadClient {
  readonly worker: Worker;

  constructor(url: string, source = CLIENT_SOURCE) {
    this.worker = new Worker(LOAD_THREAD_SOURCE + source, { eval: true, workerData: { url } });
    this.worker.on('message', (msg: { type: string; tid?: string }) => {
      if (msg.type === 'tid' && msg.tid) markLoadThread(msg.tid);
    });
  }

  run<T>(message: Record<string, unknown>, onWarm: (warm: { ok?: number; seconds?: number }) => Promise<void>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onError = (error: Error) => {
        this.worker.off('message', onMessage);
        reject(error);
      };
      const onMessage = (msg: { type: string; ok?: number; seconds?: number } & T) => {
        if (msg.type === 'warm') {
          onWarm(msg).then(
            () => this.worker.postMessage({ type: 'go' }),
            (error) => onError(error as Error),
          );
        } else if (msg.type === 'done') {
          this.worker.off('message', onMessage);
          this.worker.off('error', onError);
          resolve(msg);
        }
      };
      this.worker.on('message', onMessage);
      this.worker.once('error', onError);
      this.worker.postMessage(message);
    });
  }

  elu(previous?: EventLoopUtilization): EventLoopUtilization {
    return this.worker.performance.eventLoopUtilization(previous);
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

// ---------------------------------------------------------------------------------------------
// Server-side timing: the transfer path's methods, wrapped on the running instance.

type AnyAsync = (...args: unknown[]) => Promise<unknown>;

/** Wraps `target[method]` (own or inherited) to add its duration to `timings` under `label(args)`; failures under `label !ErrorName`. */
function instrument(target: object, method: string, label: string | ((args: unknown[]) => string), timings: CallTimings): void {
  const holder = target as Record<string, unknown>;
  const original = holder[method] as AnyAsync | undefined;
  if (typeof original !== 'function') return;
  holder[method] = async function (this: unknown, ...args: unknown[]) {
    const name = typeof label === 'string' ? label : label(args);
    const t0 = performance.now();
    try {
      const result = await original.apply(this, args);
      timings.add(name, performance.now() - t0);
      return result;
    } catch (error) {
      timings.add(`${name} !${(error as Error)?.constructor?.name ?? 'Error'}`, performance.now() - t0);
      throw error;
    }
  };
}

/** Which account is the long one in part 2 (labels its calls apart); 0 before. */
const heavy = { accountId: 0 };

function instrumentTransferPath(tally: Tally, timings: CallTimings): void {
  const transfers = tally.ledger.transfers as unknown as Record<string, unknown>;
  const cls = (accountId: unknown) => (heavy.accountId && accountId === heavy.accountId ? ' (long account)' : '');
  instrument(transfers, 'transfer', (args) => `ledger.transfer${cls((args[1] as { fromAccountId?: number })?.fromAccountId)}`, timings);
  instrument(transfers, 'decideBatch', 'decideBatch (load the source and the facts, decide all)', timings);
  instrument(tally.commands, 'run', 'CommandHandler.run (decide, one appendMany, retries)', timings);
  instrument(
    tally.store,
    'readStream',
    (args) =>
      `store.readStream${heavy.accountId && (args[0] === accountStream(heavy.accountId) || args[0] === accountCreditStream(heavy.accountId)) ? ' (long account)' : ''}`,
    timings,
  );
  instrument(tally.store, 'appendMany', 'store.appendMany', timings);
  instrument(tally.reads, 'waitFor', 'readYourWrites', timings);
  instrument(tally.sql, 'query', 'sql.query (every caller, projections too)', timings);
  instrument(tally.sql, 'transaction', 'sql.transaction (projection batches, ...)', timings);
}

/** e.g. "store.appendMany 3.10 ms x1.00": mean per call and calls per transfer, in call order. */
function describeTimings(timings: CallTimings, transfers: number): string[] {
  return [...timings.totals].map(
    ([name, t]) => `${name}: ${fmtMs(t.ms / t.calls)} ms (p99 ${fmtMs(timings.p99(name))}) x${(t.calls / Math.max(1, transfers)).toFixed(2)}`,
  );
}

/** The event store's group-commit counters, when it has them. */
function appendStats(tally: Tally): { requests: number; batches: number } | undefined {
  const stats = (tally.store as { stats?: { requests?: unknown; batches?: unknown } }).stats;
  return typeof stats?.requests === 'number' && typeof stats.batches === 'number' ? { requests: stats.requests, batches: stats.batches } : undefined;
}

// ---------------------------------------------------------------------------------------------

interface Bench {
  running: RunningServer;
  tally: Tally;
  http: supertest.Agent;
  partner: PartnerCredentials & { id: string };
  client: LoadClient;
  timings: CallTimings;
  pools: PgSql[];
  postmaster: string | undefined;
  seconds: number;
  warmUpSeconds: number;
  clients: number;
}

interface LoopResult {
  accounts: number;
  clients: number;
  /** A loop at another client count, shown beside the target figures, not compared with them. */
  reference: boolean;
  ok: number;
  rate: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  /** CPU per transfer while measured (NaN when there was no warm-up to snapshot after). */
  cpu: CpuPerRequest;
}

/** Snapshots around a measured part: CPU, WAL, event-loop busy, group commit. */
interface Around {
  cpu: CpuSnapshot;
  wal: WalSnapshot | undefined;
  serverElu: EventLoopUtilization;
  clientElu: EventLoopUtilization;
  append: { requests: number; batches: number } | undefined;
  sql: SqlCounts;
}

async function before(b: Bench): Promise<Around> {
  await statementStats(b.tally.sql, true);
  const wal = b.pools.length ? await walSnapshot(b.pools) : undefined;
  b.timings.reset();
  return {
    cpu: cpuSnapshot(b.postmaster),
    wal,
    serverElu: performance.eventLoopUtilization(),
    clientElu: b.client.elu(),
    append: appendStats(b.tally),
    sql: sqlCounts(b),
  };
}

async function after(b: Bench, from: Around, ops: number): Promise<{ lines: string[]; cpu: CpuPerRequest }> {
  const now = cpuSnapshot(b.postmaster);
  const cpu = `${describeCpu(from.cpu, now, ops)}; machine speed check ${fmtMs(cpuCalibration())} ms (20,000 SHA-256, lower is faster)`;
  const serverElu = performance.eventLoopUtilization(from.serverElu).utilization;
  const clientElu = b.client.elu(from.clientElu).utilization;
  const lines = [
    `${cpu}`,
    ...[describeCpuWaits(from.cpu, now, ops)].filter(Boolean),
    await describePostgresSplit(b.tally.sql, from.cpu, now, ops),
    `event loop busy: server (main thread) ${(100 * serverElu).toFixed(0)}%, HTTP clients (worker) ${(100 * clientElu).toFixed(0)}%`,
  ];
  const append = appendStats(b.tally);
  const batches = append && from.append ? append.batches - from.append.batches : 0;
  const groupCommit =
    append && from.append && batches > 0 ? `, ${((append.requests - from.append.requests) / batches).toFixed(1)} appendMany calls per es_append_batch` : '';
  if (from.wal) {
    const wal = await walSince(b.pools, from.wal);
    const syncs = wal.walSyncs > 0 ? `${(ops / wal.walSyncs).toFixed(1)} transfers per WAL fsync` : 'no WAL fsync';
    lines.push(`WAL ${fmtInt(wal.bytes / Math.max(1, ops))} B/transfer, ${syncs}${groupCommit}`);
  } else if (groupCommit) lines.push(groupCommit.slice(2));
  const { statements, transactions } = sqlCounts(b);
  const per = (n: number) => (n / Math.max(1, ops)).toFixed(2);
  lines.push(
    `SQL per transfer (every caller, projections too): ${per(statements - from.sql.statements)} statements, ${per(transactions - from.sql.transactions)} explicit transactions`,
  );
  lines.push(...(await statementStats(b.tally.sql, false)));
  return { lines, cpu: cpuPerOp(from.cpu, now, ops) };
}

function describeStatuses(statuses: Record<string, number>, samples: Record<string, string[]>): string[] {
  const others = Object.entries(statuses).filter(([s]) => s !== '201');
  if (others.length === 0) return ['errors: none (every response 201)'];
  return others.map(([s, n]) => `errors: ${fmtInt(n)} x HTTP ${s === '0' ? '(no response)' : s}, e.g. ${(samples[s] ?? []).slice(0, 2).join(' | ')}`);
}

const sortedOf = (latencies: number[]) => Float64Array.from(latencies).sort();
const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);

/** Statements and transactions of every caller: the main thread's pool, and the projection thread's. */
function sqlCounts(b: Bench): SqlCounts {
  const own = b.tally.sql.counts;
  const thread = (b.tally.engine as { sqlCounts?: SqlCounts }).sqlCounts;
  return { statements: own.statements + (thread?.statements ?? 0), transactions: own.transactions + (thread?.transactions ?? 0) };
}

async function closedLoop(b: Bench, accounts: Customer[], clients = b.clients, store = 'postgres'): Promise<LoopResult> {
  return profiled(`${store}-loop-${accounts.length}-accounts-${clients}-clients`, (started) => measureLoop(b, accounts, clients, started));
}

async function measureLoop(b: Bench, accounts: Customer[], clients: number, started: () => Promise<void>): Promise<LoopResult> {
  let around: Around | undefined;
  let warmUp = '';
  const out = await b.client.run<Outcome & { seconds: number }>(
    {
      type: 'loop',
      accounts: accounts.map((c): ClientAccount => ({ accountId: c.accountId, token: c.token })),
      clients,
      warmUpSeconds: b.warmUpSeconds,
      seconds: b.seconds,
    },
    async (warm) => {
      warmUp = `warm-up, not counted: ${fmtInt((warm.ok ?? 0) / (warm.seconds ?? 1))} transfers/s over ${(warm.seconds ?? 0).toFixed(1)} s`;
      around = await before(b);
      await started();
    },
  );
  const ok = out.statuses['201'] ?? 0;
  const sorted = sortedOf(out.latencies);
  const measured = around ? await after(b, around, out.latencies.length) : { lines: [], cpu: { nodeUs: Number.NaN, postgresUs: Number.NaN } };
  const result = {
    accounts: accounts.length,
    clients,
    reference: clients !== b.clients,
    ok,
    rate: ok / out.seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    statuses: out.statuses,
    cpu: measured.cpu,
  };
  const details = measured.lines;
  console.log(
    `  ${`${accounts.length} accounts, ${clients} clients`.padEnd(26)}${fmtInt(result.rate).padStart(7)} transfers/s  p50 ${fmtMs(result.p50).padStart(7)} ms  p99 ${fmtMs(result.p99).padStart(7)} ms  (${fmtInt(ok)} x 201 in ${out.seconds.toFixed(1)} s)`,
  );
  for (const line of [...describeStatuses(out.statuses, out.samples), warmUp, ...details]) console.log(`      ${line}`);
  if (TIMINGS) {
    console.log(`      client mean ${fmtMs(mean(out.latencies))} ms; server, mean (p99) per call and calls per request:`);
    for (const line of describeTimings(b.timings, out.latencies.length)) console.log(`        ${line}`);
  } else console.log(`      client mean ${fmtMs(mean(out.latencies))} ms`);
  return result;
}

/** One open loop of transfers, as the summary judges it and as its table shows it. */
interface OpenLoopResult extends OpenFigures {
  p50: number;
  max: number;
  errors: number;
  /** Written more than LATE_MS after due, or waited for a connection. */
  sentLate: number;
}

/**
 * Part 1b: transfers offered open-loop over the 50-account loop's accounts, at fractions of that
 * loop's rate (BENCH_OPEN_RATES), each after a warm-up at its rate; latency from each request's due time.
 */
async function openLoops(b: Bench, accounts: Customer[], closed: LoopResult, options: BenchOptions): Promise<OpenLoopResult[]> {
  console.log(
    `\n1b. The same transfers over the ${accounts.length} accounts, open loop: offered at fixed rates (of the closed loop's ${fmtInt(closed.rate)}/s), each on an idle keep-alive connection (a new one when none is idle, up to ${fmtInt(options.maxConnections)}); latency from the time each request was due; ${options.openSeconds} s per rate after a warm-up at it`,
  );
  const results: OpenLoopResult[] = [];
  for (const rate of options.openRates)
    results.push(await openLoop(b, accounts, offeredOf(rate, closed.rate), 'fraction' in rate ? rate.fraction : undefined, options));
  printTable(
    ['offered/s', 'achieved/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'sent late', 'server node us/transfer', 'postgres us/transfer'],
    [
      ['closed loop', fmtInt(closed.rate), fmtMs(closed.p50), fmtMs(closed.p99), '-', '-', '-', fmtInt(closed.cpu.nodeUs), fmtInt(closed.cpu.postgresUs)],
      ...results.map((r) => [
        `${fmtInt(r.offered)}${r.fraction === undefined ? '' : ` (${(r.fraction * 100).toFixed(0)}%)`}`,
        fmtInt(r.achieved),
        fmtMs(r.p50),
        fmtMs(r.p99),
        fmtMs(r.max),
        fmtInt(r.errors),
        fmtInt(r.sentLate),
        fmtInt(r.cpu.nodeUs),
        fmtInt(r.cpu.postgresUs),
      ]),
    ],
  );
  console.log(
    `  (server node: this process's threads but the load client's worker thread; "sent late": written more than ${LATE_MS} ms after due, or waiting for a connection)`,
  );
  return results;
}

async function openLoop(b: Bench, accounts: Customer[], offered: number, fraction: number | undefined, options: BenchOptions): Promise<OpenLoopResult> {
  let around: Around | undefined;
  const watched = watchMainThread();
  const out = await profiled(`postgres-open-${accounts.length}-accounts-${Math.round(offered)}-per-s`, (started) =>
    b.client.run<Outcome & OpenStats>(
      {
        type: 'open',
        accounts: accounts.map((c): ClientAccount => ({ accountId: c.accountId, token: c.token })),
        rate: offered,
        maxConnections: options.maxConnections,
        lateMs: LATE_MS,
        warmUpSeconds: Math.min(b.warmUpSeconds, Math.max(1, options.openSeconds * 0.2)),
        seconds: options.openSeconds,
      },
      async () => {
        around = await before(b);
        await started();
      },
    ),
  );
  const main = watched();
  if (!around) throw new Error('the load client finished without a warm-up');
  const { lines, cpu } = await after(b, around, out.latencies.length);
  const sorted = sortedOf(out.latencies);
  const ok = out.statuses['201'] ?? 0;
  const lags = sortedOf(out.lags);
  console.log(
    `  offered ${fmtInt(offered)}/s: ${fmtInt(ok / out.seconds)}/s served, p99 ${fmtMs(percentile(sorted, 0.99))} ms (${fmtInt(out.latencies.length)} requests in ${out.seconds.toFixed(1)} s)`,
  );
  const client = `client: written p99 ${fmtMs(percentile(lags, 0.99))} ms after due; ${fmtInt(out.late)} later than ${LATE_MS} ms, ${fmtInt(out.waited)} waited for a connection; ${fmtInt(out.connections)} connections (${fmtInt(out.opened)} opened while measuring)`;
  const timeline = describeTimeline(out, (await b.tally.checkpoints.reads.list(50)).checkpoints, await postgresOwnWork(b.tally.sql), main);
  for (const line of [...describeStatuses(out.statuses, out.samples), client, timeline, ...lines]) console.log(`      ${line}`);
  if (TIMINGS) {
    console.log('      server, mean (p99) per call and calls per request:');
    for (const line of describeTimings(b.timings, out.latencies.length)) console.log(`        ${line}`);
  }
  return {
    offered,
    fraction,
    achieved: ok / out.seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    errors: out.latencies.length - ok,
    sentLate: out.late + out.waited,
    cpu,
  };
}

/**
 * BENCH_CATCHUP=1: the projections' own cost, apart from the requests'. The closed loop runs with
 * the projection engine stopped, then the engine catches up on what it missed while nothing else
 * runs: the server's CPU per transfer in that catch-up is what the live read models cost.
 */
async function catchUp(b: Bench, accounts: Customer[]): Promise<void> {
  console.log(`  projections' catch-up: the ${accounts.length}-account loop with the projection engine stopped, then the engine alone`);
  const { engine } = b.tally;
  await engine.stop();
  await measureLoop(b, accounts, b.clients, async () => {});
  const head = await b.tally.store.headPosition();
  const rows = async () => Number((await b.tally.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM rm_transactions`))[0]?.n ?? 0);
  const before = await rows();
  const from = cpuSnapshot(b.postmaster);
  const started = performance.now();
  await profiled(`postgres-catchup-${accounts.length}-accounts`, async (go) => {
    await go();
    engine.start();
    if (!(await engine.waitFor(head, { timeoutMs: 300_000 }))) throw new Error('the projections did not catch up');
  });
  const seconds = (performance.now() - started) / 1_000;
  const to = cpuSnapshot(b.postmaster);
  const count = (await rows()) - before;
  console.log(`      ${fmtInt(count)} transfers caught up in ${seconds.toFixed(2)} s (${fmtInt(count / seconds)} transfers/s)`);
  console.log(`      ${describeCpu(from, to, count)}`);
}

// ---------------------------------------------------------------------------------------------
// Setup helpers.

async function customers(b: Bench, count: number, funding: string | null): Promise<Customer[]> {
  return mapLimit(Array.from({ length: count }), SETUP_CONCURRENCY, async () => {
    const c = await customer(b.http, b.partner);
    if (funding) await fund(b.http, b.partner, c, funding);
    return c;
  });
}

/** Events of an account: its own stream (opening, debits, holds) plus its credit stream (money in). */
async function eventsOf(tally: Tally, accountId: number): Promise<number> {
  const [row] = await tally.sql.query<{ n: string }>('SELECT coalesce(sum(revision + 1), 0)::text AS n FROM es_streams WHERE stream_id = ANY($1::text[])', [
    [accountStream(accountId), accountCreditStream(accountId)],
  ]);
  return Number(row?.n ?? 0);
}

const commandContext = (userId: string): CommandContext => ({
  commandId: randomUUID(),
  metadata: { correlationId: randomUUID(), actor: { kind: 'user', id: userId }, benchmark: 'ledger' },
});

/** In-process transfers of 0.01 from each sender (one loop per sender: its queue serializes it anyway). */
async function pump(b: Bench, senders: Customer[], to: (sender: Customer) => Customer, total: number, progress?: (done: number) => void): Promise<number> {
  let issued = 0;
  let done = 0;
  let failures = 0;
  await Promise.all(
    senders.map(async (s) => {
      while (issued < total) {
        issued++;
        try {
          await b.tally.ledger.transfers.transfer(
            { userId: s.id, partnerId: b.partner.id },
            { fromAccountId: s.accountId, toAccountId: to(s).accountId, amount: '0.01', description: 'bench history' },
            commandContext(s.id),
          );
          done++;
          progress?.(done);
        } catch (error) {
          issued--;
          if (++failures > 1_000) throw error;
        }
      }
    }),
  );
  return failures;
}

// ---------------------------------------------------------------------------------------------
// Part 2: a transfer out of a long account against one out of a short one.

interface HistoryResult {
  heavyEvents: number;
  lightEvents: number;
  p50Heavy: number;
  p50Light: number;
  ratio: number;
}

async function history(b: Bench, senders: Customer[], historyEvents: number, samples: number): Promise<HistoryResult> {
  const { tally } = b;
  console.log(`\n2. Transfer out of an account with ${fmtInt(historyEvents)} events vs one with ${LIGHT_EVENTS} (sequential HTTP, interleaved)`);
  const [long, sink, warmLight] = await customers(b, 3, null);
  if (!long || !sink || !warmLight) throw new Error('no customers');
  await fund(b.http, b.partner, long, FUNDING);
  await fund(b.http, b.partner, warmLight, FUNDING);

  // The long history: credits from the part 1 accounts, through tally.ledger.transfer in this process.
  const need = Math.max(0, historyEvents - (await eventsOf(tally, long.accountId)));
  const buildStart = performance.now();
  let lastPrint = buildStart;
  const failures = await pump(
    b,
    senders,
    () => long,
    need,
    (done) => {
      const now = performance.now();
      if (now - lastPrint < 15_000) return;
      lastPrint = now;
      console.log(`      ... ${fmtInt(done)} / ${fmtInt(need)} (${fmtInt(done / ((now - buildStart) / 1_000))}/s)`);
    },
  );
  const buildSeconds = (performance.now() - buildStart) / 1_000;
  const heavyEvents = await eventsOf(tally, long.accountId);
  console.log(
    `  built: ${fmtInt(heavyEvents)} events on account ${long.accountId} in ${buildSeconds.toFixed(1)} s (${fmtInt(need / Math.max(buildSeconds, 1e-9))} in-process transfers/s, ` +
      `${senders.length} senders into one account; ${fmtInt(failures)} failed and were redone)`,
  );

  // What a cache miss costs (restart, another node, eviction). Both of the account's streams, as
  // a command's Reads.account reads them (its 100,000 events are credits): folded from the start, and as the
  // service loads them, from their snapshot (taken by the first such load if none was yet).
  const streams = [accountStream(long.accountId), accountCreditStream(long.accountId)];
  const timed = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const fromStart = () => Promise.all(streams.map((s) => load(tally.store, s, accountDecider)));
  const asTheService = () => {
    const cold = new StateCache();
    cold.snapshots = tally.stateCache.snapshots;
    cold.snapshotEvery = tally.stateCache.snapshotEvery;
    return Promise.all(streams.map((s) => load(tally.store, s, accountDecider, { cache: cold })));
  };
  const folds: number[] = [];
  for (let i = 0; i < 3; i++) folds.push(await timed(fromStart));
  const first = await timed(asTheService);
  for (let waited = 0; waited < 10_000; waited += 50) {
    const [row] = await tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM state_snapshots WHERE stream_id = $1', [streams[1]]);
    if (row?.n === '1') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const fromSnapshot: number[] = [];
  for (let i = 0; i < 3; i++) fromSnapshot.push(await timed(asTheService));
  console.log(
    `  a cold load of it (no state in memory: first use after a restart, on another node, or after eviction): folded from the start ${folds.map(fmtMs).join(' / ')} ms; ` +
      `as the service loads it, from its state snapshot ${fromSnapshot.map(fmtMs).join(' / ')} ms (after a first such load of ${fmtMs(first)} ms, which takes the snapshot when there is none yet); ` +
      'the measurement below is with the state in memory, as in steady state',
  );

  // Short accounts: opened + deposit + credits up to LIGHT_EVENTS; one per few samples so each stays short.
  const lights = await customers(b, LIGHT_ACCOUNTS, FUNDING);
  const topUps = lights.flatMap((c) => Array.from({ length: LIGHT_EVENTS - 2 }, () => c));
  let k = 0;
  await pump(
    b,
    senders,
    () => topUps[k++] ?? sink,
    topUps.length,
    () => {},
  );
  const lightCounts = await Promise.all(lights.map((c) => eventsOf(tally, c.accountId)));
  const lightEvents = Math.round(mean(lightCounts));
  // The long account's token may have expired during the build: log in again.
  const { accessToken } = await login(b.http, b.partner, long.email);
  long.token = accessToken;
  heavy.accountId = long.accountId;

  const accounts: ClientAccount[] = [long, sink, warmLight, ...lights].map((c) => ({ accountId: c.accountId, token: c.token }));
  const pairs: Array<[number, number, number]> = [];
  const warmUp = 20;
  for (let i = 0; i < warmUp; i++) pairs.push(i % 2 ? [0, 1, 0] : [2, 1, 1]);
  for (let i = 0; i < samples; i++) {
    const light: [number, number, number] = [3 + (i % lights.length), 1, 1];
    const long: [number, number, number] = [0, 1, 0];
    pairs.push(...(i % 2 ? [long, light] : [light, long]));
  }
  let around: Around | undefined;
  const out = await b.client.run<{ byClass: Outcome[] }>({ type: 'sequence', accounts, pairs, warmUp, classes: ['long', 'short'] }, async () => {
    around = await before(b);
  });
  const [heavyOut, lightOut] = out.byClass;
  if (!heavyOut || !lightOut) throw new Error('no outcome');
  const h = sortedOf(heavyOut.latencies);
  const l = sortedOf(lightOut.latencies);
  const p50Heavy = percentile(h, 0.5);
  const p50Light = percentile(l, 0.5);
  const lightAfter = Math.round(mean(await Promise.all(lights.map((c) => eventsOf(tally, c.accountId)))));
  console.log(
    `  out of ${fmtInt(heavyEvents)}-event account: p50 ${fmtMs(p50Heavy)} ms  p99 ${fmtMs(percentile(h, 0.99))} ms  mean ${fmtMs(mean(heavyOut.latencies))} ms  (${samples} transfers)`,
  );
  console.log(
    `  out of ${lightEvents}-event accounts:     p50 ${fmtMs(p50Light)} ms  p99 ${fmtMs(percentile(l, 0.99))} ms  mean ${fmtMs(mean(lightOut.latencies))} ms  (${samples} transfers over ${lights.length} accounts, ${lightEvents} -> ${lightAfter} events each)`,
  );
  console.log(`  ratio p50 long / short: ${(p50Heavy / p50Light).toFixed(2)}x`);
  const statuses: Record<string, number> = {};
  const samplesByStatus: Record<string, string[]> = {};
  for (const o of out.byClass) {
    for (const [s, n] of Object.entries(o.statuses)) statuses[s] = (statuses[s] ?? 0) + n;
    for (const [s, list] of Object.entries(o.samples)) samplesByStatus[s] = [...(samplesByStatus[s] ?? []), ...list];
  }
  const details = around ? (await after(b, around, samples * 2)).lines : [];
  for (const line of [...describeStatuses(statuses, samplesByStatus), ...details]) console.log(`      ${line}`);
  if (TIMINGS) {
    console.log('      server, mean (p99) per call and calls per request:');
    for (const line of describeTimings(b.timings, samples * 2)) console.log(`        ${line}`);
  }
  return { heavyEvents, lightEvents, p50Heavy, p50Light, ratio: p50Heavy / p50Light };
}

// ---------------------------------------------------------------------------------------------

const EMBEDDED_TARGET = { ratio: 0.3, p50Ms: 50 };

function printSummary(loops: LoopResult[], open: OpenLoopResult[], hist: HistoryResult | undefined, embedded: LoopResult[]): void {
  console.log('\nAll closed-loop measurements');
  printTable(
    ['accounts', 'clients', 'transfers', 'transfers/s', 'p50 ms', 'p99 ms', 'non-201'],
    loops.map((r) => [
      String(r.accounts),
      `${r.clients}${r.reference ? ' (reference)' : ''}`,
      fmtInt(r.ok),
      fmtInt(r.rate),
      fmtMs(r.p50),
      fmtMs(r.p99),
      Object.entries(r.statuses)
        .filter(([s]) => s !== '201')
        .map(([s, n]) => `${fmtInt(n)} x ${s}`)
        .join(', ') || '0',
    ]),
  );
  const loopOf = (n: number) => loops.find((r) => r.accounts === n && !r.reference);
  const rate = (n: number) => loopOf(n)?.rate ?? Number.NaN;
  const clientsOf = (n: number) => `${loopOf(n)?.clients ?? '?'} clients`;
  console.log('\nSummary against targets (durable commits, HTTP, in-process server)');
  // A loop not run this time (BENCH_ACCOUNTS) has no row: there is nothing to compare.
  const rows: string[][] = [50, 2].flatMap((n) => {
    const target = n === 50 ? TARGETS.at50 : TARGETS.at2;
    if (!loopOf(n)) return [];
    return [
      [
        `HTTP transfers/s, ${n} accounts, ${clientsOf(n)}`,
        fmtInt(rate(n)),
        `>= ${fmtInt(target)}`,
        rate(n) >= target ? 'yes' : 'NO',
        (rate(n) / target).toFixed(2),
      ],
    ];
  });
  if (hist) {
    rows.push([
      `p50 out of ${fmtInt(hist.heavyEvents)}-event / ${hist.lightEvents}-event account`,
      `${hist.ratio.toFixed(2)}x`,
      `<= ${TARGETS.historyRatio.toFixed(1)}x`,
      hist.ratio <= TARGETS.historyRatio ? 'yes' : 'NO',
      (hist.ratio / TARGETS.historyRatio).toFixed(2),
    ]);
  }
  const e = embedded.find((r) => r.accounts === 50);
  const pg = e && loops.find((r) => r.accounts === 50 && r.clients === e.clients);
  if (e && pg) {
    const ratio = e.rate / pg.rate;
    rows.push(
      [
        `embedded / postgres transfers/s, 50 accounts, ${e.clients} clients`,
        `${ratio.toFixed(2)}x`,
        `>= ${EMBEDDED_TARGET.ratio}x`,
        ratio >= EMBEDDED_TARGET.ratio ? 'yes' : 'NO',
        (ratio / EMBEDDED_TARGET.ratio).toFixed(2),
      ],
      [
        `embedded p50 ms, 50 accounts, ${e.clients} clients`,
        fmtMs(e.p50),
        `< ${EMBEDDED_TARGET.p50Ms}`,
        e.p50 < EMBEDDED_TARGET.p50Ms ? 'yes' : 'NO',
        (e.p50 / EMBEDDED_TARGET.p50Ms).toFixed(2),
      ],
    );
  }
  const at50 = loopOf(50);
  if (at50) for (const row of openTargetRows('transfers, 50 accounts', at50, open)) rows.push([...row, '-']);
  printTable(['figure', 'measured', 'target', 'met', 'x of target'], rows);
}

interface BenchOptions {
  seconds: number;
  /** Of every closed loop, before its measured part (see BENCH_WARMUP). */
  warmUpSeconds: number;
  clients: number;
  referenceClients: number;
  historyEvents: number;
  samples: number;
  /** Clients of the embedded part's loops (0 skips it). */
  embeddedClients: number;
  /** BENCH_CATCHUP=1: the projections' catch-up part (see catchUp). */
  catchUp: boolean;
  /** Part 1b's offered rates (BENCH_OPEN_RATES; none skips it), seconds per rate, most connections. */
  openRates: OpenRate[];
  openSeconds: number;
  maxConnections: number;
}

function benchOptions(): BenchOptions {
  return {
    seconds: envNumber('BENCH_SECONDS', 10),
    warmUpSeconds: envNumber('BENCH_WARMUP', 5),
    clients: envNumber('BENCH_CLIENTS', 64, { integer: true }),
    referenceClients: envNumber('BENCH_REFERENCE_CLIENTS', 32, { integer: true, zero: true }),
    historyEvents: envNumber('BENCH_HISTORY', 100_000, { integer: true, zero: true }),
    samples: envNumber('BENCH_SAMPLES', 500, { integer: true }),
    embeddedClients: envNumber('BENCH_EMBEDDED_CLIENTS', 32, { integer: true, zero: true }),
    catchUp: process.env.BENCH_CATCHUP === '1',
    openRates: openRates(process.env.BENCH_OPEN_RATES, [0.25, 0.5, 0.9]),
    openSeconds: envNumber('BENCH_OPEN_SECONDS', envNumber('BENCH_SECONDS', 10)),
    maxConnections: envNumber('BENCH_OPEN_CONNECTIONS', 1_024, { integer: true }),
  };
}

/** The service's configuration for a bench server: Postgres at `databaseUrl`, or the embedded store in `dataDir` when none. */
export function benchConfig(dataDir: string, databaseUrl: string | undefined): Config {
  // The service's tuning knobs (APPEND_*, PROJECTIONS_*) pass through from the environment; everything else is fixed here.
  const tuning = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('APPEND_') || k.startsWith('PROJECTIONS_')));
  return {
    ...loadConfig(tuning),
    port: 0,
    dataDir,
    databaseUrl,
    adminToken: ADMIN_TOKEN,
    sandbox: true,
    logLevel: 'warn',
    rateLimit: { partnerRps: 0, userRps: 0, ipRps: 0 },
    kycLimits: { maxTransactionAmount: 1e12, dailyTransactionLimit: 1e12 },
  };
}

/** Starts the server on `config` with its load client and a partner; `maxAccounts` customers funded. */
async function openBench(
  config: Config,
  options: BenchOptions,
  clients: number,
  beforeSetup: (b: Bench) => Promise<void> = async () => {},
): Promise<{ b: Bench; funded: Customer[] }> {
  const running = await startServer(config, pino({ level: process.env.BENCH_LOG_LEVEL ?? 'warn' }));
  const { tally } = running;
  const client = new LoadClient(running.url);
  const http = supertest.agent(running.url);
  const partner = await createPartner(http, 'Bench');
  const timings = new CallTimings();
  // Wrapping the transfer path adds a promise and two clock reads per call to the server's own
  // work, so it is opt-in: the throughput figures are of the service as it runs.
  if (TIMINGS) instrumentTransferPath(tally, timings);
  const b: Bench = {
    running,
    tally,
    http,
    partner: partner as PartnerCredentials & { id: string },
    client,
    timings,
    pools: tally.sql instanceof PgSql ? [tally.sql] : [],
    postmaster: await localPostmaster(tally.sql),
    seconds: options.seconds,
    warmUpSeconds: options.warmUpSeconds,
    clients,
  };
  await beforeSetup(b);
  const setupStart = performance.now();
  const maxAccounts = Math.max(...ACCOUNT_COUNTS);
  const funded = await customers(b, maxAccounts, FUNDING);
  console.log(
    `  setup: ${maxAccounts} customers (registered, KYC approved, logged in, account opened, ${FUNDING} USDC deposited and confirmed) in ${((performance.now() - setupStart) / 1_000).toFixed(1)} s`,
  );
  return { b, funded };
}

async function closeBench(b: Bench | undefined): Promise<void> {
  await b?.client.stop().catch(() => {});
  await b?.running.close().catch(() => {});
}

async function printHeader(b: Bench, options: BenchOptions, load0: number[]): Promise<void> {
  const [info] = await b.tally.sql.query<Record<string, string>>(
    `SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS sync,
            current_setting('fsync') AS fsync, current_setting('wal_sync_method') AS method, current_setting('commit_delay') AS delay`,
  );
  console.log(`Tally ledger bench: ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'throwaway cluster'}, PostgreSQL ${info?.version}`);
  console.log(`  synchronous_commit=${info?.sync} fsync=${info?.fsync} wal_sync_method=${info?.method} commit_delay=${info?.delay}`);
  console.log(
    `  node ${process.version}, ${availableParallelism()} CPUs shared by the server, its HTTP clients (worker thread) and postgres; ` +
      `load average before start ${load0.map((x) => x.toFixed(2)).join(' ')}`,
  );
  const { clients, seconds, historyEvents, samples } = options;
  console.log(`  ${clients} clients, ${seconds}s per closed-loop measurement, history ${fmtInt(historyEvents)} events, ${samples} samples per account`);
  if (clients < 20) console.log(`  NOTE: BENCH_CLIENTS=${clients} is below 20: the closed loop is not the one the targets are stated for`);
  const fsync = probeFsync();
  console.log(`  8 kB write + fdatasync in ${tmpdir()}: p50 ${fmtMs(fsync.p50)} ms, p99 ${fmtMs(fsync.p99)} ms (${fmtInt(fsync.rate)}/s, one at a time)`);
  console.log(`  ${writebackSettings()}`);
}

/** Parts 1 and 2 on the throwaway cluster; each loop at `alsoAt` clients too (unless run already), for part 3 to compare with. */
async function postgresParts(
  config: Config,
  options: BenchOptions,
  alsoAt: number,
  load0: number[],
): Promise<{ loops: LoopResult[]; open: OpenLoopResult[]; hist?: HistoryResult }> {
  let b: Bench | undefined;
  try {
    const opened = await openBench(config, options, options.clients, (bench) => printHeader(bench, options, load0));
    b = opened.b;
    const { funded } = opened;
    console.log(`\n1. HTTP POST /api/v1/transactions/transfer, closed loop, random source -> other random destination, amount 0.01`);
    const loops: LoopResult[] = [];
    for (const n of ACCOUNT_COUNTS) loops.push(await closedLoop(b, funded.slice(0, n)));
    const { referenceClients } = options;
    if (referenceClients > 0 && referenceClients !== options.clients && ACCOUNT_COUNTS.includes(50)) {
      console.log(
        `  reference, not a target figure: the 50-account loop at ${referenceClients} clients (fewer requests in flight: smaller batches, lower latency)`,
      );
      loops.push(await closedLoop(b, funded.slice(0, 50), referenceClients));
    }
    for (const n of ACCOUNT_COUNTS) {
      if (alsoAt === 0 || loops.some((r) => r.accounts === n && r.clients === alsoAt)) continue;
      console.log(`  for part 3 to compare with: the ${n}-account loop at ${alsoAt} clients`);
      loops.push(await closedLoop(b, funded.slice(0, n), alsoAt));
    }
    const at50 = loops.find((r) => r.accounts === 50 && r.clients === options.clients);
    const open = at50 && options.openRates.length > 0 ? await openLoops(b, funded.slice(0, 50), at50, options) : [];
    if (options.catchUp) await catchUp(b, funded.slice(0, 50));
    const hist = options.historyEvents > 0 ? await history(b, funded, options.historyEvents, options.samples) : undefined;
    return { loops, open, hist };
  } finally {
    await closeBench(b);
  }
}

/**
 * Part 3: the same closed loops on the embedded store (PGlite, as `npm start` with no DATABASE_URL
 * runs), in a fresh DATA_DIR, each beside the Postgres loop of this run at the same accounts and clients.
 */
async function embeddedPart(options: BenchOptions, postgres: LoopResult[]): Promise<LoopResult[]> {
  const clients = options.embeddedClients;
  console.log(`\n3. The embedded store (PGlite in a fresh DATA_DIR, no DATABASE_URL): the same closed loop at ${clients} clients`);
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-bench-embedded-'));
  let b: Bench | undefined;
  try {
    const opened = await openBench(benchConfig(dataDir, undefined), options, clients);
    b = opened.b;
    const loops: LoopResult[] = [];
    for (const n of ACCOUNT_COUNTS) loops.push(await closedLoop(b, opened.funded.slice(0, n), clients, 'embedded'));
    printTable(
      ['accounts', 'clients', 'embedded transfers/s', 'p50 ms', 'postgres transfers/s', 'p50 ms', 'embedded / postgres'],
      loops.map((e) => {
        const pg = postgres.find((r) => r.accounts === e.accounts && r.clients === e.clients);
        return [
          String(e.accounts),
          String(e.clients),
          fmtInt(e.rate),
          fmtMs(e.p50),
          pg ? fmtInt(pg.rate) : '-',
          pg ? fmtMs(pg.p50) : '-',
          pg ? `${(e.rate / pg.rate).toFixed(2)}x` : '-',
        ];
      }),
    );
    return loops;
  } finally {
    await closeBench(b);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Part 1c: pgbench in a closed loop and at 25% of its rate, on a fresh database of the same cluster (bench/peer.ts). */
async function peerPart(cluster: TestCluster, seconds: number): Promise<PeerRun[]> {
  console.log(
    `\n1c. The machine's own price of light load: pgbench -N (PostgreSQL's C client, an UPDATE, a SELECT and an INSERT per transaction) on the same cluster, a closed loop of 64 clients and then 25% of its rate; ${seconds} s each`,
  );
  return pgbenchPeer(await cluster.freshDatabase(), seconds, 0.25);
}

export async function runLedgerBench(): Promise<void> {
  const options = benchOptions();
  const load0 = loadavg();
  const cluster = await startTestCluster({
    durable: true,
    settings: benchClusterSettings(),
    unixSocket: process.env.BENCH_PG_SOCKET === 'unix',
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-bench-ledger-'));
  let stopped = false;
  const stopCluster = () => {
    if (stopped) return;
    stopped = true;
    cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const onSignal = () => {
    stopCluster();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', stopCluster);
  try {
    const config = benchConfig(dataDir, await cluster.freshDatabase());
    // BENCH_POSTGRES=0: the embedded part alone (to compare two builds of it, run back to back).
    const { loops, open, hist }: { loops: LoopResult[]; open: OpenLoopResult[]; hist?: HistoryResult } =
      process.env.BENCH_POSTGRES === '0' ? { loops: [], open: [] } : await postgresParts(config, options, options.embeddedClients, load0);
    const peer = open.some((o) => o.fraction === 0.25) && process.env.BENCH_PEER !== '0' ? await peerPart(cluster, options.openSeconds) : [];
    stopCluster();
    const embedded = options.embeddedClients > 0 ? await embeddedPart(options, loops) : [];
    printSummary(loops, open, hist, embedded);
    const [peerClosed, peerLow] = peer;
    if (peerClosed && peerLow)
      console.log(
        `  beside the 25% rows, the machine's own price of light load (part 1c, pgbench on the same cluster): pgbench ${(peerLow.pgbenchUs / peerClosed.pgbenchUs).toFixed(2)}x, postgres ${(peerLow.postgresUs / peerClosed.postgresUs).toFixed(2)}x`,
      );
    const load1 = loadavg();
    console.log(`\nload average at the end ${load1.map((x) => x.toFixed(2)).join(' ')} (${availableParallelism()} CPUs)`);
  } finally {
    stopCluster();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', stopCluster);
  }
}
