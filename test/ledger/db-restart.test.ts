import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { expect } from 'chai';
import pg from 'pg';
import supertest from 'supertest';
import { createPartner, type PartnerCredentials } from '../support/app';
import { balanceOf, type Customer, customer, fund } from '../support/ledger';
import { type ControlledCluster, startControlledCluster } from '../support/postgres';
import { tempDir } from '../support/temp';
import { type Dec, dec, prng, ZERO } from './support/money';
import { freePort, ServerProcess, testServerEnv } from './support/server-process';

/**
 * Database restarts under load: the real server runs as a child process on a Postgres cluster of
 * this test's own; CLIENTS clients send keyed transfers without pause while that Postgres is stopped
 * (`pg_ctl stop`, DB_RESTART_MODE: immediate and fast in turn by default) for DOWN_MS and started again, CYCLES times.
 * The process must survive every restart (a pg client that lost its server while checked out once
 * killed it with an unhandled 'error' event), answer only 2xx, 503 or a decided 4xx meanwhile, serve
 * again within seconds of each start, lose no acknowledged transfer and make none twice, and log each
 * outage once, not a stack per failed request.
 * DB_RESTART_CYCLES, DB_RESTART_CLIENTS, DB_RESTART_DOWN_MS, DB_RESTART_MODE, DB_RESTART_SEED tune it.
 */
const CYCLES = Number(process.env.DB_RESTART_CYCLES ?? 4);
const CLIENTS = Number(process.env.DB_RESTART_CLIENTS ?? 16);
const DOWN_MS = Number(process.env.DB_RESTART_DOWN_MS ?? 3_000);
/** 'fast' ends every session with 57P01, 'immediate' drops them as a crash would; 'both' alternates, immediate first. */
const MODE = (process.env.DB_RESTART_MODE ?? 'both') as 'fast' | 'immediate' | 'both';
const modeOf = (cycle: number): 'fast' | 'immediate' => (MODE === 'both' ? (cycle % 2 === 1 ? 'immediate' : 'fast') : MODE);
const SEED = Number(process.env.DB_RESTART_SEED ?? 4242);
/** Load before the first stop and after each recovery. */
const UP_MS = 1_000;
/** The first 2xx after a start must come within this (it comes in well under a second here). */
const RECOVERY_LIMIT_MS = 5_000;
const CUSTOMERS = 8;
const OPENING = '1000';
const REFUSAL = /^(Insufficient balance in account \d+|Daily transaction limit exceeded)$/;

type Answer = { status: number; body: Record<string, unknown> & { error?: string } };

interface TransferOp {
  from: number;
  to: number;
  amount: string;
  outcome: 'unknown' | 'done' | 'refused' | 'wrong';
  uuid?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Postgres restarts under load (a cluster of its own, stopped and started again)', () => {
  let cluster: ControlledCluster | null = null;
  let server: ServerProcess;
  let databaseUrl: string;
  let dataDir: string | undefined;
  const customers: Customer[] = [];
  /** Every answer: when its request left and what it was (null: the connection failed). */
  const answers: Array<{ started: number; status: number | null }> = [];
  /** Stop begun .. first 2xx of a request sent after the start. */
  const outages: Array<{ from: number; started?: number; to?: number }> = [];
  const violations: string[] = [];
  const book: TransferOp[] = [];
  /** The server's last lines other than per-request ones, for a failure message. */
  const notable: string[] = [];
  const logs = { lines: 0, errors: [] as string[], warnings: 0, requestFailed: 0, request503: 0, unavailable: 0, back: 0 };
  let stopping = false;
  /** The test failed: clients give up at once instead of finishing what they sent. */
  let aborted = false;

  before(async function () {
    this.timeout(120_000);
    // Synchronous commit: an immediate stop kills the server as a crash would, and with asynchronous
    // commit (the test clusters' default) that loses the last acknowledged transactions, the database's
    // doing, not the service's. fsync may stay off: the machine's page cache outlives the processes.
    cluster = await startControlledCluster({ settings: ['synchronous_commit=on'] });
    if (!cluster) {
      console.log('    SKIPPED: DATABASE_URL is set and no local pg_ctl: this test needs a Postgres it may stop and start');
      this.skip();
    }
    databaseUrl = await cluster.freshDatabase();
    dataDir = tempDir('tally-db-restart-');
    server = new ServerProcess(
      await freePort(),
      testServerEnv(databaseUrl, dataDir, {
        // Projections commit batch after batch without pausing, so a stop nearly always finds a
        // transaction's client checked out (with the default pace, about half the runs did).
        PROJECTIONS_PACE_MS: '0',
        // info: the per-request line is where a failed request belongs; counted below.
        LOG_LEVEL: 'info',
      }),
      countLogLine,
    );
    await server.start();
    const http = supertest.agent(server.url);
    const partner: PartnerCredentials = await createPartner(http, 'Restart Acme');
    for (let i = 0; i < CUSTOMERS; i++) customers.push(await customer(http, partner));
    for (const c of customers) await fund(http, partner, c, OPENING);
  });

  after(async () => {
    stopping = true;
    await server?.kill();
    cluster?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  function countLogLine(line: string): void {
    if (!line.includes('"msg":"request"')) {
      notable.push(line.slice(0, 2_000));
      if (notable.length > 40) notable.shift();
    }
    if (!line.startsWith('{')) return;
    let entry: { level?: number; msg?: string; status?: number };
    try {
      entry = JSON.parse(line);
    } catch {
      return;
    }
    logs.lines++;
    if ((entry.level ?? 0) >= 50) logs.errors.push(entry.msg ?? '');
    else if (entry.level === 40) logs.warnings++;
    if (entry.msg === 'request failed') logs.requestFailed++;
    if (entry.msg === 'request' && entry.status === 503) logs.request503++;
    if (entry.msg?.startsWith('store unavailable')) logs.unavailable++;
    if (entry.msg?.startsWith('store is back')) logs.back++;
  }

  async function send(path: string, headers: Record<string, string>, body: unknown): Promise<Answer | null> {
    const started = Date.now();
    try {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      answers.push({ started, status: res.status });
      if (res.status === 503 && !res.headers.get('retry-after')) violations.push(`503 without Retry-After: ${text}`);
      return { status: res.status, body: text ? JSON.parse(text) : {} };
    } catch (error) {
      answers.push({ started, status: null });
      if (server.running) violations.push(`connection failed while the server ran: ${String(error)}`);
      return null;
    }
  }

  /** One client: keyed transfers one after another, each retried (same key) until its answer is definite. */
  async function client(rng: () => number): Promise<void> {
    while (!stopping && server.running) {
      const from = Math.floor(rng() * CUSTOMERS);
      const to = (from + 1 + Math.floor(rng() * (CUSTOMERS - 1))) % CUSTOMERS;
      const op: TransferOp = { from, to, amount: (1 + Math.floor(rng() * 200)) / 100 + '', outcome: 'unknown' };
      book.push(op);
      const headers = { ...(customers[from] as Customer).bearer, 'x-idempotency-key': randomUUID() };
      const body = { toAccountId: (customers[to] as Customer).accountId, amount: op.amount, description: 'restart load' };
      const deadline = Date.now() + 60_000;
      while (op.outcome === 'unknown') {
        const a = await send('/api/v1/transactions/transfer', headers, body);
        if (aborted || !server.running || Date.now() > deadline) return;
        if (a?.status === 201 && a.body.status === 'COMPLETED') {
          op.outcome = 'done';
          op.uuid = String(a.body.uuid);
        } else if (a?.status === 400 && REFUSAL.test(String(a.body.error))) op.outcome = 'refused';
        else if (a === null || a.status === 503 || a.status === 409 || (a.status === 400 && a.body.error === 'Duplicate request in progress')) {
          await sleep(20 + rng() * 30);
        } else {
          op.outcome = 'wrong';
          violations.push(`transfer answered ${a.status} ${JSON.stringify(a.body)}`);
        }
      }
    }
  }

  /** Resolves with the time of the first 201 to a request sent at or after `since`. */
  async function firstSuccessSince(since: number, limitMs: number): Promise<number | undefined> {
    const until = Date.now() + limitMs;
    let seen = 0;
    while (Date.now() < until && server.running) {
      for (; seen < answers.length; seen++) {
        const a = answers[seen] as { started: number; status: number | null };
        if (a.started >= since && a.status !== null && a.status < 300) return Date.now();
      }
      await sleep(10);
    }
    return undefined;
  }

  it(`survives ${CYCLES} restarts (${MODE}, ${DOWN_MS} ms down) under ${CLIENTS} clients: 2xx/503 only, nothing lost, the outage logged once each`, async function () {
    this.timeout(120_000);
    const db = cluster as ControlledCluster;
    const load = Array.from({ length: CLIENTS }, (_, i) => client(prng(SEED * 100 + i)));
    const dead = () => `the server died:\n${notable.join('\n')}\n${server.tail().slice(-300)}`;
    try {
      await sleep(UP_MS);
      for (let cycle = 1; cycle <= CYCLES; cycle++) {
        const outage: (typeof outages)[number] = { from: Date.now() };
        outages.push(outage);
        db.stopServer(modeOf(cycle));
        await sleep(DOWN_MS);
        expect(server.running, `cycle ${cycle}, database down: ${dead()}`).to.equal(true);
        db.startServer();
        outage.started = Date.now();
        outage.to = await firstSuccessSince(outage.started, RECOVERY_LIMIT_MS);
        expect(server.running, `cycle ${cycle}, after the start: ${dead()}`).to.equal(true);
        if (outage.to === undefined) {
          const since = answers.filter((a) => a.started >= (outage.started ?? 0)).map((a) => a.status ?? 'cut');
          const seen = JSON.stringify(countBy(since.map(String)));
          expect.fail(`cycle ${cycle}: no 2xx within ${RECOVERY_LIMIT_MS} ms of the start; answers since: ${seen}; server:\n${notable.join('\n')}`);
        }
        await sleep(UP_MS);
        expect(server.running, `cycle ${cycle}, serving again: ${dead()}`).to.equal(true);
      }
    } catch (error) {
      aborted = true;
      throw error;
    } finally {
      stopping = true;
      await Promise.all(load);
    }
    expect(server.running, dead()).to.equal(true);
    expect(violations.slice(0, 10), `${violations.length} wrong answers`).to.deep.equal([]);
    expect(
      book.filter((op) => op.outcome === 'unknown'),
      'transfers without a definite answer',
    ).to.deep.equal([]);

    // 503 only for requests the outage caught: sent while the database was down, or in flight at its
    // stop (sent up to 2 s before) or at its start (up to 1 s after the first 2xx).
    const statuses = new Map<string, number>();
    const late503: number[] = [];
    for (const a of answers) {
      const during = outages.some((o) => a.started >= o.from - 2_000 && a.started <= (o.to ?? Number.POSITIVE_INFINITY) + 1_000);
      const key = `${during ? 'near an outage' : 'clear'} ${a.status ?? 'cut'}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
      if (a.status === 503 && !during) late503.push(a.started);
    }
    const recoveries = outages.map((o) => (o.to ?? 0) - (o.started ?? 0));
    console.log(`    answers: ${JSON.stringify(Object.fromEntries(statuses))}; recovered ${recoveries.join(', ')} ms after each start`);
    expect(late503, '503s while the database was up').to.deep.equal([]);
    expect(statuses.get('near an outage 503') ?? 0, 'no 503 at all: the outages were not seen').to.be.greaterThan(0);

    // Nothing lost, nothing twice: the log holds exactly the acknowledged transfers ...
    const done = book.filter((op) => op.outcome === 'done');
    const db2 = new pg.Client({ connectionString: databaseUrl });
    await db2.connect();
    try {
      const rows = (
        await db2.query<{ id: string; n: number }>(
          `SELECT data->>'transactionId' AS id, count(*)::int AS n FROM es_events
            WHERE type = 'FundsDebited' AND data->>'reason' = 'transfer' GROUP BY 1`,
        )
      ).rows;
      expect(
        rows.filter((r) => r.n !== 1),
        'transfers debited more than once',
      ).to.deep.equal([]);
      expect(rows.map((r) => r.id).sort(), 'the transfers in the log are the acknowledged ones').to.deep.equal(done.map((op) => op.uuid).sort());
    } finally {
      await db2.end();
    }
    // ... and every balance is the clients' own book (read models caught up), summing to what was deposited.
    const expected = customers.map(() => ({ credits: dec(OPENING), debits: ZERO as Dec }));
    for (const op of done) {
      const f = expected[op.from] as { debits: Dec };
      const t = expected[op.to] as { credits: Dec };
      f.debits = f.debits.plus(op.amount);
      t.credits = t.credits.plus(op.amount);
    }
    const http = supertest.agent(server.url);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const actual = await Promise.all(customers.map((c) => balanceOf(http, c)));
      const wrong = actual.filter((a, i) => !dec(a.credits).eq(expected[i]?.credits ?? 0) || !dec(a.debits).eq(expected[i]?.debits ?? 0));
      if (wrong.length === 0) {
        const total = actual.reduce((sum, a) => sum.plus(a.credits).minus(a.debits), ZERO);
        expect(total.eq(dec(OPENING).times(CUSTOMERS)), `money conserved: ${total.toFixed()}`).to.equal(true);
        break;
      }
      if (Date.now() > deadline)
        expect(actual, 'balances against the clients’ book').to.deep.equal(
          expected.map((e) => ({ credits: e.credits.toFixed(8), debits: e.debits.toFixed(8) })),
        );
      await sleep(200);
    }

    // The outage is logged at each change, the failed requests at the request level only.
    console.log(
      `    transfers: ${done.length} done, ${book.length - done.length} refused; log: ${logs.lines} lines, ${logs.errors.length} errors ` +
        `(${JSON.stringify(countBy(logs.errors))}), ${logs.warnings} warnings, ${logs.request503} request lines with 503`,
    );
    expect(logs.requestFailed, "'request failed' lines (a stack per failed request)").to.equal(0);
    expect(logs.request503, 'request lines with status 503').to.be.greaterThan(0);
    expect(logs.unavailable, "'store unavailable' lines").to.be.within(CYCLES, 2 * CYCLES);
    expect(logs.back, "'store is back' lines").to.equal(logs.unavailable);
  });
});

function countBy(items: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[item] = (out[item] ?? 0) + 1;
  return out;
}
