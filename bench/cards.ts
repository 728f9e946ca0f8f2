import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import supertest from 'supertest';
import { MAX_ATTEMPTS } from '../src/app/command-handler';
import type { Tally } from '../src/app/tally';
import { WrongExpectedRevisionError } from '../src/eventstore/port';
import { PgSql } from '../src/eventstore/sql';
import { startServer } from '../src/server';
import { createPartner, type PartnerCredentials } from '../test/support/app';
import { type Customer, customer, fund } from '../test/support/ledger';
import { startTestCluster } from '../test/support/postgres';
import { benchConfig, HTTP_CONNECTION_SOURCE, LoadClient, mapLimit, profiled } from './ledger';
import {
  cpuCalibration,
  cpuSnapshot,
  describeCpu,
  envNumber,
  fmtInt,
  fmtMs,
  localPostmaster,
  percentile,
  printTable,
  probeFsync,
  walSince,
  walSnapshot,
} from './support';

/**
 * `npm run bench -- cards`: sandbox card authorizations through HTTP, mixed in one closed loop with
 * transfers between the same accounts, on a throwaway cluster with durable commits (or DATABASE_URL).
 * Measures, prints, asserts nothing.
 *   BENCH_SECONDS      seconds of the measured loop (default 10)
 *   BENCH_CLIENTS      concurrent HTTP callers (default 64): the first half authorize, the rest transfer
 *   BENCH_CARDS        cards, one per customer, and so accounts (default 50)
 *   BENCH_CPU_PROFILE  directory for a CPU profile of the server's main thread during the measured loop
 * Each caller keeps to one kind of request, so that both kinds have the same number of callers and the
 * ratio of their rates is the ratio of how fast each is served (a caller choosing at random would
 * make as many of each, whatever their speed).
 */

const TARGETS = { p99Ms: 20, ratio: 1 };
const FUNDING = '1000000';
const SETUP_CONCURRENCY = 8;

const CARDS_CLIENT_SOURCE = `
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

parentPort.on('message', async (msg) => {
  if (msg.type !== 'loop') return;
  const connections = Array.from({ length: msg.clients }, () => new Connection());
  await loop(connections, msg, msg.warmUpSeconds, null);
  parentPort.postMessage({ type: 'warm' });
  await new Promise((resolve) => parentPort.once('message', resolve));
  const outs = { authorizations: outcome(), transfers: outcome() };
  const seconds = await loop(connections, msg, msg.seconds, outs);
  for (const c of connections) c.close();
  parentPort.postMessage({ type: 'done', seconds, ...outs });
});
`;

interface Outcome {
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
async function cardHolder(http: supertest.Agent, partner: PartnerCredentials): Promise<Holder> {
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
const rateOf = (o: Outcome, seconds: number) => (o.statuses['201'] ?? 0) / seconds;

function describeOutcome(name: string, o: Outcome): string {
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
}

/** The measured loop on a server at `config`'s store: setup, warm-up, then `seconds` of load. */
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
    const conflicts = countConflicts(tally);
    const pools = tally.sql instanceof PgSql ? [tally.sql] : [];
    const postmaster = await localPostmaster(tally.sql);
    const authorizers = Math.floor(options.clients / 2);
    console.log(
      `\nHTTP closed loop, ${options.clients} callers over ${options.cards} cards and their accounts: ${authorizers} send POST /sandbox/v1/cards/{id}/authorizations (0.01 USD, random card), ${options.clients - authorizers} POST /api/v1/transactions/transfer (0.01 USDC, random account to another)`,
    );
    let around: { cpu: ReturnType<typeof cpuSnapshot>; wal?: Awaited<ReturnType<typeof walSnapshot>> } | undefined;
    const out = await profiled(`postgres-cards-${options.cards}-cards-${options.clients}-clients`, (started) =>
      client.run<{ seconds: number; authorizations: Outcome; transfers: Outcome }>(
        {
          type: 'loop',
          clients: options.clients,
          authorizers,
          cards: holders.map((h) => ({ cardId: h.cardId, accountId: h.accountId, token: h.token })),
          partner: `X-Api-Key: ${partner.headers['X-Api-Key']}\r\nX-Api-Secret: ${partner.headers['X-Api-Secret']}\r\n`,
          warmUpSeconds: Math.min(1, options.seconds * 0.2),
          seconds: options.seconds,
        },
        async () => {
          around = { wal: pools.length ? await walSnapshot(pools) : undefined, cpu: cpuSnapshot(postmaster) };
          conflicts.appends = 0;
          conflicts.stale = 0;
          await started();
        },
      ),
    );
    const requests = out.authorizations.latencies.length + out.transfers.latencies.length;
    const cpu = around ? describeCpu(around.cpu, cpuSnapshot(postmaster), requests) : '';
    const wal = around?.wal ? await walSince(pools, around.wal) : undefined;
    const stale = `appends: ${fmtInt(conflicts.appends)}, of which ${fmtInt(conflicts.stale)} refused for a stale expected revision (each decided again; past ${MAX_ATTEMPTS} attempts a 409)`;
    report(out, { cpu, wal, requests, authorizers, clients: options.clients, stale });
  } finally {
    await client.stop().catch(() => {});
    await running.close().catch(() => {});
  }
}

function report(
  out: { seconds: number; authorizations: Outcome; transfers: Outcome },
  run: { cpu: string; wal?: { bytes: number; walSyncs: number }; requests: number; authorizers: number; clients: number; stale: string },
): void {
  const a = sortedOf(out.authorizations.latencies);
  const t = sortedOf(out.transfers.latencies);
  const authRate = rateOf(out.authorizations, out.seconds);
  const transferRate = rateOf(out.transfers, out.seconds);
  const ratio = authRate / transferRate;
  printTable(
    ['requests', 'callers', 'per second', 'p50 ms', 'p99 ms', 'mean ms'],
    [
      [
        'authorizations',
        String(run.authorizers),
        fmtInt(authRate),
        fmtMs(percentile(a, 0.5)),
        fmtMs(percentile(a, 0.99)),
        fmtMs(a.reduce((s, x) => s + x, 0) / a.length),
      ],
      [
        'transfers',
        String(run.clients - run.authorizers),
        fmtInt(transferRate),
        fmtMs(percentile(t, 0.5)),
        fmtMs(percentile(t, 0.99)),
        fmtMs(t.reduce((s, x) => s + x, 0) / t.length),
      ],
    ],
  );
  console.log(`      ${describeOutcome('authorizations', out.authorizations)}`);
  console.log(`      ${describeOutcome('transfers', out.transfers)}`);
  console.log(`      ${run.cpu}; machine speed check ${fmtMs(cpuCalibration())} ms (20,000 SHA-256, lower is faster)`);
  if (run.wal) {
    console.log(
      `      WAL ${fmtInt(run.wal.bytes / Math.max(1, run.requests))} B/request, ${(run.requests / Math.max(1, run.wal.walSyncs)).toFixed(1)} requests per WAL fsync`,
    );
  }
  console.log(`      ${run.stale}`);
  const p99 = percentile(a, 0.99);
  console.log('\nSummary against targets (durable commits, HTTP, in-process server, authorizations and transfers in the same run)');
  printTable(
    ['figure', 'measured', 'target', 'met'],
    [
      ['authorization decision latency p99', `${fmtMs(p99)} ms`, `< ${TARGETS.p99Ms} ms`, p99 < TARGETS.p99Ms ? 'yes' : 'NO'],
      ['authorizations/s / transfers/s', `${ratio.toFixed(2)}x`, `>= ${TARGETS.ratio.toFixed(1)}x`, ratio >= TARGETS.ratio ? 'yes' : 'NO'],
    ],
  );
}

export async function runCardsBench(): Promise<void> {
  const options: Options = {
    seconds: envNumber('BENCH_SECONDS', 10),
    clients: envNumber('BENCH_CLIENTS', 64, { integer: true }),
    cards: envNumber('BENCH_CARDS', 50, { integer: true }),
  };
  if (options.clients < 2 || options.cards < 2)
    throw new Error('BENCH_CLIENTS and BENCH_CARDS must be at least 2 (authorizers and transferrers; a transfer needs two accounts)');
  const load0 = loadavg();
  const cluster = await startTestCluster({ durable: true, settings: process.env.BENCH_PG_SETTINGS?.split(';').filter(Boolean) });
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
