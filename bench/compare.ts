import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import supertest from 'supertest';
import { PgSql } from '../src/eventstore/sql';
import { ADMIN_TOKEN, createPartner } from '../test/support/app';
import { type Customer, customer, fund } from '../test/support/ledger';
import { startTestCluster } from '../test/support/postgres';
import { LoadClient, type Outcome } from './ledger';
import { CARDS_CLIENT_SOURCE, type CardsLoad, type CardsOutcome, cardHolder, cardsLoad } from './cards';
import type { DirectLoop, SeedHistory } from './compare-server';
import { LATE_MS, type OpenStats, offeredOf, openRates } from './open-loop';
import { benchClusterSettings, cpuSnapshot, envNumber, fmtInt, fmtMs, localPostmaster, mapLimit, percentile, printTable, processCpu } from './support';

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
 * the store and the projections without the request path's cost. BENCH_OPEN_RATES (e.g. `300,700`,
 * or `25%,50%` of the two builds' closed loops at the first account count, measured once first):
 * the slices are open loops at those rates instead (requests offered at fixed times, latency from
 * each one's due time, as in the ledger bench), and it prints each build's p50 and p99 and CPU per
 * transfer per rate, with the rounds' ratios: tails and light-load CPU judged side by side.
 * BENCH_PG_SETTINGS: the cluster's settings, as in the other benches. BENCH_THIS_NODE_FLAGS and
 * BENCH_OTHER_NODE_FLAGS: node's flags for each server (e.g. `--max-semi-space-size=64`);
 * BENCH_THIS_ENV and BENCH_OTHER_ENV: settings for each (e.g. `APPEND_MIN_CONCURRENT_BATCH=2`): to
 * compare settings, BENCH_COMPARE_WITH may be this very checkout. `BENCH_SERVER_PROCESSES=2` there
 * runs that build as two server processes on one port and one database (nodes sharing one
 * PostgreSQL), their CPU summed. BENCH_COMPARE_MIX=cards: the cards bench's mix instead of transfers
 * alone (BENCH_ACCOUNTS card holders, each with a year of settled spends made by its own server,
 * BENCH_CARD_HISTORY as in the cards bench; a closed loop's callers half authorizing, half
 * transferring; an open loop's requests an authorization and a transfer in turn): rates and CPU are
 * per request of either kind, and latencies are the authorizations'.
 * A difference of a few percent needs an A/A run beside it (BENCH_COMPARE_WITH a worktree of this
 * very commit): the build started first ("this") has read a few percent low at 2 accounts whichever
 * build it was (docs/performance.md has the figures).
 */

interface Build {
  label: string;
  dir: string;
  child: ChildProcess;
  /** The server processes whose CPU counts: the child, or the servers it forked (BENCH_SERVER_PROCESSES). */
  pids: number[];
  client: LoadClient;
  customers: Customer[];
  partnerId: string;
  /** BENCH_COMPARE_MIX=cards: what every load message carries. */
  cards?: CardsLoad;
}

/** BENCH_DIRECT=1: transfers made inside each server process, without HTTP (the command path and what follows it). */
const DIRECT = process.env.BENCH_DIRECT === '1';
/** BENCH_COMPARE_MIX=cards: card authorizations and transfers, as in the cards bench. */
const CARDS = process.env.BENCH_COMPARE_MIX === 'cards';
/** What a slice counts: transfers, or (the cards mix) requests of either kind. */
const UNIT = CARDS ? 'request' : 'transfer';

interface Tally {
  /** Transfers answered 201, or (the cards mix) requests of either kind. */
  served: number;
  /** Open-loop slices: each transfer's milliseconds from its due time (empty for closed loops). */
  latencies: number[];
  seconds: number;
  mainMs: number;
  otherMs: number;
  postgresMs: number;
  /** CPU time the hypervisor gave to others while the machine wanted it (steal), over every CPU. */
  stealMs: number;
}

const FUNDING = '1000000';
const ROOT = resolve(__dirname, '..');

/** `A=1 B=2` as an environment (BENCH_THIS_ENV, BENCH_OTHER_ENV). */
function settingsOf(raw: string | undefined): Record<string, string> {
  const pairs = (raw ?? '').split(' ').filter(Boolean);
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new Error(`BENCH_THIS_ENV / BENCH_OTHER_ENV: ${JSON.stringify(pair)} is not NAME=value`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}

async function startBuild(label: string, dir: string, databaseUrl: string, accounts: number): Promise<Build> {
  const flags = (process.env[label === 'this' ? 'BENCH_THIS_NODE_FLAGS' : 'BENCH_OTHER_NODE_FLAGS'] ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', join(ROOT, 'bench/compare-server.ts')], {
    cwd: dir,
    env: {
      ...process.env,
      ...settingsOf(process.env[label === 'this' ? 'BENCH_THIS_ENV' : 'BENCH_OTHER_ENV']),
      TALLY_BUILD_DIR: dir,
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN,
    },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const line = await new Promise<string>((done, fail) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.once('line', done);
    child.once('exit', (code) => fail(new Error(`the ${label} server exited (${code}) before listening`)));
  });
  const { url, pids } = JSON.parse(line) as { url: string; pids: number[] };
  if (DIRECT && pids.length > 1) throw new Error('BENCH_DIRECT loads one server process: leave BENCH_SERVER_PROCESSES out');
  const http = supertest.agent(url);
  const partner = await createPartner(http, 'Bench');
  const partnerId = (partner as { id: string }).id;
  if (CARDS) {
    if (DIRECT) throw new Error('BENCH_DIRECT makes transfers alone: leave BENCH_COMPARE_MIX out');
    const holders = await mapLimit(Array.from({ length: accounts }), 8, () => cardHolder(http, partner));
    const history = envNumber('BENCH_CARD_HISTORY', 365, { integer: true, zero: true });
    if (history > 0) await seeded(child, label, { type: 'seed', partnerId, cardIds: holders.map((h) => h.cardId), spends: history });
    return { label, dir, child, pids, client: new LoadClient(url, CARDS_CLIENT_SOURCE), customers: holders, partnerId, cards: cardsLoad(holders, partner) };
  }
  const customers = await mapLimit(Array.from({ length: accounts }), 8, async () => {
    const c = await customer(http, partner);
    await fund(http, partner, c, FUNDING);
    return c;
  });
  return { label, dir, child, pids, client: new LoadClient(url), customers, partnerId };
}

/** The cards' history, made by the build's own server (compare-server's seed), which answers once its read models caught up. */
async function seeded(child: ChildProcess, label: string, seed: SeedHistory): Promise<void> {
  const started = Date.now();
  await new Promise<void>((done, fail) => {
    const exited = (code: number | null) => fail(new Error(`the ${label} server exited (${code}) while making the cards' history`));
    const onMessage = (message: { type?: string; error?: string }) => {
      if (message.type !== 'seeded') return;
      child.off('message', onMessage);
      child.off('exit', exited);
      if (message.error) fail(new Error(`the ${label} server could not make the cards' history: ${message.error}`));
      else done();
    };
    child.on('message', onMessage);
    child.once('exit', exited);
    child.send(seed);
  });
  console.log(`  ${label}: ${seed.spends} spends per card made and settled, the read models caught up, in ${((Date.now() - started) / 1_000).toFixed(1)} s`);
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
  const pids = b.pids;
  let cpu0 = serverCpu(pids);
  let pg0 = cpuSnapshot(postmaster);
  const warmed = async () => {
    cpu0 = serverCpu(pids);
    pg0 = cpuSnapshot(postmaster);
  };
  if (DIRECT) {
    const accountsOf = b.customers.slice(0, accounts).map((c) => ({ userId: c.id, accountId: c.accountId }));
    const out = await directSlice(b, { partnerId: b.partnerId, accounts: accountsOf, clients, warmUpSeconds: 1, seconds }, warmed);
    if (out.failures > 0) throw new Error(`${out.failures} direct transfers of the ${b.label} build failed`);
    return measured(pids, postmaster, cpu0, pg0, out.transfers, out.seconds);
  }
  if (b.cards) {
    const mixed = await b.client.run<{ seconds: number; authorizations: CardsOutcome; transfers: CardsOutcome }>(
      { type: 'loop', ...firstCards(b.cards, accounts), clients, authorizers: Math.floor(clients / 2), warmUpSeconds: 1, seconds },
      warmed,
    );
    return measured(pids, postmaster, cpu0, pg0, servedOf(mixed), mixed.seconds);
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
  return measured(pids, postmaster, cpu0, pg0, out.statuses['201'] ?? 0, out.seconds);
}

/** An open-loop slice: `rate` transfers/s offered over the first `accounts` accounts (compare's BENCH_OPEN_RATES). */
async function openSlice(b: Build, accounts: number, rate: number, seconds: number, postmaster: string | undefined): Promise<Tally> {
  const pids = b.pids;
  let cpu0 = serverCpu(pids);
  let pg0 = cpuSnapshot(postmaster);
  const warmed = async () => {
    cpu0 = serverCpu(pids);
    pg0 = cpuSnapshot(postmaster);
  };
  if (b.cards) {
    const mixed = await b.client.run<OpenStats & { authorizations: CardsOutcome; transfers: CardsOutcome }>(
      { type: 'open', ...firstCards(b.cards, accounts), rate, maxConnections: 1_024, lateMs: LATE_MS, warmUpSeconds: 1, seconds },
      warmed,
    );
    return { ...measured(pids, postmaster, cpu0, pg0, servedOf(mixed), mixed.seconds), latencies: mixed.authorizations.latencies };
  }
  const out = await b.client.run<Outcome & OpenStats>(
    {
      type: 'open',
      accounts: b.customers.slice(0, accounts).map((c) => ({ accountId: c.accountId, token: c.token })),
      rate,
      maxConnections: 1_024,
      lateMs: LATE_MS,
      warmUpSeconds: 1,
      seconds,
    },
    warmed,
  );
  return { ...measured(pids, postmaster, cpu0, pg0, out.statuses['201'] ?? 0, out.seconds), latencies: out.latencies };
}

/** The load over the first `accounts` cards (a slice's account count, as transfers take the first accounts). */
const firstCards = (load: CardsLoad, accounts: number): CardsLoad => ({ ...load, cards: load.cards.slice(0, accounts) });

/** The cards mix's requests answered 201 (a declined authorization among them), of both kinds. */
const servedOf = (out: { authorizations: CardsOutcome; transfers: CardsOutcome }) =>
  (out.authorizations.statuses['201'] ?? 0) + (out.transfers.statuses['201'] ?? 0);

/** The CPU of a build's server processes (each one's main thread counted as main). */
function serverCpu(pids: number[]): ReturnType<typeof processCpu> {
  const each = pids.map(processCpu);
  return { mainMs: each.reduce((t, c) => t + c.mainMs, 0), otherMs: each.reduce((t, c) => t + c.otherMs, 0) };
}

/** A slice's figures: its transfers, and the CPU the server and postgres spent since the warm-up ended. */
function measured(
  pids: number[],
  postmaster: string | undefined,
  cpu0: ReturnType<typeof processCpu>,
  pg0: ReturnType<typeof cpuSnapshot>,
  served: number,
  seconds: number,
): Tally {
  const cpu1 = serverCpu(pids);
  const pg1 = cpuSnapshot(postmaster);
  let postgresMs = 0;
  for (const [p, ms] of pg1.postgresMs) postgresMs += ms - (pg0.postgresMs.get(p) ?? 0);
  const stealMs = pg1.stealMs - pg0.stealMs;
  return { served, latencies: [], seconds, mainMs: cpu1.mainMs - cpu0.mainMs, otherMs: cpu1.otherMs - cpu0.otherMs, postgresMs, stealMs };
}

const add = (a: Tally, b: Tally): Tally => ({
  served: a.served + b.served,
  latencies: a.latencies.concat(b.latencies),
  seconds: a.seconds + b.seconds,
  mainMs: a.mainMs + b.mainMs,
  otherMs: a.otherMs + b.otherMs,
  postgresMs: a.postgresMs + b.postgresMs,
  stealMs: a.stealMs + b.stealMs,
});
const ZERO: Tally = { served: 0, latencies: [], seconds: 0, mainMs: 0, otherMs: 0, postgresMs: 0, stealMs: 0 };

/** The share of the machine's CPU time the hypervisor took during a slice: a host's stall reads here, not in the build. */
const stolen = (t: Tally) => `${((100 * t.stealMs) / Math.max(1, t.seconds * 1_000 * availableParallelism())).toFixed(0)}%`;
/** Ratios of rounds as their geometric mean, with two standard errors of the mean of their logarithms either side. */
function spread(ratios: number[]): string {
  const logs = ratios.filter((r) => r > 0 && Number.isFinite(r)).map(Math.log);
  if (logs.length < 2) return logs.length ? `${Math.exp(logs[0] as number).toFixed(3)}x` : '-';
  const mean = logs.reduce((a, b) => a + b, 0) / logs.length;
  const sd = Math.sqrt(logs.reduce((a, b) => a + (b - mean) ** 2, 0) / (logs.length - 1));
  const se = sd / Math.sqrt(logs.length);
  return `${Math.exp(mean).toFixed(3)}x (${Math.exp(mean - 2 * se).toFixed(3)}-${Math.exp(mean + 2 * se).toFixed(3)})`;
}

const rate = (t: Tally) => t.served / Math.max(t.seconds, 1e-9);
const perServed = (ms: number, t: Tally) => (ms * 1_000) / Math.max(t.served, 1);

const p99Of = (t: Tally) => percentile(Float64Array.from(t.latencies).sort(), 0.99);
const p50Of = (t: Tally) => percentile(Float64Array.from(t.latencies).sort(), 0.5);
const usOf = (t: Tally) => `${fmtInt(perServed(t.mainMs, t))}/${fmtInt(perServed(t.otherMs, t))}/${fmtInt(perServed(t.postgresMs, t))}`;
const nodeUs = (t: Tally) => perServed(t.mainMs + t.otherMs, t);
/** This build's CPU per request over the other's, of one part (the main thread, postgres). */
const cpuRatio = (part: 'mainMs' | 'postgresMs', mine: Tally, theirs: Tally) => perServed(mine[part], mine) / perServed(theirs[part], theirs);

interface Plan {
  builds: Build[];
  accountCounts: number[];
  clients: number;
  seconds: number;
  rounds: number;
  postmaster: string | undefined;
}

/** Each key's slices over all rounds (per build, added up) and each round's this/other figures. */
interface Alternated<R> {
  totals: Map<string, Tally>;
  ratios: Map<number, R[]>;
}

/**
 * `plan.rounds` rounds, the builds' order alternating between them: per key, one slice of each build,
 * added to its totals, and `ratio` of this build's slice to the other's; each round printed on one line.
 */
async function alternate<R>(
  plan: Plan,
  keys: number[],
  sliceOf: (b: Build, key: number) => Promise<Tally>,
  ratio: (mine: Tally, theirs: Tally) => R,
  describe: (key: number, mine: Tally, theirs: Tally) => string,
): Promise<Alternated<R>> {
  const totals = new Map<string, Tally>();
  const ratios = new Map<number, R[]>();
  for (let round = 0; round < plan.rounds; round++) {
    const order = round % 2 === 0 ? plan.builds : [...plan.builds].reverse();
    const line: string[] = [];
    for (const key of keys) {
      const got = new Map<string, Tally>();
      for (const b of order) got.set(b.label, await sliceOf(b, key));
      for (const [label, t] of got) totals.set(`${label}|${key}`, add(totals.get(`${label}|${key}`) ?? ZERO, t));
      const [mine, theirs] = [got.get('this') as Tally, got.get('other') as Tally];
      ratios.set(key, [...(ratios.get(key) ?? []), ratio(mine, theirs)]);
      line.push(`${describe(key, mine, theirs)} (stolen by the hypervisor ${stolen(mine)}/${stolen(theirs)})`);
    }
    console.log(`  round ${round + 1} (${order.map((b) => b.label).join(' then ')}): ${line.join('; ')}`);
  }
  return { totals, ratios };
}

/** Rounds of closed-loop slices, per account count: transfers/s and CPU per transfer of each build, and their ratios. */
async function closedRounds(plan: Plan): Promise<void> {
  const { accountCounts, clients, seconds, postmaster } = plan;
  const { totals, ratios } = await alternate(
    plan,
    accountCounts,
    (b, accounts) => slice(b, accounts, clients, seconds, postmaster),
    (mine, theirs) => ({
      rate: rate(mine) / rate(theirs),
      main: cpuRatio('mainMs', mine, theirs),
      postgres: cpuRatio('postgresMs', mine, theirs),
    }),
    (accounts, mine, theirs) => `${accounts} accounts ${fmtInt(rate(mine))}/${fmtInt(rate(theirs))} = ${(rate(mine) / rate(theirs)).toFixed(2)}x`,
  );
  const rows = accountCounts.map((accounts) => {
    const [mine, theirs] = [totals.get(`this|${accounts}`) as Tally, totals.get(`other|${accounts}`) as Tally];
    return [String(accounts), fmtInt(rate(mine)), fmtInt(rate(theirs)), `${(rate(mine) / rate(theirs)).toFixed(3)}x`, usOf(mine), usOf(theirs)];
  });
  console.log(`\nOver all rounds (CPU per ${UNIT}: server main thread / its other threads / postgres, us)`);
  printTable(['accounts', 'this/s', 'other/s', 'this/other', 'this CPU', 'other CPU'], rows);
  console.log('\nPer round, this/other: geometric mean and its range of two standard errors (narrower with more rounds)');
  printTable(
    ['accounts', `${UNIT}s/s`, `main thread us per ${UNIT}`, `postgres us per ${UNIT}`],
    accountCounts.map((accounts) => {
      const list = ratios.get(accounts) ?? [];
      return [String(accounts), spread(list.map((r) => r.rate)), spread(list.map((r) => r.main)), spread(list.map((r) => r.postgres))];
    }),
  );
}

/**
 * Rounds of open-loop slices at each offered rate (over the first account count): each build's
 * p50 and p99 from the due times and CPU per transfer, pooled over the rounds, and the rounds' ratios.
 */
async function openRounds(plan: Plan, offered: number[]): Promise<void> {
  const { seconds, postmaster } = plan;
  const accounts = plan.accountCounts[0] as number;
  const { totals, ratios } = await alternate(
    plan,
    offered,
    (b, perSecond) => openSlice(b, accounts, perSecond, seconds, postmaster),
    (mine, theirs) => ({
      p99: p99Of(mine) / p99Of(theirs),
      node: nodeUs(mine) / nodeUs(theirs),
      postgres: cpuRatio('postgresMs', mine, theirs),
    }),
    (perSecond, mine, theirs) => `${fmtInt(perSecond)}/s p99 ${fmtMs(p99Of(mine))}/${fmtMs(p99Of(theirs))} ms, CPU ${usOf(mine)} against ${usOf(theirs)} us`,
  );
  const rows = offered.map((perSecond) => {
    const [mine, theirs] = [totals.get(`this|${perSecond}`) as Tally, totals.get(`other|${perSecond}`) as Tally];
    const ms = (t: Tally) => `${fmtMs(p50Of(t))} / ${fmtMs(p99Of(t))}`;
    return [fmtInt(perSecond), fmtInt(rate(mine)), fmtInt(rate(theirs)), ms(mine), ms(theirs), usOf(mine), usOf(theirs)];
  });
  console.log(
    `\nOver all rounds, ${accounts} accounts (latency from each ${CARDS ? 'authorization' : 'transfer'}'s due time; CPU per ${UNIT}: server main thread / its other threads / postgres, us)`,
  );
  printTable(['offered/s', 'this served/s', 'other served/s', 'this p50 / p99 ms', 'other p50 / p99 ms', 'this CPU', 'other CPU'], rows);
  console.log('\nPer round, this/other: geometric mean and its range of two standard errors (narrower with more rounds)');
  printTable(
    ['offered/s', CARDS ? 'authorization p99' : 'p99', `server node us per ${UNIT}`, `postgres us per ${UNIT}`],
    offered.map((perSecond) => {
      const list = ratios.get(perSecond) ?? [];
      return [fmtInt(perSecond), spread(list.map((r) => r.p99)), spread(list.map((r) => r.node)), spread(list.map((r) => r.postgres))];
    }),
  );
}

/** BENCH_OPEN_RATES as transfers/s: fractions of the two builds' closed loops (one slice each, at the first account count). */
async function offeredRates(plan: Plan): Promise<number[]> {
  const rates = openRates(process.env.BENCH_OPEN_RATES, []);
  if (!rates.some((r) => 'fraction' in r)) return rates.map((r) => offeredOf(r, 0));
  const accounts = plan.accountCounts[0] as number;
  let sum = 0;
  for (const b of plan.builds) sum += rate(await slice(b, accounts, plan.clients, plan.seconds, plan.postmaster));
  const closed = sum / plan.builds.length;
  console.log(`  closed loop at ${accounts} accounts, ${plan.clients} clients (one slice each, the mean of the two): ${fmtInt(closed)} ${UNIT}s/s`);
  return rates.map((r) => Math.round(offeredOf(r, closed)));
}

export async function runCompareBench(): Promise<void> {
  const other = process.env.BENCH_COMPARE_WITH;
  if (!other) throw new Error('BENCH_COMPARE_WITH=<directory of the other build, with its node_modules> is required');
  const accountCounts = (process.env.BENCH_ACCOUNTS ?? '50,2').split(',').map(Number);
  const clients = envNumber('BENCH_CLIENTS', 64, { integer: true });
  const seconds = envNumber('BENCH_SLICE_SECONDS', 4);
  const rounds = envNumber('BENCH_ROUNDS', 6, { integer: true });
  const open = (process.env.BENCH_OPEN_RATES ?? '').trim() !== '';
  const cluster = await startTestCluster({ durable: true, settings: benchClusterSettings() });
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
    const plan: Plan = { builds, accountCounts, clients, seconds, rounds, postmaster };
    const what = `${CARDS ? "the cards bench's mix" : 'transfers'}, ${open ? 'open loops (fixed arrival times)' : `${clients} clients`}`;
    console.log(`Tally compare bench: this build (${ROOT}) against ${resolve(other)}, ${what}, ${rounds} rounds of ${seconds} s slices`);
    if (open) await openRounds(plan, await offeredRates(plan));
    else await closedRounds(plan);
  } finally {
    for (const b of builds) {
      await b.client.stop().catch(() => {});
      b.child.kill('SIGTERM');
      await new Promise((done) => (b.child.exitCode === null ? b.child.once('exit', done) : done(undefined)));
    }
    await cluster.stop();
  }
}
