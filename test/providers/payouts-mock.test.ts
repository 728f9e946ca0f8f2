import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import { ProviderError, WebhookSignatureError } from '../../src/providers/errors';
import { signPayload } from '../../src/providers/signature';
import {
  DEFAULT_FAILURE_REASON,
  MockPayoutConflictError,
  MockPayoutNotFoundError,
  type MockPayoutOptions,
  MockPayoutProvider,
} from '../../src/providers/ledger/payouts/mock';
import type { PayoutRequest, PayoutWebhookEvent } from '../../src/providers/ledger/payouts/port';
import { closedPort, type Receiver, rejection, startReceiver } from './payments-receiver';

const SECRET = 'wbhsec_mock_payouts_test';
const PATH = '/webhooks/payouts/mock';

function request(overrides: Partial<PayoutRequest> = {}): PayoutRequest {
  return {
    transactionId: randomUUID(),
    amount: '150000.00',
    asset: 'COP',
    description: 'Rent',
    source: { metadata: { fundingId: 'fund_123' } },
    destination: {
      accountNumber: '0011223344',
      accountType: 'H',
      bankName: 'Banco de Prueba',
      ownerName: 'Ada Lovelace',
      ownerDocumentType: 'CC',
      ownerDocumentNumber: '1020304050',
    },
    ...overrides,
  };
}

async function count(sql: PgliteSql): Promise<string | undefined> {
  return (await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM sandbox_payouts`))[0]?.n;
}

describe('mock payout provider', function () {
  // PGlite takes a few seconds to open; the repo's .mocharc sets the same limit.
  this.timeout(30_000);
  let sql: PgliteSql;
  let webhookUrl = 'http://127.0.0.1:9/unset';

  function mock(overrides: Partial<MockPayoutOptions> = {}): MockPayoutProvider {
    return new MockPayoutProvider({ sql, webhookSecret: SECRET, webhookUrl: () => webhookUrl, retryDelayMs: 10, ...overrides });
  }

  before(async () => {
    sql = await PgliteSql.open();
    await mock().prepare();
  });
  after(async () => {
    await sql.close();
  });

  it('prepares its table idempotently', async () => {
    await mock().prepare();
    const rows = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM information_schema.tables WHERE table_name = 'sandbox_payouts'`);
    expect(rows[0]?.n).to.equal('1');
  });

  describe('submitPayout', () => {
    it('accepts a payout as PROCESSING and keeps what was submitted', async () => {
      const provider = mock();
      const req = request();
      const accepted = await provider.submitPayout(req);
      expect(accepted.status).to.equal('PROCESSING');
      expect(accepted.paymentId).to.match(/^po_mock_[0-9a-f]{24}$/);
      const payout = await provider.findPayout(accepted.paymentId);
      expect(payout).to.deep.include({
        paymentId: accepted.paymentId,
        transactionId: req.transactionId,
        amount: '150000.00',
        asset: 'COP',
        description: 'Rent',
        source: { metadata: { fundingId: 'fund_123' } },
        destination: req.destination,
        status: 'processing',
        reason: null,
        decidedAt: null,
        lastEventId: null,
      });
      expect(await provider.findByTransaction(req.transactionId)).to.deep.equal(payout);
    });

    it('answers the same paymentId for the same transactionId and stores one payout', async () => {
      const provider = mock();
      const req = request({ description: null });
      const first = await provider.submitPayout(req);
      const replays = await Promise.all([provider.submitPayout(req), provider.submitPayout({ ...req, amount: '150000' })]);
      for (const replay of replays) expect(replay).to.deep.equal(first);
      const rows = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM sandbox_payouts WHERE transaction_id = $1`, [req.transactionId]);
      expect(rows[0]?.n).to.equal('1');
      expect((await provider.findPayout(first.paymentId))?.description).to.equal(null);
    });

    it('refuses a transactionId reused with another amount or asset', async () => {
      const provider = mock();
      const req = request();
      await provider.submitPayout(req);
      expect(await rejection(provider.submitPayout({ ...req, amount: '1' })))
        .to.be.instanceOf(ProviderError)
        .with.property('message')
        .match(/another amount/);
      expect(await rejection(provider.submitPayout({ ...req, asset: 'MXN' }))).to.be.instanceOf(ProviderError);
    });

    it('refuses malformed payouts without storing anything', async () => {
      const provider = mock();
      const before = await count(sql);
      const valid = request();
      const bad: Partial<PayoutRequest>[] = [
        { transactionId: 'nope' },
        { amount: '0.00' },
        { amount: '1e5' },
        { asset: 'cop' },
        { destination: { ...valid.destination, accountNumber: '' } },
        { destination: { ...valid.destination, accountType: 'X' as 'H' } },
        { source: { metadata: null as unknown as Record<string, unknown> } },
      ];
      for (const overrides of bad) {
        const error = await rejection(provider.submitPayout(request(overrides)));
        expect(error, JSON.stringify(overrides)).to.be.instanceOf(ProviderError);
        expect(error.message).to.match(/^Mock payout refused/);
      }
      expect(await count(sql)).to.equal(before);
    });

    it('refuses every submission while unavailable, records nothing, and accepts again once back up', async () => {
      const provider = mock();
      const req = request();
      const before = await count(sql);
      provider.setAvailability(false);
      expect(provider.isAvailable()).to.equal(false);
      const error = await rejection(provider.submitPayout(req));
      expect(error).to.be.instanceOf(ProviderError).with.property('message', 'provider unavailable');
      expect((error as ProviderError).provider).to.equal('mock');
      expect(await count(sql)).to.equal(before);
      provider.setAvailability(true);
      expect((await provider.submitPayout(req)).status).to.equal('PROCESSING');
    });

    it('finds nothing for an unknown payout or transaction', async () => {
      const provider = mock();
      expect(await provider.findPayout('po_mock_nope')).to.equal(null);
      expect(await provider.findByTransaction(randomUUID())).to.equal(null);
      expect(await provider.findByTransaction('nope')).to.equal(null);
    });
  });

  describe('decide', () => {
    let receiver: Receiver | null = null;
    afterEach(async () => {
      await receiver?.close();
      receiver = null;
    });

    async function verifyingReceiver(provider: MockPayoutProvider, answer: (attempt: number) => number = () => 200) {
      const parsed: PayoutWebhookEvent[] = [];
      receiver = await startReceiver(PATH, (attempt, r) => {
        parsed.push(provider.parseWebhook(r.body, r.headers));
        return answer(attempt);
      });
      webhookUrl = receiver.url;
      return { receiver, parsed };
    }

    it('settles and delivers a signed payout.settled webhook that parseWebhook verifies', async () => {
      const provider = mock();
      const { receiver: r, parsed } = await verifyingReceiver(provider);
      const req = request();
      const { paymentId } = await provider.submitPayout(req);

      const eventId = await provider.decide(paymentId, 'settled');

      expect(eventId).to.match(/^evt_po_[0-9a-f]{24}$/);
      expect(r.requests).to.have.length(1);
      expect(r.requests[0]!.headers['x-signature']).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      const body = r.bodies()[0];
      expect(Object.keys(body)).to.deep.equal(['id', 'type', 'createdAt', 'data']);
      expect(body).to.include({ id: eventId, type: 'payout.settled' });
      expect(body.data).to.deep.equal({ paymentId, transactionId: req.transactionId, reason: null });
      expect(parsed).to.deep.equal([{ eventId, paymentId, transactionId: req.transactionId, outcome: 'settled', reason: null, occurredAt: body.createdAt }]);
      const payout = await provider.findPayout(paymentId);
      expect(payout).to.include({ status: 'settled', reason: null, lastEventId: eventId });
      expect(payout?.decidedAt).to.match(/Z$/);
    });

    it('fails with the given reason, or a default one', async () => {
      const provider = mock();
      const { parsed } = await verifyingReceiver(provider);
      const a = await provider.submitPayout(request());
      const b = await provider.submitPayout(request());
      await provider.decide(a.paymentId, 'failed', 'account_closed');
      await provider.decide(b.paymentId, 'failed');
      expect(parsed.map((e) => [e.outcome, e.reason])).to.deep.equal([
        ['failed', 'account_closed'],
        ['failed', DEFAULT_FAILURE_REASON],
      ]);
      expect(await provider.findPayout(a.paymentId)).to.include({ status: 'failed', reason: 'account_closed' });
    });

    it('re-delivers the same outcome under a new event id, keeps the first reason, and refuses another outcome', async () => {
      const provider = mock();
      const { receiver: r, parsed } = await verifyingReceiver(provider);
      const { paymentId } = await provider.submitPayout(request());
      const first = await provider.decide(paymentId, 'failed', 'account_closed');
      const second = await provider.decide(paymentId, 'failed', 'something else');
      expect(second).to.not.equal(first);
      expect(parsed.map((e) => e.reason)).to.deep.equal(['account_closed', 'account_closed']);
      const error = await rejection(provider.decide(paymentId, 'settled'));
      expect(error).to.be.instanceOf(MockPayoutConflictError);
      expect((error as MockPayoutConflictError).status).to.equal('failed');
      expect(r.requests).to.have.length(2);
      expect(await provider.findPayout(paymentId)).to.include({ status: 'failed', reason: 'account_closed', lastEventId: second });
    });

    it('redeliver sends the last result again with the same event id', async () => {
      const provider = mock();
      const { receiver: r, parsed } = await verifyingReceiver(provider);
      const { paymentId } = await provider.submitPayout(request());
      expect(await rejection(provider.redeliver(paymentId)))
        .to.be.instanceOf(ProviderError)
        .with.property('message')
        .match(/not decided/);
      const eventId = await provider.decide(paymentId, 'settled');
      expect(await provider.redeliver(paymentId)).to.equal(eventId);
      expect(r.requests[1]!.body.equals(r.requests[0]!.body)).to.equal(true);
      expect(parsed.map((e) => e.eventId)).to.deep.equal([eventId, eventId]);
      expect(await rejection(provider.redeliver('po_mock_nope'))).to.be.instanceOf(MockPayoutNotFoundError);
    });

    it('retries after a 500 and resolves once the receiver accepts, with the same event id', async () => {
      const provider = mock();
      const { receiver: r } = await verifyingReceiver(provider, (attempt) => (attempt < 3 ? 503 : 200));
      const { paymentId } = await provider.submitPayout(request());
      const eventId = await provider.decide(paymentId, 'settled');
      expect(r.bodies().map((b) => b.id)).to.deep.equal([eventId, eventId, eventId]);
    });

    it('rejects after the bounded attempts when the receiver is unreachable, keeping the result', async () => {
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls += 1;
        return fetch(input, init);
      };
      const provider = mock({ fetch: counting, maxAttempts: 2 });
      webhookUrl = `http://127.0.0.1:${await closedPort()}${PATH}`;
      const { paymentId } = await provider.submitPayout(request());
      const error = await rejection(provider.decide(paymentId, 'settled'));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.match(/not delivered after 2 attempt/);
      expect(calls).to.equal(2);
      expect((await provider.findPayout(paymentId))?.status).to.equal('settled');
    });

    it('does not retry a receiver that rejects the webhook with a 4xx', async () => {
      const provider = mock();
      receiver = await startReceiver(PATH, () => 400);
      webhookUrl = receiver.url;
      const { paymentId } = await provider.submitPayout(request());
      expect((await rejection(provider.decide(paymentId, 'failed'))).message).to.contain('answered 400');
      expect(receiver.requests).to.have.length(1);
    });

    it('rejects an unknown payout without sending anything', async () => {
      const provider = mock();
      const { receiver: r } = await verifyingReceiver(provider);
      expect(await rejection(provider.decide('po_mock_nope', 'settled'))).to.be.instanceOf(MockPayoutNotFoundError);
      expect(r.requests).to.have.length(0);
    });
  });

  describe('parseWebhook', () => {
    const transactionId = randomUUID();
    // Taken per test: a value of when the file loaded is stale once a long suite reaches these tests.
    let now = 0;
    beforeEach(() => {
      now = Math.floor(Date.now() / 1000);
    });
    const event = (type: string, reason: unknown) =>
      Buffer.from(JSON.stringify({ id: 'evt_po_1', type, createdAt: '2025-05-12T10:00:00.000Z', data: { paymentId: 'po_mock_1', transactionId, reason } }));

    it('maps a signed event', () => {
      const body = event('payout.failed', 'account_closed');
      expect(mock().parseWebhook(body, { 'x-signature': signPayload(SECRET, body, now) })).to.deep.equal({
        eventId: 'evt_po_1',
        paymentId: 'po_mock_1',
        transactionId,
        outcome: 'failed',
        reason: 'account_closed',
        occurredAt: '2025-05-12T10:00:00.000Z',
      });
    });

    it('rejects a tampered body, another secret, a stale timestamp and a missing signature', () => {
      const provider = mock();
      const body = event('payout.failed', 'x');
      const tampered = Buffer.from(body.toString('utf8').replace('payout.failed', 'payout.settled'));
      expect(() => provider.parseWebhook(tampered, { 'x-signature': signPayload(SECRET, body, now) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, { 'x-signature': signPayload('other', body, now) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, { 'x-signature': signPayload(SECRET, body, now - 301) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, {})).to.throw(WebhookSignatureError);
    });

    it('rejects a signed body that is not a payout event', () => {
      const provider = mock();
      for (const raw of [Buffer.from('{"hello":"world"}'), event('payout.reversed', null), event('payout.failed', 42)]) {
        expect(() => provider.parseWebhook(raw, { 'x-signature': signPayload(SECRET, raw, now) })).to.throw(ProviderError, /Malformed/);
      }
    });
  });
});
