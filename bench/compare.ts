import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import supertest from 'supertest';
import { PgSql } from '../src/eventstore/sql';
import { ADMIN_TOKEN, createPartner } from '../test/support/app';
import { type Customer, customer, fund } from '../test/support/ledger';
import { startTestCluster } from '../test/support/postgres';
import { LoadClient, mapLimit, type Outcome } from './ledger';
import type { DirectLoop } from './compare-server';
import { cpuSnapshot, envNumber, fmtInt, localPostmaster, printTable, processCpu } from './support';

/**
 * `npm run bench -- compare`: two builds side by side on one machine, in short slices taken in turn,
 * so that the machine's slow and fast phases fall on both. This checkout and the one in
 * BENCH_COMPARE_WITH (a directory with its node_modules, e.g. a `git worktree` of an older commit)
 * each run as a server process of their own on their own database of one throwaway durable cluster.
 * Each round loads one, then the other (the order alternating between rounds), with the ledger
 * bench's closed loop of transfers; per account count, the two builds' transfers/s and CPU per
 * transfer (each server's main thread and other threads, and postgres) are summed over the rounds
 * and printed with the ratio of this build to the other. BENCH_ACCOUNTS (default 50,2), BENCH_CLIENTS
 * (64), BENCH_SLICE_SECONDS (4 per slice, after 1 s of warm-up), BENCH_ROUNDS (6). BENCH_DIRECT=1: each
 * server makes the transfers itself, calling its Transfers service without HTTP: the command path,
 * the store and the projections without the request path's cost.
 * A difference of a few percent needs an A/A run beside it (BENCH_COMPARE_WITH a worktree of this
 * very commit): the build started first ("this") has read a few percent low at 2 accounts whichever
 * build it was (docs/performance.md has the figures).
 */

interface Build {
  label: string;
  dir: string;
  child: ChildProcess;
  client: LoadClient;
  customers: Customer[];
  partnerId: string;
}

/** BENCH_DIRECT=1: transfers made inside each server process, without HTTP (the command path and what follows it). */
const DIRECT = process.env.BENCH_DIRECT === '1';

interface Tally {
  transfers: number;
  seconds: number;
  mainMs: number;
  otherMs: number;
  postgresMs: number;
}

const FUNDING = '1000000';
const ROOT = resolve(__dirname, '..');

async function startBuild(label: string, dir: string, databaseUrl: string, accounts: number): Promise<Build> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/compare-server.ts')], {
    cwd: dir,
    env: { ...process.env, TALLY_BUILD_DIR: dir, DATABASE_URL: databaseUrl, ADMIN_TOKEN },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const line = await new Promise<string>((done, fail) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.once('line', done);
    child.once('exit', (code) => fail(new Error(`the ${label} server exited (${code}) before listening`)));
  });
  const { url } = JSON.parse(line) as { url: string };
  const http = supertest.agent(url);
  const partner = await createPartner(http, 'Bench');
  const customers = await mapLimit(Array.from({ length: accounts }), 8, async () => {
    const c = await customer(http, partner);
    await fund(http, partner, c, FUNDING);
    return c;
  });
  return { label, dir, child, client: new LoadClient(url), customers, partnerId: (partner as { id: string }).id };
}

/** BENCH_DIRECT=1: the slice's transfers are made inside the server process, not over HTTP (compare-server's directLoop). */
async function directSlice(b: Build, loop: DirectLoop, warmed: () => Promise<void>): Promise<{ transfers: number; failures: number; seconds: number }> {
  const done = new Promise<{ transfers: number; failures: number; seconds: number }>((resolve, reject) => {
    const onMessage = (message: { type: string; transfers: number; failures: number; seconds: number }) => {
      if (message.type === 'warmed') void warmed();
      else if (message.type === 'done') {
        b.child.off('message', onMessage);
        resolve(message);
      }
    };
    b.child.on('message', onMessage);
    b.child.once('exit', (code) => reject(new Error(`the ${b.label} server exited (${code}) during a slice`)));
  });
  b.child.send(loop);
  return done;
}

async function slice(b: Build, accounts: number, clients: number, seconds: number, postmaster: string | undefined): Promise<Tally> {
  const pid = b.child.pid as number;
  let cpu0 = processCpu(pid);
  let pg0 = cpuSnapshot(postmaster);
  const warmed = async () => {
    cpu0 = processCpu(pid);
    pg0 = cpuSnapshot(postmaster);
  };
  if (DIRECT) {
    const accountsOf = b.customers.slice(0, accounts).map((c) => ({ userId: c.id, accountId: c.accountId }));
    const out = await directSlice(b, { partnerId: b.partnerId, accounts: accountsOf, clients, warmUpSeconds: 1, seconds }, warmed);
    if (out.failures > 0) throw new Error(`${out.failures} direct transfers of the ${b.label} build failed`);
    return measured(pid, postmaster, cpu0, pg0, out.transfers, out.seconds);
  }
  const out = await b.client.run<Outcome & { seconds: number }>(
    {
      type: 'loop',
      accounts: b.customers.slice(0, accounts).map((c) => ({ accountId: c.accountId, token: c.token })),
      clients,
      warmUpSeconds: 1,
      seconds,
    },
    warmed,
  );
  return measured(pid, postmaster, cpu0, pg0, out.statuses['201'] ?? 0, out.seconds);
}

/** A slice's figures: its transfers, and the CPU the server and postgres spent since the warm-up ended. */
function measured(
  pid: number,
  postmaster: string | undefined,
  cpu0: ReturnType<typeof processCpu>,
  pg0: ReturnType<typeof cpuSnapshot>,
  transfers: number,
  seconds: number,
): Tally {
  const cpu1 = processCpu(pid);
  const pg1 = cpuSnapshot(postmaster);
  let postgresMs = 0;
  for (const [p, ms] of pg1.postgresMs) postgresMs += ms - (pg0.postgresMs.get(p) ?? 0);
  return { transfers, seconds, mainMs: cpu1.mainMs - cpu0.mainMs, otherMs: cpu1.otherMs - cpu0.otherMs, postgresMs };
}

const add = (a: Tally, b: Tally): Tally => ({
  transfers: a.transfers + b.transfers,
  seconds: a.seconds + b.seconds,
  mainMs: a.mainMs + b.mainMs,
  otherMs: a.otherMs + b.otherMs,
  postgresMs: a.postgresMs + b.postgresMs,
});
const ZERO: Tally = { transfers: 0, seconds: 0, mainMs: 0, otherMs: 0, postgresMs: 0 };
/** Ratios of rounds as their geometric mean, with two standard errors of the mean of their logarithms either side. */
function spread(ratios: number[]): string {
  const logs = ratios.filter((r) => r > 0 && Number.isFinite(r)).map(Math.log);
  if (logs.length < 2) return logs.length ? `${Math.exp(logs[0] as number).toFixed(3)}x` : '-';
  const mean = logs.reduce((a, b) => a + b, 0) / logs.length;
  const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / (logs.length - 1));
  const se = sd / Math.sqrt(logs.length);
  return `${Math.exp(mean).toFixed(3)}x (${Math.exp(mean - 2 * se).toFixed(3)}-${Math.exp(mean + 2 * se).toFixed(3)})`;
}

const rate = (t: Tally) => t.transfers / Math.max(t.seconds, 1e-9);
const perTransfer = (ms: number, t: Tally) => (ms * 1_000) / Math.max(t.transfers, 1);

export async function runCompareBench(): Promise<void> {
  const other = process.env.BENCH_COMPARE_WITH;
  if (!other) throw new Error('BENCH_COMPARE_WITH=<directory of the other build, with its node_modules> is required');
  const accountCounts = (process.env.BENCH_ACCOUNTS ?? '50,2').split(',').map(Number);
  const clients = envNumber('BENCH_CLIENTS', 64, { integer: true });
  const seconds = envNumber('BENCH_SLICE_SECONDS', 4);
  const rounds = envNumber('BENCH_ROUNDS', 6, { integer: true });
  const cluster = await startTestCluster({ durable: true });
  const builds: Build[] = [];
  try {
    const probe = new PgSql(await cluster.freshDatabase(), { max: 1 });
    const postmaster = await localPostmaster(probe);
    await probe.close();
    for (const [label, dir] of [
      ['this', ROOT],
      ['other', resolve(other)],
    ] as const)
      builds.push(await startBuild(label, dir, await cluster.freshDatabase(), Math.max(...accountCounts)));
    console.log(`Tally compare bench: this build (${ROOT}) against ${resolve(other)}, ${clients} clients, ${rounds} rounds of ${seconds} s slices`);
    const totals = new Map<string, Tally>();
    const ratios = new Map<number, Array<{ rate: number; main: number }>>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      const line: string[] = [];
      for (const accounts of accountCounts) {
        const got = new Map<string, Tally>();
        for (const b of order) got.set(b.label, await slice(b, accounts, clients, seconds, postmaster));
        for (const [label, t] of got) totals.set(`${label}|${accounts}`, add(totals.get(`${label}|${accounts}`) ?? ZERO, t));
        const [mine, theirs] = [got.get('this') as Tally, got.get('other') as Tally];
        ratios.set(accounts, [
          ...(ratios.get(accounts) ?? []),
          { rate: rate(mine) / rate(theirs), main: perTransfer(mine.mainMs, mine) / perTransfer(theirs.mainMs, theirs) },
        ]);
        line.push(`${accounts} accounts ${fmtInt(rate(mine))}/${fmtInt(rate(theirs))} = ${(rate(mine) / rate(theirs)).toFixed(2)}x`);
      }
      console.log(`  round ${round + 1} (${order.map((b) => b.label).join(' then ')}): ${line.join(', ')}`);
    }
    const rows = accountCounts.map((accounts) => {
      const [mine, theirs] = [totals.get(`this|${accounts}`) as Tally, totals.get(`other|${accounts}`) as Tally];
      const us = (t: Tally) => `${fmtInt(perTransfer(t.mainMs, t))}/${fmtInt(perTransfer(t.otherMs, t))}/${fmtInt(perTransfer(t.postgresMs, t))}`;
      return [String(accounts), fmtInt(rate(mine)), fmtInt(rate(theirs)), `${(rate(mine) / rate(theirs)).toFixed(3)}x`, us(mine), us(theirs)];
    });
    console.log('\nOver all rounds (CPU per transfer: server main thread / its other threads / postgres, us)');
    printTable(['accounts', 'this/s', 'other/s', 'this/other', 'this CPU', 'other CPU'], rows);
    console.log('\nPer round, this/other: geometric mean and its range of two standard errors (narrower with more rounds)');
    printTable(
      ['accounts', 'transfers/s', 'main thread us per transfer'],
      accountCounts.map((accounts) => {
        const list = ratios.get(accounts) ?? [];
        return [String(accounts), spread(list.map((r) => r.rate)), spread(list.map((r) => r.main))];
      }),
    );
  } finally {
    for (const b of builds) {
      await b.client.stop().catch(() => {});
      b.child.kill('SIGTERM');
      await new Promise((done) => (b.child.exitCode === null ? b.child.once('exit', done) : done(undefined)));
    }
    await cluster.stop();
  }
}
