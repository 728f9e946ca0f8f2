import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { postNotification } from '../../src/providers/notifications/sender';
import { createPartner, lastWrittenPosition, startTestApp } from '../support/app';
import { customer, fund, PAYER, PAYOUT_DESTINATION } from '../support/ledger';
import { documentedBodies, subscribedPartner, type Received, Receiver, verifiesStandardWebhook, verifiesXWebhookSignature } from './support';

const HOUR_MS = 3_600_000;

describe('partner notifications delivered to a real receiver', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let clock: number;
  const receivers: Receiver[] = [];

  before(async () => {
    app = await startTestApp();
    clock = Date.now();
    Object.assign(app.tally.notifications.dispatcher.options, { now: () => clock, pollMs: 50 });
  });
  beforeEach(() => {
    clock = Date.now();
  });
  after(async () => {
    await app.close();
    for (const r of receivers) await r.close();
  });

  const subscribed = async (name: string, events?: string[]) => {
    const made = await subscribedPartner(app.http, name, events);
    receivers.push(made.receiver);
    return made;
  };

  const deliveryRow = async (id: string) =>
    (
      await app.tally.sql.query<{ status: string; attempts: number; first_attempt_at: Date; next_attempt_at: Date; last_attempt_at: Date }>(
        'SELECT status, attempts, first_attempt_at, next_attempt_at, last_attempt_at FROM webhook_deliveries WHERE id = $1',
        [id],
      )
    )[0];

  async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  const types = (all: Received[]) => new Set(all.map((r) => r.body.type));

  it('delivers every type of the ledger and identity flows, signed both ways, with the data the API reads', async () => {
    const { partner, receiver, secret } = await subscribed('All types');
    const ada = await customer(app.http, partner);
    const bob = await customer(app.http, partner);
    const deposit = await fund(app.http, partner, ada, '100');
    const failing = await app.http
      .post('/api/v1/transactions/deposit')
      .set(ada.bearer)
      .send({ toAccountId: ada.accountId, amount: 7, currency: 'USDC', provider: 'mock', description: 'declined', metadata: PAYER });
    expect((await app.http.post(`/sandbox/v1/deposits/${failing.body.transactionId}/fail`).set(partner.headers).send()).status).to.equal(202);
    const transfer = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .send({ toAccountId: bob.accountId, amount: '5', description: 'to bob' });
    expect(transfer.status).to.equal(201);
    const payoutId = randomUUID();
    const payout = await app.http
      .post('/api/v1/user/payout')
      .set(ada.bearer)
      .send({ transactionId: payoutId, amount: 40000, asset: 'COP', provider: 'mock', source: { metadata: { f: 1 } }, destination: PAYOUT_DESTINATION });
    expect(payout.status).to.equal(200);
    expect((await app.http.post(`/sandbox/v1/payouts/${payout.body.paymentId}/settle`).set(partner.headers).send()).status).to.equal(202);

    const expected = ['user.status.updated', 'kyc.status.updated', 'deposit.completed', 'deposit.failed', 'transfer.completed', 'payout.updated'];
    const all = await receiver.waitFor((got) => expected.every((t) => types(got).has(t)) && got.filter((r) => r.body.type === 'payout.updated').length >= 2);
    for (const r of all) {
      expect(Object.keys(r.body).sort(), r.body.type).to.deep.equal(['createdAt', 'data', 'id', 'sequence', 'type']);
      expect(r.headers['content-type']).to.equal('application/json');
      expect(verifiesXWebhookSignature(r, secret), `X-Webhook-Signature of ${r.body.type}`).to.equal(true);
      expect(verifiesStandardWebhook(r, secret, Math.floor(clock / 1000)), `Standard Webhooks signature of ${r.body.type}`).to.equal(true);
      expect(r.headers['webhook-id']).to.equal(r.body.id);
    }
    expect(new Set(all.map((r) => r.body.sequence)).size).to.equal(all.length);

    // Each body matches its type's schema in the served document's webhooks section, with no undocumented field.
    const check = await documentedBodies(app.http);
    for (const r of all) expect(check(r), r.body.type).to.equal(null);

    const byType = (type: string) => all.filter((r) => r.body.type === type);
    const completed = byType('deposit.completed').find((r) => r.body.data.uuid === deposit);
    expect(completed?.body.data).to.deep.equal((await app.http.get(`/api/v1/transactions/${deposit}`).set(ada.bearer)).body);
    const failed = byType('deposit.failed')[0];
    expect(failed?.body.data).to.deep.equal((await app.http.get(`/api/v1/transactions/${failing.body.transactionId}`).set(ada.bearer)).body);
    const moved = byType('transfer.completed')[0];
    expect(moved?.body.data).to.deep.equal((await app.http.get(`/api/v1/transactions/${transfer.body.uuid}`).set(ada.bearer)).body);
    expect(byType('payout.updated').map((r) => r.body.data.status)).to.include.members(['PROCESSING', 'COMPLETED']);
    expect(byType('payout.updated').every((r) => r.body.data.uuid === payoutId)).to.equal(true);
    const lastUser = byType('user.status.updated').filter((r) => (r.body.data.user as { id: string }).id === ada.id);
    expect(lastUser.map((r) => (r.body.data.user as { status: string }).status)).to.include('active');
    const read = await app.http.get(`/api/v1/partner/users/${ada.id}`).set(partner.headers);
    expect(lastUser.find((r) => (r.body.data.user as { status: string }).status === 'active')?.body.data.user).to.deep.equal(read.body.data.user);
    const kyc = byType('kyc.status.updated').find((r) => (r.body.data.kyc as { status: string }).status === 'approved');
    expect(kyc?.body.data).to.include({ userId: ada.id });
  });

  it('sends only the types a partner chose, and nothing of other partners', async () => {
    const { partner, receiver } = await subscribed('Deposits only', ['deposit.completed']);
    const who = await customer(app.http, partner);
    const deposit = await fund(app.http, partner, who, '3');
    await receiver.waitFor((got) => got.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.map((r) => [r.body.type, r.body.data.uuid])).to.deep.equal([['deposit.completed', deposit]]);
  });

  it('makes the events of a partner with no endpoint (the events API lists them) and delivers none of them, while another partner listens', async () => {
    const { partner: listening, receiver } = await subscribed('Listening', ['deposit.completed']);
    const silent = await createPartner(app.http, 'Not listening');
    const tally = app.tally;
    // The outbox waits while both partners act, so that it takes their events in the same batches.
    await tally.reactors.stop();
    try {
      const ada = await customer(app.http, silent);
      const bob = await customer(app.http, silent);
      const deposit = await fund(app.http, silent, ada, '10');
      const transfer = await app.http
        .post('/api/v1/transactions/transfer')
        .set(ada.bearer)
        .send({ toAccountId: bob.accountId, amount: '1', description: 'unheard' });
      expect(transfer.status).to.equal(201);
      const cat = await customer(app.http, listening);
      const heard = await fund(app.http, listening, cat, '1');
      tally.reactors.start();
      // The listening partner's deposit comes after all of them in the log: the outbox has passed them.
      await receiver.waitFor((got) => got.some((r) => r.body.data.uuid === heard));
      const events = await app.http.get('/api/v1/partner/events?limit=100').set(silent.headers);
      const made = (events.body.data.items as Array<{ type: string; data: { uuid?: string } }>).map((e) => [e.type, e.data.uuid]);
      expect(made).to.deep.include.members([
        ['deposit.completed', deposit],
        ['transfer.completed', transfer.body.uuid],
      ]);
      const [rows] = await tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM webhook_deliveries WHERE partner_id = $1', [silent.id]);
      expect(rows?.n).to.equal('0');
      expect(receiver.received.map((r) => r.body.data.uuid)).to.deep.equal([heard]);
    } finally {
      tally.reactors.start();
    }
  });

  it('retries a receiver that answered 500 with the same id once the retry wait (under 30 s) has passed', async () => {
    const { partner, receiver, secret } = await subscribed('Flaky', ['deposit.completed']);
    receiver.behaviour = () => (receiver.received.length === 1 ? 500 : 200);
    const who = await customer(app.http, partner);
    await fund(app.http, partner, who, '2');
    const [first] = await receiver.waitFor((got) => got.length === 1);
    const id = first?.body.id ?? '';
    const pending = await until(
      () => deliveryRow(id),
      (row) => row?.attempts === 1,
      'the failed attempt to be recorded',
    );
    expect(pending?.status).to.equal('pending');
    const waitMs = (pending?.next_attempt_at.getTime() ?? 0) - (pending?.first_attempt_at.getTime() ?? 0);
    expect(waitMs).to.be.within(15_000, 30_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(receiver.received).to.have.length(1);
    clock += 30_000;
    app.tally.notifications.dispatcher.wake();
    const again = await receiver.waitFor((got) => got.length === 2);
    expect(again[1]?.body.id).to.equal(id);
    expect(again[1]?.raw).to.equal(first?.raw);
    expect(verifiesXWebhookSignature(again[1] as Received, secret)).to.equal(true);
    const done = await until(
      () => deliveryRow(id),
      (row) => row?.status === 'succeeded',
      'the delivery to succeed',
    );
    expect(done?.attempts).to.equal(2);
    const attempts = await app.tally.sql.query<{ http_status: number }>('SELECT http_status FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt', [
      id,
    ]);
    expect(attempts.map((a) => a.http_status)).to.deep.equal([500, 200]);
  });

  it('gives up on a receiver that never answers 24 hours after the first attempt, and shows the delivery as failed', async () => {
    const options = app.tally.notifications.dispatcher.options;
    const timeoutMs = options.timeoutMs;
    options.timeoutMs = 300;
    try {
      const { partner, receiver } = await subscribed('Silent', ['deposit.completed']);
      receiver.behaviour = () => null;
      const who = await customer(app.http, partner);
      await fund(app.http, partner, who, '1');
      const [first] = await receiver.waitFor((got) => got.length === 1);
      const id = first?.body.id ?? '';
      let row = await until(
        () => deliveryRow(id),
        (r) => r?.attempts === 1,
        'the first attempt',
      );
      const firstAt = row?.first_attempt_at.getTime() ?? 0;
      while (row?.status === 'pending') {
        expect(row.attempts, 'attempts before giving up').to.be.below(30);
        const attempts = row.attempts;
        clock = Math.max(clock, row.next_attempt_at.getTime());
        app.tally.notifications.dispatcher.wake();
        row = await until(
          () => deliveryRow(id),
          (r) => (r?.attempts ?? 0) > attempts,
          `attempt ${attempts + 1}`,
        );
      }
      expect(row?.status).to.equal('failed');
      expect((row?.last_attempt_at.getTime() ?? 0) - firstAt).to.equal(24 * HOUR_MS);
      expect(new Set(receiver.received.map((r) => r.body.id))).to.deep.equal(new Set([id]));
      const errors = await app.tally.sql.query<{ error: string }>('SELECT error FROM webhook_attempts WHERE delivery_id = $1', [id]);
      expect(errors.every((e) => e.error === 'no answer within 300 ms')).to.equal(true);
    } finally {
      options.timeoutMs = timeoutMs;
    }
  });

  it('signs with both the new and the previous secret for 24 hours after a rotation, then with the new one only', async () => {
    const { partner, receiver, secret: previous } = await subscribed('Rotating', ['deposit.completed']);
    const rotated = await app.http.post('/api/v1/partner/webhooks/secret/rotate').set(partner.headers).send();
    const current = rotated.body.data.secret as string;
    const who = await customer(app.http, partner);
    await fund(app.http, partner, who, '1');
    const [during] = await receiver.waitFor((got) => got.length === 1);
    const r = during as Received;
    expect(String(r.headers['x-webhook-signature']).match(/v1=/g)).to.have.length(2);
    expect(String(r.headers['webhook-signature']).split(' ')).to.have.length(2);
    for (const secret of [previous, current]) {
      expect(verifiesXWebhookSignature(r, secret)).to.equal(true);
      expect(verifiesStandardWebhook(r, secret, Math.floor(clock / 1000))).to.equal(true);
    }
    clock = Date.parse(rotated.body.data.previousSecretExpiresAt) + 60_000;
    await fund(app.http, partner, who, '1');
    const [, after] = await receiver.waitFor((got) => got.length === 2);
    const a = after as Received;
    expect(verifiesXWebhookSignature(a, current)).to.equal(true);
    expect(verifiesStandardWebhook(a, current, Math.floor(clock / 1000))).to.equal(true);
    expect(verifiesXWebhookSignature(a, previous)).to.equal(false);
    expect(verifiesStandardWebhook(a, previous, Math.floor(clock / 1000))).to.equal(false);
  });

  it('makes no second delivery of any event when the outbox reads the log again from an earlier checkpoint', async () => {
    const count = async () => (await app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM webhook_deliveries'))[0]?.n;
    const checkpoint = async () =>
      (await app.tally.sql.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = 'outbox'`))[0]?.position ?? '';
    const head = await lastWrittenPosition(app);
    await until(checkpoint, (p) => p >= head, 'the outbox to reach the head');
    const before = await count();
    expect(Number(before)).to.be.above(5);
    await app.tally.sql.query(`UPDATE projection_checkpoints SET position = '' WHERE name = 'outbox'`);
    await until(checkpoint, (p) => p >= head, 'the outbox to read the log again');
    expect(await count()).to.equal(before);
  });

  it('refuses, at delivery time outside sandbox mode, a loopback target given as an address or as a name that resolves to one', async () => {
    const receiver = new Receiver();
    await receiver.start();
    receivers.push(receiver);
    const port = new URL(receiver.url).port;
    for (const target of [`http://127.0.0.1:${port}/hooks`, `http://localhost:${port}/hooks`, `http://[::1]:${port}/hooks`]) {
      const result = await postNotification(target, '{}', {}, { timeoutMs: 2_000, publicOnly: true });
      expect(result.ok, target).to.equal(false);
      expect(result.httpStatus, target).to.equal(null);
      expect(result.error, target).to.match(/^refused: /);
    }
    expect(receiver.received).to.have.length(0);
    const allowed = await postNotification(`http://127.0.0.1:${port}/hooks`, '{}', {}, { timeoutMs: 2_000, publicOnly: false });
    expect(allowed).to.include({ ok: true, httpStatus: 200, error: null });
  });
});
