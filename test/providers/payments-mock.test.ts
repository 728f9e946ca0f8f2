import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import { ProviderError, WebhookSignatureError } from '../../src/providers/errors';
import { signPayload } from '../../src/providers/signature';
import {
  type MockPayment,
  MockPaymentConflictError,
  MockPaymentNotFoundError,
  type MockPaymentOptions,
  MockPaymentProvider,
  paymentLinkFor,
} from '../../src/providers/ledger/payments/mock';
import { renderPaymentPage, renderPaymentResult } from '../../src/providers/ledger/payments/mock-page';
import type { PaymentRequest, PaymentWebhookEvent } from '../../src/providers/ledger/payments/port';
import { closedPort, type Receiver, rejection, startReceiver } from './payments-receiver';

const SECRET = 'wbhsec_mock_payments_test';
const PATH = '/webhooks/payments/mock';

function request(overrides: Partial<PaymentRequest> = {}): PaymentRequest {
  return {
    transactionId: randomUUID(),
    amount: '100.50',
    currency: 'USDC',
    description: 'Top up',
    payer: { documentType: 'CC', documentNumber: '1020304050' },
    ...overrides,
  };
}

describe('mock payment provider', function () {
  // PGlite takes a few seconds to open; the repo's .mocharc sets the same limit.
  this.timeout(30_000);
  let sql: PgliteSql;
  let webhookUrl = 'http://127.0.0.1:9/unset';

  function mock(overrides: Partial<MockPaymentOptions> = {}): MockPaymentProvider {
    return new MockPaymentProvider({ sql, webhookSecret: SECRET, webhookUrl: () => webhookUrl, retryDelayMs: 10, ...overrides });
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
    const rows = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM information_schema.tables WHERE table_name = 'sandbox_payments'`);
    expect(rows[0]?.n).to.equal('1');
  });

  it('refuses to start without a webhook secret', () => {
    expect(() => mock({ webhookSecret: '' })).to.throw(/webhookSecret/);
  });

  describe('createPayment', () => {
    it('creates a pending payment and hands out the relative /api/pay link', async () => {
      const provider = mock();
      const req = request();
      const created = await provider.createPayment(req);
      expect(created.paymentId).to.match(/^pay_mock_[0-9a-f]{24}$/);
      expect(created.paymentLink).to.equal(`/api/pay/${created.paymentId}?transactionId=${req.transactionId}&amount=100.50&currency=USDC`);
      const payment = await provider.findPayment(created.paymentId);
      expect(payment).to.deep.include({
        paymentId: created.paymentId,
        transactionId: req.transactionId,
        amount: '100.50',
        currency: 'USDC',
        description: 'Top up',
        payer: { documentType: 'CC', documentNumber: '1020304050' },
        status: 'pending',
        decidedAt: null,
        lastEventId: null,
      });
      expect(payment?.createdAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(await provider.findByTransaction(req.transactionId)).to.deep.equal(payment);
    });

    it('keeps the amount exactly as given, without float artefacts', async () => {
      const provider = mock();
      for (const amount of ['0.1', '0.30000000', '123456789012345678.12345678']) {
        const req = request({ amount });
        const created = await provider.createPayment(req);
        expect(created.paymentLink).to.contain(`&amount=${amount}&`);
        expect((await provider.findPayment(created.paymentId))?.amount).to.equal(amount);
      }
    });

    it('returns the same payment for the same transactionId, even when asked concurrently', async () => {
      const provider = mock();
      const req = request();
      const first = await provider.createPayment(req);
      const again = await provider.createPayment({ ...req, amount: '100.5', description: 'another text' });
      const concurrent = await Promise.all([provider.createPayment(req), provider.createPayment(req)]);
      for (const created of [again, ...concurrent]) expect(created).to.deep.equal(first);
      const rows = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM sandbox_payments WHERE transaction_id = $1`, [req.transactionId]);
      expect(rows[0]?.n).to.equal('1');
      expect((await provider.findPayment(first.paymentId))?.description).to.equal('Top up');
    });

    it('refuses a transactionId reused with another amount or currency', async () => {
      const provider = mock();
      const req = request();
      await provider.createPayment(req);
      expect(await rejection(provider.createPayment({ ...req, amount: '100.51' })))
        .to.be.instanceOf(ProviderError)
        .with.property('message')
        .match(/another amount/);
      expect(await rejection(provider.createPayment({ ...req, currency: 'USD' }))).to.be.instanceOf(ProviderError);
    });

    it('refuses malformed requests without storing anything', async () => {
      const provider = mock();
      const before = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM sandbox_payments`);
      const bad: Partial<PaymentRequest>[] = [
        { transactionId: 'not-a-uuid' },
        { amount: '0' },
        { amount: '-1' },
        { amount: '1e3' },
        { amount: '01.5' },
        { currency: 'usdc' },
        { payer: { documentType: '', documentNumber: '1' } },
      ];
      for (const overrides of bad) {
        const error = await rejection(provider.createPayment(request(overrides)));
        expect(error, JSON.stringify(overrides)).to.be.instanceOf(ProviderError);
        expect(error.message).to.match(/^Mock payment refused/);
      }
      const after = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM sandbox_payments`);
      expect(after[0]?.n).to.equal(before[0]?.n);
    });

    it('URL-encodes the parts of the payment link', () => {
      const link = paymentLinkFor({ paymentId: 'pay/x', transactionId: 'a&b', amount: '1+2', currency: 'U D' });
      expect(link).to.equal('/api/pay/pay%2Fx?transactionId=a%26b&amount=1%2B2&currency=U%20D');
    });

    it('finds nothing for an unknown payment or transaction', async () => {
      const provider = mock();
      expect(await provider.findPayment('pay_mock_nope')).to.equal(null);
      expect(await provider.findByTransaction(randomUUID())).to.equal(null);
      expect(await provider.findByTransaction('not-a-uuid')).to.equal(null);
    });
  });

  describe('decide', () => {
    let receiver: Receiver | null = null;
    afterEach(async () => {
      await receiver?.close();
      receiver = null;
    });

    /** A receiver that verifies each delivery with parseWebhook (401 when it does not verify). */
    async function verifyingReceiver(provider: MockPaymentProvider, answer: (attempt: number) => number = () => 200) {
      const parsed: PaymentWebhookEvent[] = [];
      receiver = await startReceiver(PATH, (attempt, r) => {
        parsed.push(provider.parseWebhook(r.body, r.headers));
        return answer(attempt);
      });
      webhookUrl = receiver.url;
      return { receiver, parsed };
    }

    it('confirms and delivers a signed payment.confirmed webhook that parseWebhook verifies', async () => {
      const provider = mock();
      const { receiver: r, parsed } = await verifyingReceiver(provider);
      const req = request();
      const { paymentId } = await provider.createPayment(req);

      const eventId = await provider.decide(paymentId, 'confirmed');

      expect(eventId).to.match(/^evt_pay_[0-9a-f]{24}$/);
      expect(r.requests).to.have.length(1);
      const delivered = r.requests[0]!;
      expect(delivered.headers['content-type']).to.equal('application/json');
      expect(delivered.headers['x-signature']).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      const body = r.bodies()[0];
      expect(Object.keys(body)).to.deep.equal(['id', 'type', 'createdAt', 'data']);
      expect(body).to.include({ id: eventId, type: 'payment.confirmed' });
      expect(body.data).to.deep.equal({ paymentId, transactionId: req.transactionId, amount: '100.50', currency: 'USDC' });
      expect(parsed).to.have.length(1);
      expect(parsed[0]).to.deep.equal({
        eventId,
        paymentId,
        transactionId: req.transactionId,
        outcome: 'confirmed',
        amount: '100.50',
        currency: 'USDC',
        occurredAt: body.createdAt,
      });
      const payment = await provider.findPayment(paymentId);
      expect(payment).to.include({ status: 'confirmed', lastEventId: eventId });
      expect(payment?.decidedAt).to.match(/Z$/);
    });

    it('fails a payment with a payment.failed webhook', async () => {
      const provider = mock();
      const { parsed } = await verifyingReceiver(provider, () => 204);
      const { paymentId } = await provider.createPayment(request());
      await provider.decide(paymentId, 'failed');
      expect(parsed.map((e) => e.outcome)).to.deep.equal(['failed']);
      expect((await provider.findPayment(paymentId))?.status).to.equal('failed');
    });

    it('re-delivers the same outcome under a new event id and refuses another outcome once decided', async () => {
      const provider = mock();
      const { receiver: r } = await verifyingReceiver(provider);
      const { paymentId } = await provider.createPayment(request());
      const first = await provider.decide(paymentId, 'confirmed');
      const decided = await provider.findPayment(paymentId);
      const second = await provider.decide(paymentId, 'confirmed');
      expect(second).to.not.equal(first);
      expect(await provider.findPayment(paymentId)).to.deep.equal({ ...decided, lastEventId: second } satisfies Partial<MockPayment>);

      const error = await rejection(provider.decide(paymentId, 'failed'));
      expect(error).to.be.instanceOf(MockPaymentConflictError).and.instanceOf(ProviderError);
      expect((error as MockPaymentConflictError).status).to.equal('confirmed');
      expect(r.bodies().map((b) => b.id)).to.deep.equal([first, second]);
      expect((await provider.findPayment(paymentId))?.status).to.equal('confirmed');
    });

    it('redeliver sends the last decision again with the same event id and the same body', async () => {
      const provider = mock();
      const { receiver: r, parsed } = await verifyingReceiver(provider);
      const { paymentId } = await provider.createPayment(request());
      const eventId = await provider.decide(paymentId, 'confirmed');
      expect(await provider.redeliver(paymentId)).to.equal(eventId);
      expect(r.requests).to.have.length(2);
      expect(r.requests[1]!.body.equals(r.requests[0]!.body)).to.equal(true);
      expect(parsed.map((e) => e.eventId)).to.deep.equal([eventId, eventId]);
    });

    it('redeliver refuses an undecided or unknown payment', async () => {
      const provider = mock();
      const { receiver: r } = await verifyingReceiver(provider);
      const { paymentId } = await provider.createPayment(request());
      expect(await rejection(provider.redeliver(paymentId)))
        .to.be.instanceOf(ProviderError)
        .with.property('message')
        .match(/not decided/);
      expect(await rejection(provider.redeliver('pay_mock_nope'))).to.be.instanceOf(MockPaymentNotFoundError);
      expect(r.requests).to.have.length(0);
    });

    it('retries after a 500 and resolves once the receiver accepts, with the same event id', async () => {
      const provider = mock();
      const { receiver: r } = await verifyingReceiver(provider, (attempt) => (attempt === 1 ? 500 : 200));
      const { paymentId } = await provider.createPayment(request());
      const eventId = await provider.decide(paymentId, 'confirmed');
      expect(r.bodies().map((b) => b.id)).to.deep.equal([eventId, eventId]);
    });

    it('rejects after the bounded attempts when the receiver is unreachable, keeping the decision for a later redelivery', async () => {
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls += 1;
        return fetch(input, init);
      };
      const provider = mock({ fetch: counting, maxAttempts: 3 });
      webhookUrl = `http://127.0.0.1:${await closedPort()}${PATH}`;
      const { paymentId } = await provider.createPayment(request());
      const error = await rejection(provider.decide(paymentId, 'confirmed'));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.match(/not delivered after 3 attempt/);
      expect(calls).to.equal(3);
      const payment = await provider.findPayment(paymentId);
      expect(payment?.status).to.equal('confirmed');

      const { receiver: r } = await verifyingReceiver(provider);
      expect(await provider.redeliver(paymentId)).to.equal(payment?.lastEventId);
      expect(r.requests).to.have.length(1);
    });

    it('does not retry a receiver that rejects the webhook with a 4xx', async () => {
      const provider = mock();
      receiver = await startReceiver(PATH, () => 401);
      webhookUrl = receiver.url;
      const { paymentId } = await provider.createPayment(request());
      expect((await rejection(provider.decide(paymentId, 'confirmed'))).message).to.contain('answered 401');
      expect(receiver.requests).to.have.length(1);
    });

    it('gives up on a receiver that does not answer within timeoutMs', async () => {
      const provider = mock({ timeoutMs: 100, maxAttempts: 2 });
      // The receiver answers only once the test lets it: the call coming back first is the timeout's doing.
      let answer: (status: number) => void = () => {};
      const answered = new Promise<number>((resolve) => {
        answer = resolve;
      });
      receiver = await startReceiver(PATH, () => answered);
      webhookUrl = receiver.url;
      const { paymentId } = await provider.createPayment(request());
      expect((await rejection(provider.decide(paymentId, 'failed'))).message).to.match(/no answer within 100 ms/);
      expect(receiver.requests).to.have.length(2);
      answer(200);
    });

    it('rejects an unknown payment without sending anything', async () => {
      const provider = mock();
      const { receiver: r } = await verifyingReceiver(provider);
      expect(await rejection(provider.decide('pay_mock_nope', 'confirmed'))).to.be.instanceOf(MockPaymentNotFoundError);
      expect(r.requests).to.have.length(0);
    });
  });

  describe('parseWebhook', () => {
    const transactionId = randomUUID();
    const body = Buffer.from(
      JSON.stringify({
        id: 'evt_pay_1',
        type: 'payment.failed',
        createdAt: '2025-05-12T10:00:00.000Z',
        data: { paymentId: 'pay_mock_1', transactionId, amount: '25.00000001', currency: 'USDC' },
      }),
    );
    // Taken per test: a value of when the file loaded is stale once a long suite reaches these tests.
    let now = 0;
    beforeEach(() => {
      now = Math.floor(Date.now() / 1000);
    });

    it('maps a signed event', () => {
      expect(mock().parseWebhook(body, { 'X-Signature': signPayload(SECRET, body, now) })).to.deep.equal({
        eventId: 'evt_pay_1',
        paymentId: 'pay_mock_1',
        transactionId,
        outcome: 'failed',
        amount: '25.00000001',
        currency: 'USDC',
        occurredAt: '2025-05-12T10:00:00.000Z',
      });
    });

    it('rejects a tampered body, another secret, a stale timestamp and a missing signature', () => {
      const provider = mock();
      const tampered = Buffer.from(body.toString('utf8').replace('payment.failed', 'payment.confirmed'));
      expect(() => provider.parseWebhook(tampered, { 'x-signature': signPayload(SECRET, body, now) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, { 'x-signature': signPayload('other', body, now) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, { 'x-signature': signPayload(SECRET, body, now - 301) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, {})).to.throw(WebhookSignatureError);
    });

    it('rejects a signed body that is not a payment event', () => {
      const provider = mock();
      for (const junk of [
        '{"hello":"world"}',
        'not json',
        JSON.stringify({
          id: 'e',
          type: 'payment.refunded',
          createdAt: '2025-05-12T10:00:00Z',
          data: { paymentId: 'p', transactionId, amount: '1', currency: 'USDC' },
        }),
        JSON.stringify({
          id: 'e',
          type: 'payment.confirmed',
          createdAt: '2025-05-12T10:00:00Z',
          data: { paymentId: 'p', transactionId, amount: 1, currency: 'USDC' },
        }),
      ]) {
        const raw = Buffer.from(junk);
        expect(() => provider.parseWebhook(raw, { 'x-signature': signPayload(SECRET, raw, now) })).to.throw(ProviderError, /Malformed/);
      }
    });
  });

  describe('hosted page', () => {
    const payment: MockPayment = {
      paymentId: 'pay_mock_abc',
      transactionId: '0b7c1a52-4b0e-4d3f-9a43-4f4f6d7c2e10',
      amount: '100.50',
      currency: 'USDC',
      description: '<script>alert("x")</script>',
      payer: { documentType: 'CC', documentNumber: `O'Brien & "Sons"` },
      status: 'pending',
      createdAt: '2025-05-12T10:00:00.000Z',
      decidedAt: null,
      lastEventId: null,
    };

    it('escapes HTML in the description and payer values', () => {
      const html = renderPaymentPage(payment);
      expect(html).to.not.contain('<script>');
      expect(html).to.contain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
      expect(html).to.contain('O&#39;Brien &amp; &quot;Sons&quot;');
    });

    it('is a self-contained page with the amount, the payer and the Pay and Cancel buttons', () => {
      const html = renderPaymentPage(payment);
      expect(html).to.contain('<title>Mock payment</title>');
      expect(html).to.match(/id="amount-value">100\.50<\/span> <span id="currency">USDC</);
      expect(html).to.contain('<dd>CC</dd>');
      expect(html).to.contain('<form method="post" action="/api/pay/pay_mock_abc/decision">');
      expect(html).to.match(/<button[^>]*id="pay"[^>]*name="outcome"[^>]*value="confirmed"[^>]*>Pay<\/button>/);
      expect(html).to.match(/<button[^>]*id="cancel"[^>]*name="outcome"[^>]*value="failed"[^>]*>Cancel<\/button>/);
      expect(html).to.match(/id="status"[^>]*>Status: <strong>pending<\/strong>/);
      expect(html).to.not.match(/<script|<link|src=|@import|https?:\/\//);
    });

    it('shows the status and no buttons once the payment is decided', () => {
      const html = renderPaymentPage({ ...payment, status: 'confirmed' });
      expect(html).to.not.contain('<form');
      expect(html).to.not.contain('<button');
      expect(html).to.match(/Status: <strong>confirmed<\/strong>/);
    });

    it('renders the result page for each status, escaping what it is given', () => {
      for (const status of ['confirmed', 'failed', 'pending'] as const) {
        const html = renderPaymentResult(status);
        expect(html).to.contain('<title>Mock payment</title>');
        expect(html).to.match(new RegExp(`id="result"[^>]*>Status: <strong>${status}</strong>`));
      }
      const html = renderPaymentResult('failed', { paymentId: 'pay_<b>', error: 'x < y' });
      expect(html).to.contain('pay_&lt;b&gt;');
      expect(html).to.contain('x &lt; y');
    });
  });
});
