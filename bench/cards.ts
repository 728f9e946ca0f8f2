import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import supertest from 'supertest';
import { MAX_ATTEMPTS } from '../src/platform/commands/command-handler';
import type { Tally } from '../src/compose/tally';
import { WrongExpectedRevisionError } from '../src/eventstore/port';
import { PgSql } from '../src/eventstore/sql';
import { startServer } from '../src/server';
import { createPartner, type PartnerCredentials } from '../test/support/app';
import { type Customer, customer, fund } from '../test/support/ledger';
import { startTestCluster } from '../test/support/postgres';
import { benchConfig, HTTP_CONNECTION_SOURCE, LoadClient } from './ledger';
import { seedHistory, settleDown } from './card-seed';
import {
  type CpuPerRequest,
  describeTimeline,
  watchMainThread,
  LATE_MS,
  OPEN_LOOP_SOURCE,
  type OpenRate,
  type OpenStats,
  offeredOf,
  openRates,
  openTargetRows,
} from './open-loop';
import {
  type CpuSnapshot,
  cpuCalibration,
  cpuPerOp,
  cpuSnapshot,
  describeCpu,
  describeCpuWaits,
  statementStats,
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
  type WalSnapshot,
  walSince,
  walSnapshot,
  postgresOwnWork,
  benchClusterSettings,
  appendTimes,
} from './support';

/**
 * `npm run bench -- cards`: sandbox card authorizations through HTTP, mixed in one closed loop with
 * transfers between the same accounts, then the same mix in open loops, on a throwaway cluster with
 * durable commits (or DATABASE_URL). Measures, prints, asserts nothing.
 *   BENCH_SECONDS      seconds of the measured closed loop (default 10)
 *   BENCH_CLIENTS      concurrent HTTP callers of the closed loop (default 64): the first half authorize, the rest transfer
 *   BENCH_CARDS        cards, one per customer, and so accounts (default 50)
 *   BENCH_CARD_HISTORY spends each card made before the run, one a day back from yesterday, settled (default 365: a
 *                      year of use, which a card keeps; 0: new cards)
 *   BENCH_OPEN_RATES   the open loops' offered rates, comma-separated: `25%` a fraction of the closed loop's
 *                      requests/s, `600` requests/s (default 25%,50%,75%,90%; 0 skips the open loops)
 *   BENCH_OPEN_SECONDS seconds per open loop (default BENCH_SECONDS)
 *   BENCH_OPEN_CONNECTIONS  most keep-alive connections the open loop opens (default 1,024)
 *   BENCH_CPU_PROFILE  directory for a CPU profile of the server's main thread during each measured loop
 *   BENCH_PG_SETTINGS  extra settings of the throwaway cluster, `;`-separated; with
 *                      shared_preload_libraries=pg_stat_statements, each loop lists the statements that took postgres' time
 * In the closed loop each caller keeps to one kind of request, so that both kinds have the same number
 * of callers and the ratio of their rates is the ratio of how fast each is served (a caller choosing at
 * random would make as many of each, whatever their speed). Its latency is bound to the callers over the
 * rate (Little's law), so the open loop measures latency apart from that: requests due at fixed
 * intervals whatever the answers, each timed from when it was due (a request the client could not send
 * on time counts its wait, and is counted).
 */

const TARGETS = { p99Ms: 20, ratio: 1 };
const FUNDING = '1000000';
const SETUP_CONCURRENCY = 8;

export const CARDS_CLIENT_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const target = new URL(workerData.url);
${HTTP_CONNECTION_SOURCE}
const requests = new Map();

/** The bytes of one request, built once per \`key\`: the load generator's CPU is the server's too. */
function post(connection, key, path, headers, body) {
  let bytes = requests.get(key);
  if (!bytes) {
    const json = JSON.stringify(body);
    bytes = Buffer.from(
      'POST ' + path + ' HTTP/1.1\\r\\nHost: ' + target.host + '\\r\\nContent-Type: application/json\\r\\n' + headers +
        'Content-Length: ' + Buffer.byteLength(json) + '\\r\\n\\r\\n' + json,
    );
    requests.set(key, bytes);
  }
  return connection.request(bytes);
}

const PURCHASE = { amount: '0.01', currency: 'USD', merchantName: 'Bench Shop', merchantCategoryCode: '5411' };

function authorize(connection, partner, card) {
  return post(connection, card.cardId, '/sandbox/v1/cards/' + card.cardId + '/authorizations', partner, PURCHASE);
}

function transfer(connection, from, to) {
  const body = { fromAccountId: from.accountId, toAccountId: to.accountId, amount: '0.01', description: 'bench' };
  return post(connection, from.accountId + ' ' + to.accountId, '/api/v1/transactions/transfer', 'Authorization: Bearer ' + from.token + '\\r\\n', body);
}

function outcome() {
  return { latencies: [], statuses: {}, declined: 0, samples: {} };
}

function record(out, ms, res) {
  out.latencies.push(ms);
  out.statuses[res.status] = (out.statuses[res.status] || 0) + 1;
  if (res.status === 201 && res.body.includes('"status":"declined"')) out.declined++;
  if (res.status !== 201) {
    const list = out.samples[res.status] || (out.samples[res.status] = []);
    if (list.length < 3) list.push(res.body.slice(0, 200));
  }
}

async function loop(connections, msg, seconds, outs) {
  const { cards, partner, authorizers } = msg;
  const n = cards.length;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  await Promise.all(connections.map(async (connection, caller) => {
    const authorizing = caller < authorizers;
    while (performance.now() < deadline) {
      const i = Math.floor(Math.random() * n);
      const t0 = performance.now();
      let res;
      if (authorizing) res = await authorize(connection, partner, cards[i]);
      else {
        let j = Math.floor(Math.random() * (n - 1));
        if (j >= i) j++;
        res = await transfer(connection, cards[i], cards[j]);
      }
      if (outs) record(authorizing ? outs.authorizations : outs.transfers, performance.now() - t0, res);
    }
  }));
  return (performance.now() - start) / 1000;
}

${OPEN_LOOP_SOURCE}
/** The open loop's request k: even k an authorization, odd a transfer, on random cards. */
function mixed(cards, partner) {
  const n = cards.length;
  return (k, connection) => {
    const i = Math.floor(Math.random() * n);
    if (k % 2 === 0) return authorize(connection, partner, cards[i]);
    let j = Math.floor(Math.random() * (n - 1));
    if (j >= i) j++;
    return transfer(connection, cards[i], cards[j]);
  };
}

const waitForGo = () => new Promise((resolve) => parentPort.once('message', resolve));

parentPort.on('message', async (msg) => {
  if (msg.type === 'loop') {
    const connections = Array.from({ length: msg.clients }, () => new Connection());
    await loop(connections, msg, msg.warmUpSeconds, null);
    parentPort.postMessage({ type: 'warm' });
    await waitForGo();
    const outs = { authorizations: outcome(), transfers: outcome() };
    const seconds = await loop(connections, msg, msg.seconds, outs);
    for (const c of connections) c.close();
    parentPort.postMessage({ type: 'done', seconds, ...outs });
  } else if (msg.type === 'open') {
    const idle = [];
    const send = mixed(msg.cards, msg.partner);
    await openLoop(idle, msg, msg.warmUpSeconds, send, null);
    parentPort.postMessage({ type: 'warm' });
    await waitForGo();
    const outs = { authorizations: outcome(), transfers: outcome() };
    const stats = await openLoop(idle, msg, msg.seconds, send, (k, ms, res) => record(k % 2 === 0 ? outs.authorizations : outs.transfers, ms, res));
    for (const c of idle) c.close();
    parentPort.postMessage({ type: 'done', ...stats, ...outs });
  }
});
`;

export interface CardsOutcome {
  latencies: number[];
  statuses: Record<string, number>;
  /** Authorizations answered 201 with a declined card transaction. */
  declined: number;
  samples: Record<string, string[]>;
}

interface Holder extends Customer {
  cardId: string;
}

/** A customer with FUNDING USDC and an active virtual card: applied, approved by the sandbox issuer, issued. */
export async function cardHolder(http: supertest.Agent, partner: PartnerCredentials): Promise<Holder> {
  const who = await customer(http, partner);
  await fund(http, partner, who, FUNDING);
  const applied = await http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
  if (applied.status !== 201) throw new Error(`card application failed ${applied.status} ${JSON.stringify(applied.body)}`);
  const approved = await http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
  if (approved.status !== 202) throw new Error(`approval failed ${approved.status} ${JSON.stringify(approved.body)}`);
  const issued = await http.post('/api/v1/cards').set(who.bearer).send({});
  if (issued.status !== 201) throw new Error(`issue failed ${issued.status} ${JSON.stringify(issued.body)}`);
  return { ...who, cardId: issued.body.data.id };
}

const sortedOf = (latencies: number[]) => Float64Array.from(latencies).sort();
const rateOf = (o: CardsOutcome, seconds: number) => (o.statuses['201'] ?? 0) / seconds;

function describeOutcome(name: string, o: CardsOutcome): string {
  const others = Object.entries(o.statuses).filter(([s]) => s !== '201');
  const errors = others.length
    ? others.map(([s, n]) => `${fmtInt(n)} x HTTP ${s === '0' ? '(no response)' : s}, e.g. ${(o.samples[s] ?? []).slice(0, 2).join(' | ')}`).join('; ')
    : 'every response 201';
  return `${name}: ${errors}${name === 'authorizations' ? `; ${fmtInt(o.declined)} declined` : ''}`;
}

/** Counts the server's appendMany calls, and those refused because a stream moved since it was read (another command appended first). */
function countConflicts(tally: Tally): { appends: number; stale: number } {
  const counts = { appends: 0, stale: 0 };
  const store = tally.store;
  const appendMany = store.appendMany.bind(store);
  store.appendMany = async (...args) => {
    counts.appends++;
    try {
      return await appendMany(...args);
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) counts.stale++;
      throw error;
    }
  };
  return counts;
}

interface Options {
  seconds: number;
  clients: number;
  cards: number;
  /** Settled spends each card made before the run (BENCH_CARD_HISTORY). */
  history: number;
  openSeconds: number;
  openRates: OpenRate[];
  maxConnections: number;
}

interface Run {
  tally: Tally;
  client: LoadClient;
  conflicts: { appends: number; stale: number };
  appendTimes: ReturnType<typeof appendTimes>;
  pools: PgSql[];
  postmaster: string | undefined;
  /** What every load message carries: the cards, their accounts' tokens and the partner's key headers. */
  load: CardsLoad;
}

/** What every message to the cards' load client carries: the cards, their accounts' tokens and the partner's key headers. */
export interface CardsLoad {
  cards: Array<{ cardId: string; accountId: number; token: string }>;
  partner: string;
}

export const cardsLoad = (holders: Holder[], partner: PartnerCredentials): CardsLoad => ({
  cards: holders.map((h) => ({ cardId: h.cardId, accountId: h.accountId, token: h.token })),
  partner: `X-Api-Key: ${partner.headers['X-Api-Key']}\r\nX-Api-Secret: ${partner.headers['X-Api-Secret']}\r\n`,
});

type Around = { cpu: CpuSnapshot; wal?: WalSnapshot };

/** Runs `message` on the load client; `around` is taken after its warm-up, with the conflict counts reset and the profile started. */
async function loadRun<T>(run: Run, profile: string, message: Record<string, unknown>): Promise<{ out: T; around: Around }> {
  let around: Around | undefined;
  const out = await profiled(profile, (started) =>
    run.client.run<T>({ ...run.load, ...message }, async () => {
      around = { wal: run.pools.length ? await walSnapshot(run.pools) : undefined, cpu: cpuSnapshot(run.postmaster) };
      run.conflicts.appends = 0;
      run.conflicts.stale = 0;
      run.appendTimes.reset();
      await statementStats(run.tally.sql, true);
      await started();
    }),
  );
  if (!around) throw new Error('the load client finished without a warm-up');
  return { out, around };
}

/** The CPU, WAL and stale-append lines of a run since `around`, and its CPU per request. */
async function costLines(run: Run, around: Around, requests: number): Promise<{ lines: string[]; cpu: CpuPerRequest }> {
  const now = cpuSnapshot(run.postmaster);
  const lines = [`${describeCpu(around.cpu, now, requests)}; machine speed check ${fmtMs(cpuCalibration())} ms (20,000 SHA-256, lower is faster)`];
  const waits = describeCpuWaits(around.cpu, now, requests);
  if (waits) lines.push(waits);
  if (around.wal) {
    const wal = await walSince(run.pools, around.wal);
    lines.push(`WAL ${fmtInt(wal.bytes / Math.max(1, requests))} B/request, ${(requests / Math.max(1, wal.walSyncs)).toFixed(1)} requests per WAL fsync`);
  }
  lines.push(
    `appends: ${fmtInt(run.conflicts.appends)}, of which ${fmtInt(run.conflicts.stale)} refused for a stale expected revision (each decided again; past ${MAX_ATTEMPTS} attempts a 409)`,
  );
  const times = run.appendTimes.line();
  if (times) lines.push(times);
  lines.push(...(await statementStats(run.tally.sql, false)));
  return { lines, cpu: cpuPerOp(around.cpu, now, requests) };
}

/** The server, its load client and the card holders; then the closed loop, the open loops and the summary. */
async function measure(databaseUrl: string, dataDir: string, options: Options): Promise<void> {
  const running = await startServer(benchConfig(dataDir, databaseUrl), pino({ level: process.env.BENCH_LOG_LEVEL ?? 'warn' }));
  const client = new LoadClient(running.url, CARDS_CLIENT_SOURCE);
  try {
    const { tally } = running;
    const http = supertest.agent(running.url);
    const partner = await createPartner(http, 'Bench');
    const setupStart = performance.now();
    const holders = await mapLimit(Array.from({ length: options.cards }), SETUP_CONCURRENCY, () => cardHolder(http, partner));
    console.log(
      `  setup: ${options.cards} customers (KYC approved, logged in, ${FUNDING} USDC deposited, a virtual card applied for, approved and issued) in ${((performance.now() - setupStart) / 1_000).toFixed(1)} s`,
    );
    if (options.history > 0) {
      const seeded = performance.now();
      const { declined } = await seedHistory(tally, partner.id, holders, options.history);
      const seconds = (performance.now() - seeded) / 1_000;
      await settleDown(tally);
      console.log(
        `  history: ${fmtInt(options.history)} spends per card, one a day back from yesterday, each cleared or reversed an hour later (${fmtInt(declined)} declined) in ${seconds.toFixed(1)} s; then the read models and the outbox caught up, the tables were vacuumed and the cluster checkpointed in ${((performance.now() - seeded) / 1_000 - seconds).toFixed(1)} s`,
      );
    }
    const run: Run = {
      tally,
      client,
      conflicts: countConflicts(tally),
      appendTimes: appendTimes(tally.store),
      pools: tally.sql instanceof PgSql ? [tally.sql] : [],
      postmaster: await localPostmaster(tally.sql),
      load: cardsLoad(holders, partner),
    };
    const closed = await closedLoop(run, options);
    const open: OpenResult[] = [];
    if (options.openRates.length) {
      console.log(
        `\nHTTP open loop over the same cards: requests offered at a fixed rate, alternately an authorization and a transfer (random cards, as above), each on an idle keep-alive connection (a new one when none is idle, up to ${fmtInt(options.maxConnections)}); latency from the time each request was due; ${options.openSeconds}s per rate after a warm-up at that rate`,
      );
      for (const rate of options.openRates) {
        open.push(await openLoop(run, options, offeredOf(rate, closed.totalRate), 'fraction' in rate ? rate.fraction : undefined));
      }
      reportOpen(open);
    }
    summary(closed, open);
  } finally {
    await client.stop().catch(() => {});
    await running.close().catch(() => {});
  }
}

interface ClosedResult {
  authRate: number;
  transferRate: number;
  /** Responses of either kind per second, whatever their status: what the open loop's fractions are of. */
  totalRate: number;
  p99: number;
  cpu: CpuPerRequest;
}

async function closedLoop(run: Run, options: Options): Promise<ClosedResult> {
  const authorizers = Math.floor(options.clients / 2);
  console.log(
    `\nHTTP closed loop, ${options.clients} callers over ${options.cards} cards and their accounts: ${authorizers} send POST /sandbox/v1/cards/{id}/authorizations (0.01 USD, random card), ${options.clients - authorizers} POST /api/v1/transactions/transfer (0.01 USDC, random account to another)`,
  );
  const { out, around } = await loadRun<{ seconds: number; authorizations: CardsOutcome; transfers: CardsOutcome }>(
    run,
    `postgres-cards-${options.cards}-cards-${options.clients}-clients`,
    { type: 'loop', clients: options.clients, authorizers, warmUpSeconds: Math.min(1, options.seconds * 0.2), seconds: options.seconds },
  );
  const requests = out.authorizations.latencies.length + out.transfers.latencies.length;
  const a = sortedOf(out.authorizations.latencies);
  const t = sortedOf(out.transfers.latencies);
  const mean = (xs: Float64Array) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const authRate = rateOf(out.authorizations, out.seconds);
  const transferRate = rateOf(out.transfers, out.seconds);
  printTable(
    ['requests', 'callers', 'per second', 'p50 ms', 'p99 ms', 'mean ms'],
    [
      ['authorizations', String(authorizers), fmtInt(authRate), fmtMs(percentile(a, 0.5)), fmtMs(percentile(a, 0.99)), fmtMs(mean(a))],
      ['transfers', String(options.clients - authorizers), fmtInt(transferRate), fmtMs(percentile(t, 0.5)), fmtMs(percentile(t, 0.99)), fmtMs(mean(t))],
    ],
  );
  console.log(`      ${describeOutcome('authorizations', out.authorizations)}`);
  console.log(`      ${describeOutcome('transfers', out.transfers)}`);
  const costs = await costLines(run, around, requests);
  for (const line of costs.lines) console.log(`      ${line}`);
  return { authRate, transferRate, totalRate: requests / out.seconds, p99: percentile(a, 0.99), cpu: costs.cpu };
}

interface OpenOut extends OpenStats {
  authorizations: CardsOutcome;
  transfers: CardsOutcome;
}

interface OpenResult {
  offered: number;
  fraction?: number;
  out: OpenOut;
  costs: string[];
  cpu: CpuPerRequest;
  timeline: string;
}

async function openLoop(run: Run, options: Options, offered: number, fraction?: number): Promise<OpenResult> {
  const label = `${fmtInt(offered)} requests/s${fraction === undefined ? '' : ` (${(fraction * 100).toFixed(0)}% of the closed loop)`}`;
  const watched = watchMainThread();
  const { out, around } = await loadRun<OpenOut>(run, `postgres-cards-${options.cards}-cards-open-${Math.round(offered)}-per-s`, {
    type: 'open',
    rate: offered,
    maxConnections: options.maxConnections,
    lateMs: LATE_MS,
    warmUpSeconds: Math.min(1, options.openSeconds * 0.2),
    seconds: options.openSeconds,
  });
  const main = watched();
  const requests = out.authorizations.latencies.length + out.transfers.latencies.length;
  const { lines, cpu } = await costLines(run, around, requests);
  console.log(`  offered ${label}: done (${fmtInt(requests)} requests in ${out.seconds.toFixed(1)} s)`);
  const timeline = describeTimeline(out, (await run.tally.checkpoints.reads.list(50)).checkpoints, await postgresOwnWork(run.tally.sql), main);
  return { offered, fraction, out, costs: lines, cpu, timeline };
}

function reportOpen(results: OpenResult[]): void {
  printTable(
    ['offered/s', 'achieved/s', 'auth p50', 'auth p99', 'auth max', 'transfer p50', 'transfer p99', 'errors', 'sent late'],
    results.map(({ offered, fraction, out }) => {
      const a = sortedOf(out.authorizations.latencies);
      const t = sortedOf(out.transfers.latencies);
      const errors = [out.authorizations, out.transfers].reduce((n, o) => n + o.latencies.length - (o.statuses['201'] ?? 0), 0);
      const requests = a.length + t.length;
      return [
        `${fmtInt(offered)}${fraction === undefined ? '' : ` (${(fraction * 100).toFixed(0)}%)`}`,
        fmtInt(requests / out.seconds),
        fmtMs(percentile(a, 0.5)),
        fmtMs(percentile(a, 0.99)),
        fmtMs(a[a.length - 1] ?? Number.NaN),
        fmtMs(percentile(t, 0.5)),
        fmtMs(percentile(t, 0.99)),
        fmtInt(errors),
        fmtInt(out.late + out.waited),
      ];
    }),
  );
  console.log('  (milliseconds from each request\'s due time; "sent late": written more than 2 ms after it, or waiting for a connection)');
  for (const { offered, out, costs, timeline } of results) {
    const lags = sortedOf(out.lags);
    console.log(`  at ${fmtInt(offered)}/s:`);
    console.log(`      ${describeOutcome('authorizations', out.authorizations)}`);
    console.log(`      ${describeOutcome('transfers', out.transfers)}`);
    console.log(
      `      client: written p99 ${fmtMs(percentile(lags, 0.99))} ms, max ${fmtMs(lags[lags.length - 1] ?? Number.NaN)} ms after due; ${fmtInt(out.late)} later than ${LATE_MS} ms, ${fmtInt(out.waited)} waited for a connection; ${fmtInt(out.connections)} connections (${fmtInt(out.opened)} opened while measuring)`,
    );
    for (const line of [timeline, ...costs]) console.log(`      ${line}`);
  }
}

function summary(closed: ClosedResult, open: OpenResult[]): void {
  const ratio = closed.authRate / closed.transferRate;
  const rows = [
    ['authorization decision latency p99, closed loop', `${fmtMs(closed.p99)} ms`, `< ${TARGETS.p99Ms} ms`, closed.p99 < TARGETS.p99Ms ? 'yes' : 'NO'],
  ];
  for (const { offered, fraction, out } of open) {
    const p99 = percentile(sortedOf(out.authorizations.latencies), 0.99);
    const at = `${fmtInt(offered)}/s${fraction === undefined ? '' : `, ${(fraction * 100).toFixed(0)}%`}`;
    rows.push([`authorization decision latency p99, open loop at ${at}`, `${fmtMs(p99)} ms`, `< ${TARGETS.p99Ms} ms`, p99 < TARGETS.p99Ms ? 'yes' : 'NO']);
  }
  rows.push(['authorizations/s / transfers/s, closed loop', `${ratio.toFixed(2)}x`, `>= ${TARGETS.ratio.toFixed(1)}x`, ratio >= TARGETS.ratio ? 'yes' : 'NO']);
  const figures = open.map(({ offered, fraction, out, cpu }) => {
    const all = sortedOf([...out.authorizations.latencies, ...out.transfers.latencies]);
    const served = (out.authorizations.statuses['201'] ?? 0) + (out.transfers.statuses['201'] ?? 0);
    return { offered, fraction, achieved: served / out.seconds, p99: percentile(all, 0.99), cpu };
  });
  rows.push(...openTargetRows('the mix', closed, figures));
  console.log('\nSummary against targets (durable commits, HTTP, in-process server, authorizations and transfers in the same run)');
  printTable(['figure', 'measured', 'target', 'met'], rows);
}

export async function runCardsBench(): Promise<void> {
  const options: Options = {
    seconds: envNumber('BENCH_SECONDS', 10),
    clients: envNumber('BENCH_CLIENTS', 64, { integer: true }),
    cards: envNumber('BENCH_CARDS', 50, { integer: true }),
    history: envNumber('BENCH_CARD_HISTORY', 365, { integer: true, zero: true }),
    openSeconds: envNumber('BENCH_OPEN_SECONDS', envNumber('BENCH_SECONDS', 10)),
    openRates: openRates(process.env.BENCH_OPEN_RATES, [0.25, 0.5, 0.75, 0.9]),
    maxConnections: envNumber('BENCH_OPEN_CONNECTIONS', 1_024, { integer: true }),
  };
  if (options.clients < 2 || options.cards < 2)
    throw new Error('BENCH_CLIENTS and BENCH_CARDS must be at least 2 (authorizers and transferrers; a transfer needs two accounts)');
  const load0 = loadavg();
  const cluster = await startTestCluster({
    durable: true,
    settings: benchClusterSettings(),
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-bench-cards-'));
  const stop = () => {
    cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  try {
    const databaseUrl = await cluster.freshDatabase();
    console.log(`Tally cards bench: ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'throwaway cluster (durable commits)'}`);
    console.log(
      `  node ${process.version}, ${availableParallelism()} CPUs shared by the server, its HTTP clients (worker thread) and postgres; load average before start ${load0.map((x) => x.toFixed(2)).join(' ')}`,
    );
    const fsync = probeFsync();
    console.log(
      `  8 kB write + fdatasync in ${tmpdir()}: p50 ${fmtMs(fsync.p50)} ms, p99 ${fmtMs(fsync.p99)} ms; ${options.seconds}s measured after a warm-up`,
    );
    console.log(`  ${writebackSettings()}`);
    await measure(databaseUrl, dataDir, options);
    console.log(
      `\nload average at the end ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')} (${availableParallelism()} CPUs)`,
    );
  } finally {
    process.off('exit', stop);
    stop();
  }
}
