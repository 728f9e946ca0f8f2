import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import supertest from 'supertest';
import type { Tally } from '../src/compose/tally';
import { type RunningServer, startServer } from '../src/server';
import { createPartner, type PartnerCredentials } from '../test/support/app';
import { type Customer, customer, fund } from '../test/support/ledger';
import { startTestCluster } from '../test/support/postgres';
import { type ClientAccount, LoadClient, type Outcome, benchConfig } from './ledger';
import { LATE_MS } from './open-loop';
import { cpuCalibration, envNumber, fmtInt, fmtMs, mapLimit, percentile, printTable } from './support';

/**
 * `npm run bench -- webhooks`: partner notifications while transfers run. The real server (in this
 * process) on a throwaway durable cluster; each partner's webhook endpoint is one local receiver in
 * a worker thread (node:http, answering 200 at once); the ledger bench's load client (a worker
 * thread of raw keep-alive HTTP/1.1 connections) runs closed-loop transfers inside each partner.
 * Prints transfers/s and notifications delivered/s in the same window, and the lag from each
 * event's append (the notification's createdAt) to its first delivery attempt. Asserts nothing.
 *   BENCH_SECONDS   the measured window (default 10)
 *   BENCH_CLIENTS   concurrent HTTP clients, all partners together (default 32)
 *   BENCH_WEBHOOK_PARTNERS  partners, each with its own endpoint on the receiver (default 4)
 *   BENCH_WEBHOOK_ACCOUNTS  funded customers per partner (default 10)
 *   BENCH_OPEN_FRACTION  after the closed loop, the same transfers offered open loop (fixed times, as
 *                   partners' users act) at this fraction of its rate, and the lag measured again
 *                   (default 0.5; 0 skips it)
 */

/** Closed loop: deliveries keep pace, p99 under 1 s; open loop at 50% of the closed loop's rate: p99 under 250 ms. */
const TARGET = { ratio: 1, p99LagMs: 1_000, openP99LagMs: 250, openFraction: 0.5 };
const DRAIN_DEADLINE_MS = 120_000;

// The receiver: plain JavaScript in a worker thread, so that its CPU is not the server's event loop.
const RECEIVER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const { performance } = require('node:perf_hooks');
let arrivals = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    const body = Buffer.concat(chunks).toString('utf8');
    const created = /"createdAt":"([^"]+)"/.exec(body);
    arrivals.push(at, created ? Date.parse(created[1]) : NaN);
    res.writeHead(200, { 'Content-Length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 1000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ type: 'listening', port: server.address().port }));
parentPort.on('message', (msg) => {
  if (msg.type === 'take') {
    parentPort.postMessage({ type: 'arrivals', arrivals });
    arrivals = [];
  }
});
`;

/** The receiver's side: its url, and what arrived since the last take (arrival and createdAt, epoch ms, in pairs). */
class Receiver {
  readonly worker = new Worker(RECEIVER_SOURCE, { eval: true });
  url = '';

  async start(): Promise<void> {
    const { port } = await new Promise<{ port: number }>((resolve, reject) => {
      this.worker.once('message', resolve);
      this.worker.once('error', reject);
    });
    this.url = `http://127.0.0.1:${port}/hooks`;
  }

  take(): Promise<number[]> {
    return new Promise((resolve) => {
      this.worker.once('message', (msg: { arrivals: number[] }) => resolve(msg.arrivals));
      this.worker.postMessage({ type: 'take' });
    });
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
  }
}

interface PartnerLoad {
  partner: PartnerCredentials;
  accounts: Customer[];
  client: LoadClient;
}

/** Partners with their endpoint on the receiver, and funded customers. */
async function setUp(running: RunningServer, receiver: Receiver, partners: number, accounts: number): Promise<PartnerLoad[]> {
  const http = supertest.agent(running.url);
  return mapLimit(Array.from({ length: partners }), partners, async (_, i) => {
    const partner = await createPartner(http, `Bench hooks ${i}`);
    const put = await http.put('/api/v1/partner/webhooks').set(partner.headers).send({ url: receiver.url });
    if (put.status !== 200) throw new Error(`PUT partner/webhooks answered ${put.status} ${JSON.stringify(put.body)}`);
    const own = await mapLimit(Array.from({ length: accounts }), 4, async () => {
      const c = await customer(http, partner);
      await fund(http, partner, c, '1000000');
      return c;
    });
    return { partner, accounts: own, client: new LoadClient(running.url) };
  });
}

/** Resolves once the outbox has passed the log's head and nothing is waiting for a first attempt. */
async function drained(tally: Tally): Promise<number> {
  const started = Date.now();
  const head = await tally.store.headPosition();
  for (;;) {
    const [row] = await tally.sql.query<{ position: string; waiting: string }>(
      `SELECT (SELECT position FROM projection_checkpoints WHERE name = 'outbox') AS position,
              (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND first_attempt_at IS NULL)::text AS waiting`,
    );
    if (row && row.position >= head && row.waiting === '0') return Date.now() - started;
    if (Date.now() - started > DRAIN_DEADLINE_MS) throw new Error(`notifications not drained in ${DRAIN_DEADLINE_MS} ms: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Closed-loop transfers in every partner at once; the measured window starts when all have warmed up. */
function transfers(loads: PartnerLoad[], clients: number, seconds: number, onWarm: () => Promise<void>): Promise<Array<Outcome & { seconds: number }>> {
  const perPartner = Math.max(1, Math.round(clients / loads.length));
  return inEveryPartner(loads, seconds, onWarm, { type: 'loop', clients: perPartner });
}

/** Open-loop transfers in every partner at once, `rate` per second in all, each partner its share. */
function openTransfers(loads: PartnerLoad[], rate: number, seconds: number, onWarm: () => Promise<void>): Promise<Array<Outcome & { seconds: number }>> {
  return inEveryPartner(loads, seconds, onWarm, { type: 'open', rate: rate / loads.length, maxConnections: 256, lateMs: LATE_MS });
}

/** One load client's run per partner over its accounts, `onWarm` once every one has warmed up, then all measured together. */
async function inEveryPartner(
  loads: PartnerLoad[],
  seconds: number,
  onWarm: () => Promise<void>,
  run: Record<string, unknown>,
): Promise<Array<Outcome & { seconds: number }>> {
  let warm = 0;
  let release: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    release = resolve;
  });
  return Promise.all(
    loads.map((l) =>
      l.client.run<Outcome & { seconds: number }>(
        {
          ...run,
          accounts: l.accounts.map((c): ClientAccount => ({ accountId: c.accountId, token: c.token })),
          warmUpSeconds: Math.min(2, seconds * 0.2),
          seconds,
        },
        async () => {
          if (++warm === loads.length) {
            await onWarm();
            release();
          }
          await all;
        },
      ),
    ),
  );
}

/** Where notifications stand: events made, deliveries made by the outbox, first attempts made. */
async function pipeline(tally: Tally, fromMs: number): Promise<string> {
  const [row] = await tally.sql.query<{ made: string; attempted: string; transfers: string }>(
    `SELECT count(*)::text AS made, count(first_attempt_at)::text AS attempted,
            (SELECT count(*) FROM rm_transactions WHERE kind = 'TRANSFER')::text AS transfers FROM webhook_deliveries`,
  );
  return `t+${((Date.now() - fromMs) / 1000).toFixed(1)} s: ${row?.transfers} transfers in the ledger read model, ${row?.made} deliveries made, ${row?.attempted} attempted`;
}

interface Lag {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Append to first attempt, of the deliveries whose event was appended in [fromMs, toMs). */
async function attemptLag(tally: Tally, fromMs: number, toMs: number): Promise<Lag> {
  const rows = await tally.sql.query<{ ms: string }>(
    `SELECT (extract(epoch FROM first_attempt_at - created_at) * 1000)::text AS ms FROM webhook_deliveries
      WHERE created_at >= $1 AND created_at < $2 AND first_attempt_at IS NOT NULL`,
    [new Date(fromMs), new Date(toMs)],
  );
  return lagOf(rows.map((r) => Number(r.ms)));
}

function lagOf(ms: number[]): Lag {
  const sorted = Float64Array.from(ms).sort();
  return { count: sorted.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] ?? Number.NaN };
}

/** How long the attempts of the window took (the POST alone, as the delivery log shows it). */
async function attemptDurations(tally: Tally, fromMs: number, toMs: number): Promise<Lag> {
  const rows = await tally.sql.query<{ ms: number }>('SELECT duration_ms AS ms FROM webhook_attempts WHERE at >= $1 AND at < $2', [
    new Date(fromMs),
    new Date(toMs),
  ]);
  return lagOf(rows.map((r) => r.ms));
}

/** The transfers offered open loop at `rate` per second: append -> first attempt of the window's notifications. */
async function openWindow(tally: Tally, receiver: Receiver, loads: PartnerLoad[], rate: number, seconds: number): Promise<Lag> {
  let fromMs = 0;
  const outcomes = await openTransfers(loads, rate, seconds, async () => {
    await receiver.take();
    fromMs = Date.now();
  });
  const toMs = Date.now();
  await drained(tally);
  await receiver.take();
  const ok = outcomes.reduce((n, o) => n + (o.statuses['201'] ?? 0), 0);
  const lag = await attemptLag(tally, fromMs, toMs);
  console.log(`\n  open loop: ${fmtInt(rate)} transfers/s offered in all (fixed times), ${fmtInt(ok / ((toMs - fromMs) / 1000))}/s answered 201`);
  console.log(
    `  append -> first attempt (${fmtInt(lag.count)} made in the window): p50 ${fmtMs(lag.p50)} ms, p99 ${fmtMs(lag.p99)} ms, max ${fmtMs(lag.max)} ms`,
  );
  return lag;
}

export async function runWebhooksBench(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 10);
  const clients = envNumber('BENCH_CLIENTS', 32, { integer: true });
  const partners = envNumber('BENCH_WEBHOOK_PARTNERS', 4, { integer: true });
  const accounts = envNumber('BENCH_WEBHOOK_ACCOUNTS', 10, { integer: true });
  const load0 = loadavg();
  const cluster = await startTestCluster({ durable: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-bench-webhooks-'));
  const receiver = new Receiver();
  let running: RunningServer | undefined;
  let loads: PartnerLoad[] = [];
  try {
    await receiver.start();
    running = await startServer(benchConfig(dataDir, await cluster.freshDatabase()), pino({ level: process.env.BENCH_LOG_LEVEL ?? 'warn' }));
    const { tally } = running;
    console.log(`Tally webhooks bench: ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'throwaway durable cluster'}, node ${process.version}`);
    console.log(
      `  ${availableParallelism()} CPUs shared by the server, the load client and receiver (worker threads) and postgres; load average before start ${load0.map((x) => x.toFixed(2)).join(' ')}`,
    );
    const setupStart = Date.now();
    loads = await setUp(running, receiver, partners, accounts);
    const setupDrain = await drained(tally);
    await receiver.take();
    console.log(
      `  setup: ${partners} partners (endpoint on the local receiver, every type), ${accounts} funded customers each, in ${((Date.now() - setupStart) / 1000).toFixed(1)} s (last ${setupDrain} ms draining their notifications)`,
    );
    console.log(
      `  ${clients} clients (${Math.max(1, Math.round(clients / partners))} per partner), ${seconds} s measured; transfers of 0.01 inside each partner`,
    );

    let fromMs = 0;
    const samples: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await new Promise((r) => setTimeout(r, 1_000));
        if (fromMs) samples.push(await pipeline(tally, fromMs));
      }
    })();
    const outcomes = await transfers(loads, clients, seconds, async () => {
      await receiver.take();
      fromMs = Date.now();
    });
    const toMs = Date.now();
    sampling = false;
    await sampler;
    const window = await receiver.take();
    const drainMs = await drained(tally);
    const after = await receiver.take();

    const ok = outcomes.reduce((n, o) => n + (o.statuses['201'] ?? 0), 0);
    const failed = outcomes.reduce((n, o) => n + Object.entries(o.statuses).reduce((m, [s, c]) => m + (s === '201' ? 0 : c), 0), 0);
    const loopSeconds = Math.max(...outcomes.map((o) => o.seconds));
    const transfersPerSecond = ok / loopSeconds;
    const windowSeconds = (toMs - fromMs) / 1000;
    const delivered = window.length / 2;
    const deliveredPerSecond = delivered / windowSeconds;
    const lag = await attemptLag(tally, fromMs, toMs);
    const arrivalLags = [...window, ...after].reduce<number[]>((out, v, i, all) => {
      const created = all[i + 1] as number;
      if (i % 2 === 0 && created >= fromMs && created < toMs) out.push(v - created);
      return out;
    }, []);
    const arrivalSorted = Float64Array.from(arrivalLags).sort();

    console.log(
      `\n  transfers: ${fmtInt(ok)} x 201 in ${loopSeconds.toFixed(1)} s = ${fmtInt(transfersPerSecond)}/s${failed ? ` (${fmtInt(failed)} other answers)` : ''}`,
    );
    console.log(
      `  notifications received by the receiver in the same window: ${fmtInt(delivered)} in ${windowSeconds.toFixed(1)} s = ${fmtInt(deliveredPerSecond)}/s`,
    );
    console.log(`  backlog after the load stopped: drained in ${drainMs} ms (${fmtInt(after.length / 2)} more received)`);
    console.log(
      `  append -> first attempt (webhook_deliveries, ${fmtInt(lag.count)} made in the window): p50 ${fmtMs(lag.p50)} ms, p99 ${fmtMs(lag.p99)} ms, max ${fmtMs(lag.max)} ms`,
    );
    console.log(
      `  append -> arrival at the receiver (its clock, ${fmtInt(arrivalSorted.length)}): p50 ${fmtMs(percentile(arrivalSorted, 0.5))} ms, p99 ${fmtMs(percentile(arrivalSorted, 0.99))} ms`,
    );
    const took = await attemptDurations(tally, fromMs, toMs);
    console.log(`  attempts in the window (${fmtInt(took.count)}), the POST alone: p50 ${fmtMs(took.p50)} ms, p99 ${fmtMs(took.p99)} ms`);
    console.log('  every second of the window (log, outbox and dispatcher):');
    for (const line of samples) console.log(`    ${line}`);
    console.log(
      `  dispatcher attempts on this node: ${JSON.stringify(tally.notifications.dispatcher.attempts)}; machine speed check ${fmtMs(cpuCalibration())} ms`,
    );
    const ratio = deliveredPerSecond / transfersPerSecond;
    const rows = [
      ['notifications/s / transfers/s, closed loop', ratio.toFixed(2), `>= ${TARGET.ratio}`, ratio >= TARGET.ratio ? 'yes' : 'no'],
      ['p99 append -> first attempt, closed loop', `${fmtMs(lag.p99)} ms`, `< ${TARGET.p99LagMs} ms`, lag.p99 < TARGET.p99LagMs ? 'yes' : 'no'],
    ];
    const fraction = envNumber('BENCH_OPEN_FRACTION', TARGET.openFraction, { zero: true });
    if (fraction > 0) {
      const open = await openWindow(tally, receiver, loads, fraction * transfersPerSecond, seconds);
      rows.push([
        `p99 append -> first attempt, open loop at ${Math.round(fraction * 100)}%`,
        `${fmtMs(open.p99)} ms`,
        `< ${TARGET.openP99LagMs} ms`,
        open.p99 < TARGET.openP99LagMs ? 'yes' : 'no',
      ]);
    }
    printTable(['figure', 'measured', 'target', 'met'], rows);
    console.log(
      `\nload average at the end ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    for (const l of loads) await l.client.stop().catch(() => {});
    await running?.close().catch(() => {});
    await receiver.stop();
    cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
