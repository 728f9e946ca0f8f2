import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pino from 'pino';
import supertest from 'supertest';
import { openTally } from '../../src/compose/open';
import type { Tally } from '../../src/compose/tally';
import { loadConfig } from '../../src/config';
import { ADMIN_TOKEN, type PartnerCredentials } from '../support/app';
import { type Customer, customer, fund, PAYER } from '../support/ledger';
import { sharedCluster } from '../support/postgres';
import { tempDir } from '../support/temp';
import { prng } from '../ledger/support/money';
import { freePort, ServerProcess, testServerEnv } from '../ledger/support/server-process';
import { type Receiver, subscribedPartner } from './support';

/**
 * Crash test of notifications: the real server as a child process, a real receiver per partner, a
 * burst of deposits (confirmed or failed) and transfers from concurrent clients, a SIGKILL of the
 * server at a seeded moment of the burst, a restart on the same database while the clients go on.
 * Then every event of the log that should notify (a transfer made, a deposit completed or failed)
 * has a delivery to its partner (found by event id) that its partner's receiver got.
 * WEBHOOK_CRASH_SEED and WEBHOOK_CRASH_WORKERS tune it.
 */
const SEED = Number(process.env.WEBHOOK_CRASH_SEED ?? 4242);
const WORKERS = Number(process.env.WEBHOOK_CRASH_WORKERS ?? 6);
const CUSTOMERS_PER_PARTNER = 3;
/** Past the dead node's leases (outbox 10 s, a partner's dispatch 30 s), with room for the backlog. */
const RECOVERY_DEADLINE_MS = 120_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Expected {
  eventId: string;
  partnerId: string;
  type: string;
}

describe('partner notifications survive a SIGKILL of the server during a burst of deposits and transfers (real Postgres, real receivers)', function () {
  this.timeout(300_000);
  let server: ServerProcess;
  let audit: Tally | undefined;
  let databaseUrl: string;
  const receivers = new Map<string, Receiver>();
  const partners: PartnerCredentials[] = [];
  const customers: Customer[][] = [];
  const stats = { requests: 0, cut: 0 };
  let stopped = false;

  before(async () => {
    databaseUrl = await (await sharedCluster()).freshDatabase();
    const dir = tempDir('tally-webhook-crash-');
    server = new ServerProcess(await freePort(), testServerEnv(databaseUrl, dir, { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn' }));
    await server.start();
    const http = supertest.agent(server.url);
    for (const name of ['Crash hooks Acme', 'Crash hooks Globex']) {
      const { partner, receiver } = await subscribedPartner(http, name, ['deposit.completed', 'deposit.failed', 'transfer.completed']);
      receivers.set(partner.id, receiver);
      partners.push(partner);
      const own: Customer[] = [];
      for (let i = 0; i < CUSTOMERS_PER_PARTNER; i++) {
        const who = await customer(http, partner);
        await fund(http, partner, who, '1000');
        own.push(who);
      }
      customers.push(own);
    }
  });

  after(async () => {
    stopped = true;
    await server?.kill();
    await audit?.close();
    for (const r of receivers.values()) await r.close();
  });

  /** One request; null when it was cut (the server died or is down). */
  async function send(path: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: Record<string, unknown> } | null> {
    stats.requests++;
    try {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : {} };
    } catch {
      stats.cut++;
      return null;
    }
  }

  /** A client: deposits (decided by the mock provider) and transfers inside its partner, until stopped; cut requests are not retried. */
  async function client(rng: () => number): Promise<void> {
    while (!stopped) {
      const p = Math.floor(rng() * partners.length);
      const partner = partners[p] as PartnerCredentials;
      const own = customers[p] as Customer[];
      const from = own[Math.floor(rng() * own.length)] as Customer;
      const to = own.find((c) => c !== from) as Customer;
      let answer: Awaited<ReturnType<typeof send>>;
      if (rng() < 0.5) {
        answer = await send('/api/v1/transactions/deposit', from.bearer, {
          toAccountId: from.accountId,
          amount: '5',
          currency: 'USDC',
          provider: 'mock',
          description: `burst ${randomUUID()}`,
          metadata: PAYER,
        });
        const uuid = answer?.status === 201 ? String(answer.body.transactionId) : null;
        if (uuid) answer = await send(`/sandbox/v1/deposits/${uuid}/${rng() < 0.8 ? 'confirm' : 'fail'}`, partner.headers, {});
      } else answer = await send('/api/v1/transactions/transfer', from.bearer, { toAccountId: to.accountId, amount: '0.5', description: 'burst' });
      if (!answer || answer.status >= 500) await sleep(50);
    }
  }

  /** What the log says must be notified: every transfer made, every deposit that completed or failed. */
  async function expectedNotifications(tally: Tally): Promise<Expected[]> {
    const deposits = new Map<string, string>();
    const expected: Expected[] = [];
    let from: string | undefined;
    for (;;) {
      const page = await tally.store.readAll({
        fromPosition: from,
        filter: { eventTypes: ['TransactionCreated', 'TransactionStatusChanged'] },
        maxCount: 1000,
      });
      for (const e of page) {
        const d = e.data as { uuid: string; kind?: string; partnerId?: string; from?: string; to?: string };
        if (e.type === 'TransactionCreated' && d.kind === 'DEPOSIT') deposits.set(d.uuid, String(d.partnerId));
        if (e.type === 'TransactionCreated' && d.kind === 'TRANSFER')
          expected.push({ eventId: e.id, partnerId: String(d.partnerId), type: 'transfer.completed' });
        const partnerId = deposits.get(d.uuid);
        if (e.type === 'TransactionStatusChanged' && partnerId && d.from !== d.to && (d.to === 'COMPLETED' || d.to === 'FAILED'))
          expected.push({ eventId: e.id, partnerId, type: d.to === 'COMPLETED' ? 'deposit.completed' : 'deposit.failed' });
      }
      if (page.length < 1000) return expected;
      from = page[page.length - 1]?.position;
    }
  }

  /** The expected notifications not yet received by their partner's receiver (by the delivery made for their event). */
  async function missing(tally: Tally, expected: Expected[]): Promise<Expected[]> {
    const rows = await tally.sql.query<{ id: string; event_id: string; partner_id: string; type: string }>(
      'SELECT id::text, event_id, partner_id::text, type FROM webhook_deliveries',
    );
    const deliveries = new Map(rows.map((r) => [`${r.event_id} ${r.partner_id} ${r.type}`, r.id]));
    const received = new Set([...receivers.values()].flatMap((r) => r.received.map((x) => x.body.id)));
    return expected.filter((x) => {
      const id = deliveries.get(`${x.eventId} ${x.partnerId} ${x.type}`);
      return id === undefined || !received.has(id);
    });
  }

  it('loses no notification: every event that should notify has a delivery its partner received', async () => {
    const rng = prng(SEED);
    const clients = Array.from({ length: WORKERS }, (_, i) => client(prng(SEED * 31 + i)));
    await sleep(1_000 + Math.floor(rng() * 2_000));
    const receivedBeforeKill = [...receivers.values()].reduce((n, r) => n + r.received.length, 0);
    await server.kill();
    await sleep(300);
    await server.start();
    await sleep(1_500);
    stopped = true;
    await Promise.all(clients);

    const config = {
      ...loadConfig({}),
      databaseUrl,
      dataDir: tempDir('tally-webhook-crash-audit-'),
      sandbox: true,
      adminToken: ADMIN_TOKEN,
    };
    audit = (await openTally(config, pino({ level: 'silent' }))).tally;
    await audit.start({ runProjections: false });
    const expected = await expectedNotifications(audit);
    expect(expected.length, 'notifying events in the log').to.be.above(50);
    const deadline = Date.now() + RECOVERY_DEADLINE_MS;
    let left = await missing(audit, expected);
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(500);
      left = await missing(audit, expected);
    }
    expect(left, `not received after the restart (of ${expected.length}): ${JSON.stringify(left.slice(0, 5))}`).to.deep.equal([]);
    // Each partner's receiver got only its own partner's notifications.
    for (const [partnerId, receiver] of receivers) {
      const own = new Set(expected.filter((x) => x.partnerId === partnerId).map((x) => x.type));
      for (const r of receiver.received) expect(own.has(r.body.type), r.body.type).to.equal(true);
    }
    const received = [...receivers.values()].reduce((n, r) => n + r.received.length, 0);
    console.log(
      `      ${expected.length} notifying events; ${receivedBeforeKill} received before the kill, ${received} in all (redeliveries included); ${stats.requests} requests, ${stats.cut} cut`,
    );
  });
});
