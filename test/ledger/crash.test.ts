import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import supertest from 'supertest';
import { openTally } from '../../src/compose/open';
import type { Tally } from '../../src/compose/tally';
import { auditChecks } from '../../src/cli/audit-checks';
import { loadConfig } from '../../src/config';
import { writeKeysFile } from '../../src/platform/keys';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials } from '../support/app';
import { type Customer, customer, fund, PAYER, PAYOUT_DESTINATION } from '../support/ledger';
import { sharedCluster } from '../support/postgres';
import { tempDir } from '../support/temp';
import { copToUsdcDebit, type Dec, dec, fixed8, prng, ZERO } from './support/money';
import { freePort, ServerProcess, testServerEnv } from './support/server-process';

/**
 * Crash test: the real server runs as a child process; clients put a mixed concurrent load on it
 * (deposits and provider confirmations, transfers, payouts with settlements and failures, retried
 * payouts and re-sent confirmations, card authorizations cleared for their amount, less or more, or
 * reversed), the server is SIGKILLed at a seeded random moment, started
 * again on the same database, and the clients retry what was in flight. After every cycle: money is
 * conserved (API, read models and the event log agree with the clients' own books), every payout
 * key and every deposit moved money at most once, the provider and the ledger agree, every read
 * model equals the fold of the log, and every hash chain verifies.
 * It runs on a Postgres server and on the embedded store (PGlite in DATA_DIR, no DATABASE_URL). The
 * embedded store is one process's at a time: there the test reads the store (its checks and the
 * audit) while the server is stopped (SIGTERM), and starts it again after.
 * CRASH_SEED, CRASH_CYCLES, CRASH_WORKERS and CRASH_STORES (default postgres,embedded) tune it.
 */
const SEED = Number(process.env.CRASH_SEED ?? 7331);
const CYCLES = Number(process.env.CRASH_CYCLES ?? 3);
const WORKERS = Number(process.env.CRASH_WORKERS ?? 8);
const STORES = (process.env.CRASH_STORES ?? 'postgres,embedded').split(',').map((s) => s.trim()) as Array<'postgres' | 'embedded'>;
/** How long a client keeps retrying an idempotent call before the test fails. */
const RETRY_DEADLINE_MS = 90_000;

/** Customers 0..3 belong to one partner, 4..5 to another; transfers stay inside a partner. */
const PARTNER_OF = [0, 0, 0, 0, 1, 1];
const CUSTOMERS = PARTNER_OF.length;
const OPENING_DEPOSIT = '1000';

type Answer = { status: number; body: Record<string, unknown> & { error?: string } };

interface DepositOp {
  description: string;
  who: number;
  amount: string;
  uuid?: string;
  /** 'unknown' while the create request's fate is unknown (cut by the crash); resolved after recovery. */
  created: 'yes' | 'unknown' | 'absent';
  decision?: 'confirm' | 'fail';
  decided: boolean;
}

interface TransferOp {
  description: string;
  from: number;
  to: number;
  amount: string;
  outcome: 'done' | 'refused' | 'unknown' | 'absent';
}

interface CardOp {
  /** Unique per authorization: how one cut by the crash is found after recovery. */
  merchant: string;
  who: number;
  amount: string;
  id?: string;
  outcome: 'pending' | 'declined' | 'unknown' | 'absent';
  /** What settled it, once definite: cleared (for `cleared`) or reversed. */
  settled?: { action: 'clear'; cleared: string } | { action: 'reverse' };
}

interface PayoutOp {
  transactionId: string;
  who: number;
  cop: string;
  debit: Dec;
  body: Record<string, unknown>;
  answer?: Answer;
  decision?: 'settle' | 'fail';
  decided: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A positive amount in [min, max) with 0..maxDecimals decimals, from integer 10^-8 units. */
function randomAmount(rng: () => number, min: number, max: number, maxDecimals: number): string {
  const units = Math.round(min * 1e8) + Math.floor(rng() * Math.round((max - min) * 1e8));
  const quantum = 10 ** (8 - Math.floor(rng() * (maxDecimals + 1)));
  return dec(Math.max(quantum, units - (units % quantum)))
    .shiftedBy(-8)
    .toFixed();
}

for (const store of STORES)
  describe(`ledger crash recovery (SIGKILL under load, seeded): ${store}`, () => {
    let server: ServerProcess;
    let audit: Tally | undefined;
    /** '' on the embedded store. */
    let databaseUrl: string;
    let serverDir: string;
    /** The server's keys (TALLY_KEYS): the audit opens the users' data keys with them, as the operator's CLI does. */
    let serverKeys: string;
    const tempDirs: string[] = [];
    const partners: PartnerCredentials[] = [];
    const customers: Customer[] = [];
    const book = { deposits: [] as DepositOp[], transfers: [] as TransferOp[], payouts: [] as PayoutOp[], cards: [] as CardOp[] };
    /** Each customer's card. */
    const cardIds: string[] = [];
    /** Problems the load clients saw (a wrong answer); they stop their worker and fail the cycle. */
    const violations: string[] = [];
    const stats = { requests: 0, cut: 0, inFlight: 0, retried: 0 };
    /** Why idempotent calls were retried: a cut connection, or the status that was not definite. */
    const retryReasons = new Map<string, number>();
    let sequence = 0;
    /** Set when the test is over: clients still retrying give up at once. */
    let stopped = false;

    before(async function () {
      this.timeout(180_000);
      databaseUrl = store === 'postgres' ? await (await sharedCluster()).freshDatabase() : '';
      serverDir = tempDir('tally-crash-');
      tempDirs.push(serverDir);
      const env = testServerEnv(databaseUrl, serverDir, { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn' });
      serverKeys = env.TALLY_KEYS as string;
      server = new ServerProcess(await freePort(), env);
      await server.start();
      const http = supertest.agent(server.url);
      partners.push(await createPartner(http, 'Crash Acme'), await createPartner(http, 'Crash Globex'));
      for (const p of PARTNER_OF) customers.push(await customer(http, partners[p] as PartnerCredentials));
      for (let who = 0; who < CUSTOMERS; who++) {
        const uuid = await fund(http, partnerOf(who), customers[who] as Customer, OPENING_DEPOSIT);
        book.deposits.push({ description: 'top up', who, amount: OPENING_DEPOSIT, uuid, created: 'yes', decision: 'confirm', decided: true });
      }
      for (let who = 0; who < CUSTOMERS; who++) {
        const c = customers[who] as Customer;
        const applied = await http.post('/api/v1/cards/application').set(c.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
        await http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partnerOf(who).headers).send({});
        const issued = await http.post('/api/v1/cards').set(c.bearer).send({});
        expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
        cardIds.push(issued.body.data.id);
      }
      if (store === 'postgres') audit = await openAudit();
    });

    /** The test's own view of the store (for its checks and the audit), beside the server's. */
    async function openAudit(): Promise<Tally> {
      // On the embedded store, the server's DATA_DIR (its keys come from TALLY_KEYS, not from there).
      const auditDir = store === 'postgres' ? tempDir('tally-crash-audit-') : serverDir;
      if (store === 'postgres') tempDirs.push(auditDir);
      // The server's keys, where this process (which has no TALLY_KEYS) reads them: the server reads TALLY_KEYS first.
      writeKeysFile(auditDir, JSON.parse(serverKeys));
      const config = { ...loadConfig({}), databaseUrl: databaseUrl || undefined, dataDir: auditDir, sandbox: true, adminToken: ADMIN_TOKEN };
      const tally = (await openTally(config, pino({ level: 'silent' }))).tally;
      await tally.start({ runProjections: false });
      return tally;
    }

    /**
     * Runs `fn` with the store open to the test (audit, sql). On the embedded store the server stops
     * (SIGTERM: it drains, commits its projections and lets go of the store) and starts again after.
     */
    async function offline<T>(fn: () => Promise<T>): Promise<T> {
      if (store === 'postgres') return fn();
      await server.stop();
      audit = await openAudit();
      try {
        return await fn();
      } finally {
        await audit.close();
        audit = undefined;
        await server.start();
      }
    }

    after(async () => {
      // Always: the child must not outlive the test, whatever happened.
      stopped = true;
      await server?.kill();
      await audit?.close();
      for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
    });

    const partnerOf = (who: number) => partners[PARTNER_OF[who] as number] as PartnerCredentials;
    const bearer = (who: number) => (customers[who] as Customer).bearer;

    async function send(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown): Promise<Answer | null> {
      stats.requests++;
      stats.inFlight++;
      try {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { 'Content-Type': 'application/json', ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        let parsed: Answer['body'];
        try {
          parsed = text ? JSON.parse(text) : {};
        } catch {
          parsed = { text };
        }
        return { status: res.status, body: parsed };
      } catch {
        // Connection refused, reset or cut mid-answer: the request's effect is unknown.
        stats.cut++;
        return null;
      } finally {
        stats.inFlight--;
      }
    }

    /** An idempotent call, repeated until it gets a definite answer (the server may be down meanwhile). */
    async function untilDefinite(what: string, attempt: () => Promise<Answer | null>, retryable: (a: Answer) => boolean): Promise<Answer> {
      const deadline = Date.now() + RETRY_DEADLINE_MS;
      for (let n = 0; ; n++) {
        const answer = await attempt();
        if (answer && !retryable(answer)) {
          if (n > 0) stats.retried++;
          return answer;
        }
        const reason = answer ? String(answer.status) : 'cut';
        retryReasons.set(reason, (retryReasons.get(reason) ?? 0) + 1);
        if (stopped) throw new Error(`${what}: the test is over`);
        if (Date.now() > deadline) {
          throw new Error(
            `${what}: no definite answer in ${RETRY_DEADLINE_MS} ms; last ${answer ? `${answer.status} ${JSON.stringify(answer.body)}` : 'a cut connection'}`,
          );
        }
        await sleep(100 + (n % 4) * 50);
      }
    }

    /** Sandbox calls: 5xx (the webhook was not delivered) and 404 (a read model still catching up after a restart) are retried. */
    const sandboxRetryable = (a: Answer) => a.status >= 500 || a.status === 404 || a.status === 429;
    /** A keyed transfer or deposit: 5xx, 429 and "still running" (a copy cut by the crash may be) are retried. */
    const keyedRetryable = (a: Answer) => a.status >= 500 || a.status === 429 || (a.status === 400 && a.body.error === 'Duplicate request in progress');
    /** A payout's 502 is its definite answer (refused by the provider, funds returned); other 5xx (503: provider or store out of reach) are retried. */
    const payoutRetryable = (a: Answer) => (a.status >= 500 && a.status !== 502) || a.status === 429;
    const REFUSAL = /^(Insufficient balance in account \d+|Daily transaction limit exceeded|Amount exceeds maximum transaction amount of 10000)$/;

    async function decideDeposit(rng: () => number, op: DepositOp): Promise<void> {
      op.decision = rng() < 0.85 ? 'confirm' : 'fail';
      const path = `/sandbox/v1/deposits/${op.uuid}/${op.decision}`;
      const once = () => untilDefinite(`${op.decision} deposit ${op.uuid}`, () => send('POST', path, partnerOf(op.who).headers, {}), sandboxRetryable);
      // Sometimes the provider reports twice at once, and sometimes again later.
      const answers = await Promise.all(Array.from({ length: rng() < 0.15 ? 2 : 1 }, once));
      if (rng() < 0.2) answers.push(await once());
      for (const a of answers) if (a.status !== 202) throw new Error(`${op.decision} deposit ${op.uuid} answered ${a.status} ${JSON.stringify(a.body)}`);
      op.decided = true;
    }

    async function depositFlow(rng: () => number, who: number): Promise<void> {
      const op: DepositOp = {
        description: `crash deposit ${SEED}.${sequence++}`,
        who,
        amount: randomAmount(rng, 20, 400, 8),
        created: 'unknown',
        decided: false,
      };
      book.deposits.push(op);
      const body = {
        toAccountId: (customers[who] as Customer).accountId,
        amount: op.amount,
        currency: 'USDC',
        provider: 'mock',
        description: op.description,
        metadata: PAYER,
      };
      if (rng() < 0.5) {
        // With an idempotency key: retried until definite, so it is always known, and made once (checked after each cycle).
        const headers = { ...bearer(who), 'x-idempotency-key': randomUUID() };
        const post = () => untilDefinite(`deposit ${op.description}`, () => send('POST', '/api/v1/transactions/deposit', headers, body), keyedRetryable);
        const first = await post();
        if (first.status !== 201) throw new Error(`deposit ${op.description} answered ${first.status} ${JSON.stringify(first.body)}`);
        if (rng() < 0.25) {
          const again = await post();
          if (again.status !== 201 || JSON.stringify(again.body) !== JSON.stringify(first.body))
            throw new Error(`deposit ${op.description} retried answered ${again.status} ${JSON.stringify(again.body)}, expected ${JSON.stringify(first.body)}`);
        }
        op.uuid = String(first.body.transactionId);
        op.created = 'yes';
        await decideDeposit(rng, op);
        return;
      }
      const a = await send('POST', '/api/v1/transactions/deposit', bearer(who), body);
      // Without a key: a cut request is left 'unknown' and looked up by its description after recovery.
      if (!a || a.status >= 500) return;
      if (a.status !== 201) throw new Error(`deposit answered ${a.status} ${JSON.stringify(a.body)}`);
      op.uuid = String(a.body.transactionId);
      op.created = 'yes';
      await decideDeposit(rng, op);
    }

    async function transferFlow(rng: () => number, from: number): Promise<void> {
      const peers = PARTNER_OF.map((p, i) => (p === PARTNER_OF[from] && i !== from ? i : -1)).filter((i) => i >= 0);
      const to = peers[Math.floor(rng() * peers.length)] as number;
      const op: TransferOp = { description: `crash transfer ${SEED}.${sequence++}`, from, to, amount: randomAmount(rng, 0.01, 40, 8), outcome: 'unknown' };
      book.transfers.push(op);
      const body = { toAccountId: (customers[to] as Customer).accountId, amount: op.amount, description: op.description };
      const settle = (a: Answer) => {
        if (a.status === 201 && a.body.status === 'COMPLETED') op.outcome = 'done';
        else if (a.status === 400 && REFUSAL.test(String(a.body.error))) op.outcome = 'refused';
        else throw new Error(`transfer ${op.description} answered ${a.status} ${JSON.stringify(a.body)}`);
      };
      if (rng() < 0.5) {
        // With an idempotency key: retried until definite, so its fate is always known, and exactly once.
        const headers = { ...bearer(from), 'x-idempotency-key': randomUUID() };
        const post = () => untilDefinite(`transfer ${op.description}`, () => send('POST', '/api/v1/transactions/transfer', headers, body), keyedRetryable);
        const first = await post();
        settle(first);
        if (op.outcome === 'done' && rng() < 0.25) {
          const again = await post();
          if (again.status !== 201 || JSON.stringify(again.body) !== JSON.stringify(first.body))
            throw new Error(
              `transfer ${op.description} retried answered ${again.status} ${JSON.stringify(again.body)}, expected ${JSON.stringify(first.body)}`,
            );
        }
        return;
      }
      // Without a key: a cut request is left 'unknown' and looked up by its description after recovery.
      const a = await send('POST', '/api/v1/transactions/transfer', bearer(from), body);
      if (!a || a.status >= 500) return;
      settle(a);
    }

    async function payoutFlow(rng: () => number, who: number): Promise<void> {
      const transactionId = randomUUID();
      const cop = randomAmount(rng, 1_000, 160_000, 2);
      const body = {
        transactionId,
        amount: cop,
        asset: 'COP',
        provider: 'mock',
        source: { metadata: { fundingId: `crash-${transactionId.slice(0, 8)}` } },
        destination: PAYOUT_DESTINATION,
      };
      const op: PayoutOp = { transactionId, who, cop, debit: copToUsdcDebit(cop), body, decided: false };
      book.payouts.push(op);
      const post = () => untilDefinite(`payout ${transactionId}`, () => send('POST', '/api/v1/user/payout', bearer(who), body), payoutRetryable);
      // Sometimes two copies of the request race (a client retrying on its own timeout).
      const answers = await Promise.all(Array.from({ length: rng() < 0.2 ? 2 : 1 }, post));
      const first = answers[0] as Answer;
      // The same answer: its status and body, each error body with a requestId of its own.
      const sameAnswer = (a: Answer) =>
        a.status === first.status && JSON.stringify({ ...a.body, requestId: 0 }) === JSON.stringify({ ...first.body, requestId: 0 });
      for (const a of answers) {
        if (!sameAnswer(a)) {
          throw new Error(`payout ${transactionId}: copies answered differently: ${JSON.stringify(answers)}`);
        }
      }
      op.answer = first;
      if (first.status === 400 && REFUSAL.test(String(first.body.error))) return;
      if (first.status === 502) return;
      if (first.status !== 200 || typeof first.body.paymentId !== 'string')
        throw new Error(`payout ${transactionId} answered ${first.status} ${JSON.stringify(first.body)}`);
      const r = rng();
      if (r < 0.85) {
        op.decision = r < 0.55 ? 'settle' : 'fail';
        const path = `/sandbox/v1/payouts/${first.body.paymentId}/${op.decision}`;
        const decided = await untilDefinite(`${op.decision} payout ${transactionId}`, () => send('POST', path, partnerOf(who).headers, {}), sandboxRetryable);
        if (decided.status !== 202) throw new Error(`${op.decision} payout ${transactionId} answered ${decided.status} ${JSON.stringify(decided.body)}`);
        op.decided = true;
      }
      if (rng() < 0.25) {
        // The client retries the payout later: the first answer, whatever happened since, and no money moves.
        const again = await post();
        if (again.status !== 200 || JSON.stringify(again.body) !== JSON.stringify(first.body)) {
          throw new Error(`payout ${transactionId} retried answered ${again.status} ${JSON.stringify(again.body)}, expected ${JSON.stringify(first.body)}`);
        }
      }
    }

    /**
     * A card purchase: authorized by the sandbox card network (not keyed: one cut by the crash is found
     * after recovery by its unique merchant name), then mostly cleared (for its amount, less or more) or
     * reversed, retried until definite (a 409 saying it is already so means an earlier cut try did it).
     */
    async function cardFlow(rng: () => number, who: number): Promise<void> {
      const op: CardOp = { merchant: `crash spend ${SEED}.${sequence++}`, who, amount: randomAmount(rng, 1, 60, 2), outcome: 'unknown' };
      book.cards.push(op);
      const body = { amount: op.amount, currency: 'USD', merchantName: op.merchant, merchantCategoryCode: '5411' };
      const a = await send('POST', `/sandbox/v1/cards/${cardIds[who]}/authorizations`, partnerOf(who).headers, body);
      if (!a || a.status >= 500) return;
      const spend = (a.body.data as { id: string; spend: { status: string; declinedReason: string | null } } | undefined) ?? null;
      if (a.status !== 201 || !spend) throw new Error(`authorization ${op.merchant} answered ${a.status} ${JSON.stringify(a.body)}`);
      op.id = spend.id;
      if (spend.spend.status === 'declined') {
        if (!['INSUFFICIENT_FUNDS', 'SPEND_LIMIT_EXCEEDED'].includes(String(spend.spend.declinedReason)))
          throw new Error(`authorization ${op.merchant} declined ${spend.spend.declinedReason}`);
        op.outcome = 'declined';
        return;
      }
      op.outcome = 'pending';
      const r = rng();
      if (r >= 0.85) return;
      const action = r < 0.65 ? 'clear' : 'reverse';
      const cleared = r < 0.4 ? op.amount : r < 0.55 ? dec(op.amount).div(2).toFixed(2) : dec(op.amount).plus('0.5').toFixed();
      const path = `/sandbox/v1/card-transactions/${op.id}/${action}`;
      const settled = await untilDefinite(
        `${action} ${op.merchant}`,
        () => send('POST', path, partnerOf(who).headers, action === 'clear' ? { amount: cleared } : {}),
        sandboxRetryable,
      );
      const done = action === 'clear' ? 'completed' : 'reversed';
      if (settled.status === 400 && /^Insufficient balance in account \d+$/.test(String(settled.body.error))) return;
      if (settled.status !== 200 && !(settled.status === 409 && settled.body.error === `Cannot ${action} a card transaction in status ${done}`))
        throw new Error(`${action} ${op.merchant} answered ${settled.status} ${JSON.stringify(settled.body)}`);
      op.settled = action === 'clear' ? { action, cleared } : { action };
    }

    async function worker(rng: () => number, load: { on: boolean }): Promise<void> {
      while (load.on && !stopped) {
        const who = Math.floor(rng() * CUSTOMERS);
        const r = rng();
        try {
          if (r < 0.25) await depositFlow(rng, who);
          else if (r < 0.5) await transferFlow(rng, who);
          else if (r < 0.75) await payoutFlow(rng, who);
          else await cardFlow(rng, who);
        } catch (error) {
          violations.push(error instanceof Error ? error.message : String(error));
          return;
        }
      }
    }

    /** Until every projection has applied every event of the log (the restarted server waits out the dead one's leases). */
    async function caughtUp(): Promise<number> {
      const started = Date.now();
      const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      for (;;) {
        const a = await send('GET', '/admin/v1/projections', admin);
        const data = (a?.body.data ?? []) as Array<{ name: string; lag: number }>;
        if (a?.status === 200 && data.length > 0 && data.every((p) => p.lag === 0)) return Date.now() - started;
        if (Date.now() - started > RETRY_DEADLINE_MS) throw new Error(`projections did not catch up: ${JSON.stringify(a?.body)}`);
        await sleep(200);
      }
    }

    const sql = <T>(text: string, params: unknown[] = []) => (audit as Tally).sql.query<T>(text, params);

    /** Requests cut by the crash whose effect is unknown: found (by their unique description) or not. */
    async function resolveUnknowns(rng: () => number): Promise<void> {
      const deposits = book.deposits.filter((d) => d.created === 'unknown');
      const transfers = book.transfers.filter((t) => t.outcome === 'unknown');
      const cards = book.cards.filter((c) => c.outcome === 'unknown');
      if (deposits.length + transfers.length + cards.length === 0) return;
      // One look at the store (on the embedded store, with the server stopped): the ledger's and the cards' rows.
      const [rows, spent] = await offline(
        async () =>
          [
            await sql<{ uuid: string; description: string; kind: string; status: string; amount: string; debit: string | null; credit: string }>(
              `SELECT uuid::text, description, kind, status, amount::text, debit_account_id::text AS debit, credit_account_id::text AS credit
           FROM rm_transactions WHERE description = ANY($1::text[])`,
              [[...deposits.map((d) => d.description), ...transfers.map((t) => t.description)]],
            ),
            await sql<{ id: string; merchant_name: string; status: string; amount: string; card_id: string }>(
              `SELECT id::text, merchant_name, status, amount::text, card_id::text FROM rm_card_transactions WHERE merchant_name = ANY($1::text[])`,
              [cards.map((c) => c.merchant)],
            ),
          ] as const,
      );
      const found = new Map(rows.map((r) => [r.description, r]));
      for (const t of transfers) {
        const row = found.get(t.description);
        t.outcome = row ? 'done' : 'absent';
        if (row) {
          expect(row, `transfer ${t.description}`).to.include({
            kind: 'TRANSFER',
            status: 'COMPLETED',
            debit: String((customers[t.from] as Customer).accountId),
          });
          expect(dec(row.amount).eq(t.amount), `amount of transfer ${t.description}`).to.equal(true);
        }
      }
      const spentBy = new Map(spent.map((row) => [row.merchant_name, row]));
      for (const c of cards) {
        const row = spentBy.get(c.merchant);
        c.outcome = row ? (row.status === 'declined' ? 'declined' : 'pending') : 'absent';
        if (!row) continue;
        expect(row, `authorization ${c.merchant}`).to.include({ card_id: cardIds[c.who] });
        expect(['pending', 'declined'], `authorization ${c.merchant}`).to.include(row.status);
        expect(dec(row.amount).eq(c.amount), `amount of authorization ${c.merchant}`).to.equal(true);
        c.id = row.id;
      }
      for (const d of deposits) {
        const row = found.get(d.description);
        d.created = row ? 'yes' : 'absent';
        if (!row) continue;
        expect(row, `deposit ${d.description}`).to.include({ kind: 'DEPOSIT', status: 'PENDING', credit: String((customers[d.who] as Customer).accountId) });
        d.uuid = row.uuid;
        // The client learns of the deposit after the fact and has the provider decide it now.
        await decideDeposit(rng, d);
      }
    }

    /** The clients' books: per customer credits and debits, and per transaction the status the ledger must show. */
    function expectedFromBooks() {
      const credits = customers.map(() => ZERO);
      const debits = customers.map(() => ZERO);
      const add = (list: Dec[], i: number, amount: Dec | string) => {
        list[i] = (list[i] as Dec).plus(amount);
      };
      const statuses = new Map<string, string | null>();
      for (const d of book.deposits) {
        if (!d.uuid) continue;
        if (d.decided && d.decision === 'confirm') add(credits, d.who, d.amount);
        statuses.set(d.uuid, !d.decided ? 'PENDING' : d.decision === 'confirm' ? 'COMPLETED' : 'FAILED');
      }
      for (const t of book.transfers) {
        if (t.outcome !== 'done') continue;
        add(debits, t.from, t.amount);
        add(credits, t.to, t.amount);
      }
      for (const p of book.payouts) {
        const status = p.answer?.status;
        if (status === 400) statuses.set(p.transactionId, null);
        if (status !== 200 && status !== 502) continue;
        add(debits, p.who, p.debit);
        const failed = status === 502 || (p.decided && p.decision === 'fail');
        if (failed) add(credits, p.who, p.debit);
        statuses.set(p.transactionId, failed ? 'FAILED' : p.decided ? 'COMPLETED' : 'PROCESSING');
      }
      for (const c of book.cards) {
        if (!c.id) continue;
        if (c.outcome === 'declined') {
          statuses.set(c.id, null);
          continue;
        }
        // The hold stays in debits once posted; what a clearing or reversal returns is a credit of its own.
        add(debits, c.who, c.amount);
        const settled = c.settled;
        if (settled?.action === 'reverse') add(credits, c.who, c.amount);
        if (settled?.action === 'clear') {
          const difference = dec(settled.cleared).minus(c.amount);
          if (difference.gt(0)) add(debits, c.who, difference);
          else add(credits, c.who, difference.negated());
        }
        statuses.set(c.id, !settled ? 'PENDING' : settled.action === 'clear' ? 'COMPLETED' : 'REVERSED');
      }
      return { credits, debits, statuses };
    }

    /** Queries that list what breaks an invariant: each must return no row. */
    const INVARIANTS: Array<[string, string]> = [
      [
        '(b) one ledger effect per transactionId: a credit, a debit or a posted hold recorded twice',
        `SELECT type, data->>'transactionId' AS transaction_id, count(*)::int AS n FROM es_events
        WHERE type IN ('FundsCredited', 'FundsDebited', 'HoldPosted') GROUP BY 1, 2 HAVING count(*) > 1`,
      ],
      [
        '(b) a transaction created, rejected, accepted or decided twice',
        `SELECT stream_id, type, count(*)::int AS n FROM es_events
        WHERE type IN ('TransactionCreated', 'TransactionRejected', 'PayoutAccepted', 'TransactionStatusChanged') GROUP BY 1, 2 HAVING count(*) > 1`,
      ],
      [
        '(a) an account whose read model differs from the fold of its events',
        `WITH fold AS (
         SELECT (data->>'accountId')::bigint AS account_id,
                coalesce(sum((data->>'amount')::numeric) FILTER (WHERE type = 'FundsCredited'), 0) AS credits,
                coalesce(sum((data->>'amount')::numeric) FILTER (WHERE type = 'FundsDebited'), 0) AS debits,
                coalesce(sum((data->>'amount')::numeric) FILTER (WHERE type = 'FundsDebited' AND (data->>'pending')::boolean), 0)
                  - coalesce(sum((data->>'amount')::numeric) FILTER (WHERE type = 'HoldPosted'), 0) AS pending
           FROM es_events WHERE type IN ('FundsCredited', 'FundsDebited', 'HoldPosted') GROUP BY 1)
       SELECT a.account_id, a.credits, a.debits, a.pending_debits, f.credits AS log_credits, f.debits AS log_debits, f.pending AS log_pending
         FROM rm_accounts a FULL JOIN fold f ON f.account_id = a.account_id
        WHERE a.account_id IS NULL OR a.credits <> coalesce(f.credits, 0) OR a.debits <> coalesce(f.debits, 0) OR a.pending_debits <> coalesce(f.pending, 0)`,
      ],
      [
        '(a) a deposit credited without being completed, or completed without exactly its credit',
        `WITH deposits AS (
         SELECT c.data->>'uuid' AS uuid, (c.data->>'amount')::numeric AS amount, (c.data->>'creditAccountId')::bigint AS account,
                EXISTS (SELECT 1 FROM es_events s WHERE s.stream_id = c.stream_id AND s.type = 'TransactionStatusChanged' AND s.data->>'to' = 'COMPLETED') AS completed
           FROM es_events c WHERE c.type = 'TransactionCreated' AND c.data->>'kind' = 'DEPOSIT'),
       credits AS (
         SELECT data->>'transactionId' AS uuid, (data->>'amount')::numeric AS amount, (data->>'accountId')::bigint AS account
           FROM es_events WHERE type = 'FundsCredited' AND data->>'reason' = 'deposit')
       SELECT d.uuid, d.completed, d.amount, c.uuid AS credited, c.amount AS credited_amount FROM deposits d FULL JOIN credits c ON c.uuid = d.uuid
        WHERE (d.completed AND (c.uuid IS NULL OR c.amount <> d.amount OR c.account <> d.account)) OR (c.uuid IS NOT NULL AND (d.uuid IS NULL OR NOT d.completed))`,
      ],
      [
        '(a) a payout without exactly one hold of its amount on its account, or a hold without a payout',
        `WITH payouts AS (
         SELECT data->>'uuid' AS uuid, (data->>'amount')::numeric AS amount, (data->>'debitAccountId')::bigint AS account
           FROM es_events WHERE type = 'TransactionCreated' AND data->>'kind' = 'PAYOUT'),
       holds AS (
         SELECT data->>'transactionId' AS uuid, (data->>'amount')::numeric AS amount, (data->>'accountId')::bigint AS account, (data->>'pending')::boolean AS pending
           FROM es_events WHERE type = 'FundsDebited' AND data->>'reason' = 'payout')
       SELECT p.uuid, h.uuid AS held FROM payouts p FULL JOIN holds h ON h.uuid = p.uuid
        WHERE p.uuid IS NULL OR h.uuid IS NULL OR h.amount <> p.amount OR h.account <> p.account OR NOT h.pending`,
      ],
      [
        '(a) a settled or failed payout whose hold was not posted, or a posted hold of an open payout',
        `WITH decided AS (
         SELECT stream_id, data->>'uuid' AS uuid FROM es_events WHERE type = 'TransactionStatusChanged' AND data->>'to' IN ('COMPLETED', 'FAILED')
            AND stream_id IN (SELECT stream_id FROM es_events WHERE type = 'TransactionCreated' AND data->>'kind' = 'PAYOUT')),
       posted AS (SELECT data->>'transactionId' AS uuid FROM es_events WHERE type = 'HoldPosted'
                     AND data->>'transactionId' IN (SELECT data->>'uuid' FROM es_events WHERE type = 'TransactionCreated' AND data->>'kind' = 'PAYOUT'))
       SELECT d.uuid, p.uuid AS posted FROM decided d FULL JOIN posted p ON p.uuid = d.uuid WHERE d.uuid IS NULL OR p.uuid IS NULL`,
      ],
      [
        '(a) a failed payout without exactly one REVERSED credit of its amount, or a reversal of a payout that did not fail',
        `WITH failed AS (
         SELECT c.data->>'uuid' AS uuid, (c.data->>'amount')::numeric AS amount, (c.data->>'debitAccountId')::bigint AS account FROM es_events c
          WHERE c.type = 'TransactionCreated' AND c.data->>'kind' = 'PAYOUT'
            AND EXISTS (SELECT 1 FROM es_events s WHERE s.stream_id = c.stream_id AND s.type = 'TransactionStatusChanged' AND s.data->>'to' = 'FAILED')),
       reversals AS (
         SELECT r.data->'details'->>'reverses' AS uuid, (f.data->>'amount')::numeric AS amount, (f.data->>'accountId')::bigint AS account FROM es_events r
           JOIN es_events f ON f.type = 'FundsCredited' AND f.data->>'reason' = 'payout_reversal' AND f.data->>'transactionId' = r.data->>'uuid'
          WHERE r.type = 'TransactionCreated' AND r.data->>'kind' = 'REVERSAL' AND r.data->>'status' = 'REVERSED'),
       credits AS (SELECT count(*) AS n FROM es_events WHERE type = 'FundsCredited' AND data->>'reason' = 'payout_reversal')
       SELECT f.uuid, r.uuid AS reversed FROM failed f FULL JOIN reversals r ON r.uuid = f.uuid
        WHERE f.uuid IS NULL OR r.uuid IS NULL OR r.amount <> f.amount OR r.account <> f.account
       UNION ALL
       SELECT 'reversal credits', n::text FROM credits WHERE n <> (SELECT count(*) FROM reversals)`,
      ],
      [
        '(a) a transfer whose debit and credit are not one each, of its amount, on its accounts',
        `WITH transfers AS (
         SELECT data->>'uuid' AS uuid, (data->>'amount')::numeric AS amount, (data->>'debitAccountId')::bigint AS source, (data->>'creditAccountId')::bigint AS target
           FROM es_events WHERE type = 'TransactionCreated' AND data->>'kind' = 'TRANSFER'),
       moves AS (
         SELECT data->>'transactionId' AS uuid,
                sum((data->>'amount')::numeric) FILTER (WHERE type = 'FundsDebited') AS debited, min((data->>'accountId')::bigint) FILTER (WHERE type = 'FundsDebited') AS source,
                sum((data->>'amount')::numeric) FILTER (WHERE type = 'FundsCredited') AS credited, min((data->>'accountId')::bigint) FILTER (WHERE type = 'FundsCredited') AS target
           FROM es_events WHERE type IN ('FundsDebited', 'FundsCredited') AND data->>'reason' = 'transfer' GROUP BY 1)
       SELECT t.uuid, m.uuid AS moved FROM transfers t FULL JOIN moves m ON m.uuid = t.uuid
        WHERE t.uuid IS NULL OR m.uuid IS NULL OR m.debited IS DISTINCT FROM t.amount OR m.credited IS DISTINCT FROM t.amount
           OR m.source IS DISTINCT FROM t.source OR m.target IS DISTINCT FROM t.target`,
      ],
      [
        '(b) a payout the provider holds without a ledger payout of its converted amount (money out without a hold)',
        `SELECT p.transaction_id::text, p.amount::text, t.amount::text AS ledger_amount FROM sandbox_payouts p
         LEFT JOIN rm_transactions t ON t.uuid = p.transaction_id AND t.kind = 'PAYOUT'
        WHERE t.uuid IS NULL OR t.amount <> ceil(p.amount / 4000 * 100000000) / 100000000`,
      ],
      [
        '(b) the provider and the ledger disagree on a payout (status or payment id)',
        `SELECT t.uuid::text, t.status, t.details->>'paymentId' AS ledger_payment, p.payment_id, p.status AS provider_status FROM rm_transactions t
         LEFT JOIN sandbox_payouts p ON p.transaction_id = t.uuid
        WHERE t.kind = 'PAYOUT' AND NOT (
              (t.status = 'PROCESSING' AND p.status = 'processing' AND p.payment_id = t.details->>'paymentId')
           OR (t.status = 'COMPLETED' AND p.status = 'settled' AND p.payment_id = t.details->>'paymentId')
           OR (t.status = 'FAILED' AND (p.status = 'failed' AND p.payment_id = t.details->>'paymentId' OR p.payment_id IS NULL AND t.details->>'paymentId' IS NULL)))`,
      ],
      [
        '(b) the provider and the ledger disagree on a deposit',
        `SELECT t.uuid::text, t.status, p.status AS provider_status FROM rm_transactions t LEFT JOIN sandbox_payments p ON p.transaction_id = t.uuid
        WHERE t.kind = 'DEPOSIT' AND NOT ((t.status = 'PENDING' AND p.status = 'pending') OR (t.status = 'COMPLETED' AND p.status = 'confirmed')
                                        OR (t.status = 'FAILED' AND p.status = 'failed'))`,
      ],
    ];

    /** Work a crash split between two processes (what the retries had to finish), for the cycle's log line. */
    async function crossedTheCrash(killedAt: string): Promise<string> {
      const [row] = await sql<{ handed: number; credited: number; decided: number }>(
        `SELECT
         (SELECT count(*)::int FROM es_events h JOIN es_events a ON a.stream_id = 'txn-' || (h.data->>'transactionId') AND a.type = 'PayoutAccepted'
           WHERE h.type = 'FundsDebited' AND h.data->>'reason' = 'payout' AND h.recorded_at < $1 AND a.recorded_at > $1) AS handed,
         (SELECT count(*)::int FROM sandbox_payments p JOIN es_events c ON c.type = 'FundsCredited' AND c.data->>'transactionId' = p.transaction_id::text
           WHERE p.decided_at < $1 AND c.recorded_at > $1) AS credited,
         (SELECT count(*)::int FROM sandbox_payouts p JOIN es_events c ON c.type = 'HoldPosted' AND c.data->>'transactionId' = p.transaction_id::text
           WHERE p.decided_at < $1 AND c.recorded_at > $1) AS decided`,
        [killedAt],
      );
      return `${row?.handed} payouts held before and handed to the provider after, ${row?.credited} deposits confirmed at the provider before and credited after, ${row?.decided} payouts decided at the provider before and posted after`;
    }

    /** Checks the API, then the store (offline), after a cycle; returns what crossed the crash. */
    async function checkAfterRecovery(cycle: number, killedAt: string): Promise<string> {
      const what = `cycle ${cycle} (CRASH_SEED=${SEED})`;
      expect(violations, `${what}: answers the clients saw`).to.deep.equal([]);
      const { credits, debits } = expectedFromBooks();

      // (a) Through the API: every customer's balance is exactly what the clients' books say.
      let apiNet = ZERO;
      for (let who = 0; who < CUSTOMERS; who++) {
        const a = await send('GET', '/api/v1/user/accounts', bearer(who));
        const items = a?.body.items as Array<{ credits: string; debits: string }> | undefined;
        expect(a?.status, `${what}: accounts of customer ${who}`).to.equal(200);
        expect(items?.[0], `${what}: balance of customer ${who}`).to.include({ credits: fixed8(credits[who] as Dec), debits: fixed8(debits[who] as Dec) });
        apiNet = apiNet.plus(items?.[0]?.credits ?? 'NaN').minus(items?.[0]?.debits ?? 'NaN');
      }
      return offline(async () => {
        await checkTheStore(what, apiNet);
        return crossedTheCrash(killedAt);
      });
    }

    /** The read models, the event log, the provider's records and the audit, against the clients' books. */
    async function checkTheStore(what: string, apiNet: Dec): Promise<void> {
      const { credits, debits, statuses } = expectedFromBooks();
      // ... and every deposit and payout key the clients used has the status they caused (a refused payout has no transaction).
      const rows = await sql<{ uuid: string; status: string }>(`SELECT uuid::text, status FROM rm_transactions WHERE uuid = ANY($1::uuid[])`, [
        [...statuses.keys()],
      ]);
      const actual = new Map<string, string | null>([...statuses.keys()].map((k) => [k, null]));
      for (const r of rows) actual.set(r.uuid, r.status);
      expect(Object.fromEntries(actual), `${what}: statuses of the clients' deposits and payouts`).to.deep.equal(Object.fromEntries(statuses));
      // ... and each deposit or transfer a client asked for (its description is unique) was made at most once, retries and all.
      const twice = await sql<{ description: string; n: number }>(
        `SELECT description, count(*)::int AS n FROM rm_transactions WHERE kind IN ('DEPOSIT', 'TRANSFER') AND description LIKE 'crash %' GROUP BY description HAVING count(*) > 1`,
      );
      expect(twice, `${what}: deposits and transfers made more than once`).to.deep.equal([]);

      // (a) Conservation over the read models: what is in the accounts is what came in minus what went out.
      const [accounts] = await sql<{ net: string; pending: string }>(
        `SELECT coalesce(sum(credits - debits), 0)::text AS net, coalesce(sum(pending_debits), 0)::text AS pending FROM rm_accounts`,
      );
      const totals = await sql<{ kind: string; status: string; total: string; n: number }>(
        // A card's returns (the rest of a clearing for less, a reversal) are REVERSALs of their own, told apart by their card.
        `SELECT CASE WHEN kind = 'REVERSAL' AND details ? 'cardId' THEN 'CARD_RETURN' ELSE kind END AS kind, status, sum(amount)::text AS total, count(*)::int AS n
         FROM rm_transactions GROUP BY 1, 2`,
      );
      const total = (kind: string, ...inStatus: string[]) =>
        totals.filter((t) => t.kind === kind && inStatus.includes(t.status)).reduce((sum, t) => sum.plus(t.total), ZERO);
      const count = (kind: string, status: string) => totals.find((t) => t.kind === kind && t.status === status)?.n ?? 0;
      const cameIn = total('DEPOSIT', 'COMPLETED');
      const wentOut = total('PAYOUT', 'PENDING', 'PROCESSING', 'COMPLETED')
        .plus(total('CARD', 'PENDING', 'COMPLETED', 'REVERSED'))
        .minus(total('CARD_RETURN', 'REVERSED'));
      expect(fixed8(dec(accounts?.net ?? 'NaN')), `${what}: sum of balances = completed deposits - payouts not failed - card spends not returned`).to.equal(
        fixed8(cameIn.minus(wentOut)),
      );
      expect(fixed8(apiNet), `${what}: sum of balances through the API`).to.equal(fixed8(cameIn.minus(wentOut)));
      expect(fixed8(dec(accounts?.pending ?? 'NaN')), `${what}: held = open payouts and pending card spends`).to.equal(
        fixed8(total('PAYOUT', 'PENDING', 'PROCESSING').plus(total('CARD', 'PENDING'))),
      );
      expect(fixed8(total('REVERSAL', 'REVERSED')), `${what}: reversed = failed payouts`).to.equal(fixed8(total('PAYOUT', 'FAILED')));
      expect(count('REVERSAL', 'REVERSED'), `${what}: one reversal per failed payout`).to.equal(count('PAYOUT', 'FAILED'));
      expect(count('PAYOUT', 'PENDING'), `${what}: no payout held but never handed to the provider`).to.equal(0);
      // The clients' own totals say the same.
      const booked = credits.reduce((s, c) => s.plus(c), ZERO).minus(debits.reduce((s, d) => s.plus(d), ZERO));
      expect(fixed8(booked), `${what}: the clients' books`).to.equal(fixed8(cameIn.minus(wentOut)));

      // (a), (b) The event log, folded directly, and the provider's own records.
      for (const [name, query] of INVARIANTS) expect(await sql(query), `${what}: ${name}`).to.deep.equal([]);

      // (c), (d) The audit: every read model equals the fold of the log, every hash chain verifies.
      for (const check of auditChecks) {
        const result = await check.run(audit as Tally);
        expect(result.findings, `${what}: audit check "${check.name}" (${result.checked})`).to.deep.equal([]);
      }
    }

    it(`conserves money, moves it once per key, and keeps read models and hash chains equal to the log across ${CYCLES} SIGKILLs under load`, async function () {
      this.timeout(CYCLES * 90_000 + 60_000);
      const master = prng(SEED);
      try {
        for (let cycle = 1; cycle <= CYCLES; cycle++) {
          const load = { on: true };
          const before = { ...stats };
          retryReasons.clear();
          const workers = Array.from({ length: WORKERS }, (_w, i) => worker(prng(SEED * 1_000 + cycle * 100 + i), load));
          const killAfter = 600 + Math.floor(master() * 2_400);
          await sleep(killAfter);
          const inFlight = stats.inFlight;
          const killedAt = new Date().toISOString();
          await server.kill();
          load.on = false;
          const restartMs = await server.start();
          const restarted = Date.now();
          // The clients finish what they were doing, retrying what the crash cut.
          await Promise.all(workers);
          const drainMs = Date.now() - restarted;
          const catchUpMs = await caughtUp();
          await resolveUnknowns(prng(SEED + cycle));
          await caughtUp();
          const spanned = await checkAfterRecovery(cycle, killedAt);
          process.stdout.write(
            `      cycle ${cycle}: SIGKILL after ${killAfter} ms with ${inFlight} requests in flight; restart ${restartMs} ms; ` +
              `clients done ${drainMs} ms after restart, projections ${catchUpMs} ms later; ${stats.requests - before.requests} requests, ${stats.cut - before.cut} cut, ` +
              `${stats.retried - before.retried} answered after retries (retried on: ${[...retryReasons].map(([k, n]) => `${k} x${n}`).join(', ')}); ` +
              `across the crash: ${spanned}\n`,
          );
        }
        // The operator's audit, as cron would run it: exit code 0 (the embedded store is the CLI's alone).
        if (store === 'embedded') await server.stop();
        const cli = await new Promise<{ code: number | null; out: string }>((resolve) => {
          const child = spawn(process.execPath, ['bin/tally.js', 'audit', 'verify'], {
            cwd: join(__dirname, '..', '..'),
            env: {
              PATH: process.env.PATH ?? '',
              HOME: process.env.HOME ?? '/tmp',
              DATABASE_URL: databaseUrl,
              DATA_DIR: store === 'postgres' ? (tempDirs[1] ?? tmpdir()) : serverDir,
              SANDBOX: 'on',
              TALLY_KEYS: serverKeys,
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let out = '';
          child.stdout.on('data', (c: Buffer) => {
            out += c.toString();
          });
          child.stderr.on('data', (c: Buffer) => {
            out += c.toString();
          });
          child.on('exit', (code) => resolve({ code, out }));
        });
        expect(cli.code, `tally audit verify:\n${cli.out}`).to.equal(0);
        expect(cli.out).to.match(/Audit passed/);
        const settled = book.payouts.filter((p) => p.decision === 'settle' && p.decided).length;
        expect(settled, 'payouts settled during the test').to.be.greaterThan(0);
        expect(book.cards.filter((c) => c.settled?.action === 'clear').length, 'card spends cleared during the test').to.be.greaterThan(0);
      } catch (error) {
        process.stderr.write(
          `\ncrash test failed: reproduce with CRASH_SEED=${SEED} CRASH_CYCLES=${CYCLES} CRASH_WORKERS=${WORKERS}\nserver output:\n${server.tail()}\n`,
        );
        throw error;
      }
    });
  });
