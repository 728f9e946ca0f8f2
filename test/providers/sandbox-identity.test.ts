import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import type { IdentityWebhookEvent } from '../../src/providers/identity/port';
import { ProviderError, WebhookSignatureError } from '../../src/providers/errors';
import {
  SandboxIdentityProvider,
  type SandboxIdentityOptions,
  SandboxInquiryConflictError,
  SandboxInquiryNotFoundError,
} from '../../src/providers/identity/sandbox';
import { renderDecisionPage, renderHostedPage } from '../../src/providers/identity/sandbox-page';
import { signPayload } from '../../src/providers/signature';

const SECRET = 'wbhsec_sandbox_identity_test';
const BASE_URL = 'http://tally.test:3000';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A local webhook receiver; `answer` decides the status of each request (by 1-based attempt). */
async function startReceiver(answer: (attempt: number, request: Received) => number | Promise<number>) {
  const requests: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(request);
      res.statusCode = await answer(requests.length, request);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks/identity/sandbox`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`);
  }
  throw new Error('expected the promise to reject');
}

describe('sandbox identity provider', () => {
  let sql: PgliteSql;
  let webhookUrl = 'http://127.0.0.1:9/unset';

  function sandbox(overrides: Partial<SandboxIdentityOptions> = {}): SandboxIdentityProvider {
    return new SandboxIdentityProvider({
      sql,
      webhookSecret: SECRET,
      publicBaseUrl: () => `${BASE_URL}/`,
      webhookUrl: () => webhookUrl,
      retryDelayMs: 10,
      ...overrides,
    });
  }

  const prefill = { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', phone: '+14155550123', birthDate: '1990-12-10' };

  before(async () => {
    sql = await PgliteSql.open();
    await sandbox().prepare();
  });
  after(async () => {
    await sql.close();
  });

  it('prepares its table idempotently', async () => {
    await sandbox().prepare();
    const rows = await sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM information_schema.tables WHERE table_name = 'sandbox_identity_inquiries'`);
    expect(rows[0]?.n).to.equal('1');
  });

  it('creates an inquiry in status created with an absolute verification URL on the public base', async () => {
    const provider = sandbox();
    const created = await provider.createInquiry({ referenceId: 'user-1', prefill });
    expect(created.inquiryId).to.match(/^inq_sandbox_[0-9a-f]{24}$/);
    expect(created.status).to.equal('created');
    expect(created.verificationUrl).to.equal(`${BASE_URL}/sandbox/identity/inquiries/${created.inquiryId}`);
    const snapshot = await provider.getInquiry(created.inquiryId);
    expect(snapshot).to.include({ inquiryId: created.inquiryId, referenceId: 'user-1', status: 'created', riskLevel: null, riskScore: null, document: null });
    expect(snapshot.updatedAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(snapshot).to.not.have.property('prefill');
    expect((await provider.findInquiry(created.inquiryId))?.prefill).to.deep.equal(prefill);
  });

  it('answers an unknown inquiry with a ProviderError (not found)', async () => {
    const error = await rejection(sandbox().getInquiry('inq_sandbox_nope'));
    expect(error).to.be.instanceOf(ProviderError).and.instanceOf(SandboxInquiryNotFoundError);
    expect(await sandbox().findInquiry('inq_sandbox_nope')).to.equal(null);
  });

  it('marks an inquiry pending when its page is first opened, and only from created', async () => {
    const provider = sandbox();
    const { inquiryId } = await provider.createInquiry({ referenceId: 'user-2', prefill });
    expect((await provider.markStarted(inquiryId)).status).to.equal('pending');
    expect((await provider.markStarted(inquiryId)).status).to.equal('pending');
    await sql.query(`UPDATE sandbox_identity_inquiries SET status = 'approved' WHERE inquiry_id = $1`, [inquiryId]);
    expect((await provider.markStarted(inquiryId)).status).to.equal('approved');
    expect(await rejection(provider.markStarted('inq_sandbox_nope'))).to.be.instanceOf(SandboxInquiryNotFoundError);
  });

  describe('complete', () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>> | null = null;
    afterEach(async () => {
      await receiver?.close();
      receiver = null;
    });

    it('approves and delivers a signed webhook that parseWebhook verifies at the receiver', async () => {
      const provider = sandbox();
      const parsed: IdentityWebhookEvent[] = [];
      receiver = await startReceiver((_attempt, request) => {
        parsed.push(provider.parseWebhook(request.body, request.headers));
        return 200;
      });
      webhookUrl = receiver.url;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-3', prefill });

      const eventId = await provider.complete(inquiryId, 'approved');

      expect(eventId).to.match(/^evt_sandbox_[0-9a-f]{24}$/);
      expect(receiver.requests).to.have.length(1);
      const request = receiver.requests[0]!;
      expect(request.headers['content-type']).to.equal('application/json');
      expect(request.headers['x-signature']).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      const body = JSON.parse(request.body.toString('utf8'));
      expect(body).to.include({ id: eventId, type: 'inquiry.approved' });
      expect(body.data).to.include({ inquiryId, referenceId: 'user-3', status: 'approved' });

      const event = parsed[0]!;
      expect(event).to.include({ eventId, inquiryId, status: 'approved' });
      const snapshot = event.snapshot!;
      expect(snapshot).to.include({ referenceId: 'user-3', status: 'approved', riskLevel: 'low', riskScore: 12 });
      expect(snapshot.reasons).to.equal(null);
      const doc = snapshot.document!;
      expect(doc).to.include({ issuingCountry: 'US', type: 'passport' });
      expect(doc.idNumber).to.match(/^S\d{8}$/);
      expect(doc.issuedDate).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect(doc.expiryDate).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect(doc.expiryDate! > new Date().toISOString().slice(0, 10)).to.equal(true);
      expect(doc.imageFront).to.equal(`${BASE_URL}/sandbox/identity/documents/${inquiryId}/front`);
      expect(doc.imageBack).to.equal(`${BASE_URL}/sandbox/identity/documents/${inquiryId}/back`);
      expect(await provider.getInquiry(inquiryId)).to.deep.equal(snapshot);
    });

    it('takes the passport issuing country from a country carried in the prefill', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 200);
      webhookUrl = receiver.url;
      const withCountry = { ...prefill, country: 'CO' };
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-co', prefill: withCountry });
      await provider.complete(inquiryId, 'approved');
      expect((await provider.getInquiry(inquiryId)).document?.issuingCountry).to.equal('CO');
    });

    it('declines with document_expired and fails with selfie_mismatch', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 204);
      webhookUrl = receiver.url;
      const declined = await provider.createInquiry({ referenceId: 'user-4', prefill });
      const failed = await provider.createInquiry({ referenceId: 'user-5', prefill });
      await provider.complete(declined.inquiryId, 'declined');
      await provider.complete(failed.inquiryId, 'failed');
      const d = await provider.getInquiry(declined.inquiryId);
      expect(d).to.include({ status: 'declined', riskLevel: 'high' });
      expect(d.reasons).to.deep.equal(['document_expired']);
      expect(d.document!.expiryDate! < new Date().toISOString().slice(0, 10)).to.equal(true);
      const f = await provider.getInquiry(failed.inquiryId);
      expect(f.status).to.equal('failed');
      expect(f.reasons).to.deep.equal(['selfie_mismatch']);
      const types = receiver.requests.map((r) => JSON.parse(r.body.toString('utf8')).type);
      expect(types).to.deep.equal(['inquiry.declined', 'inquiry.failed']);
    });

    it('sends needs_review and expired as inquiry.<outcome> events', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 200);
      webhookUrl = receiver.url;
      for (const outcome of ['needs_review', 'expired'] as const) {
        const { inquiryId } = await provider.createInquiry({ referenceId: `user-${outcome}`, prefill });
        await provider.complete(inquiryId, outcome);
        expect((await provider.getInquiry(inquiryId)).status).to.equal(outcome);
      }
      expect(receiver.requests.map((r) => JSON.parse(r.body.toString('utf8')).type)).to.deep.equal(['inquiry.needs_review', 'inquiry.expired']);
    });

    it('retries after a 500 and resolves once the receiver accepts, with the same event id', async () => {
      const provider = sandbox();
      receiver = await startReceiver((attempt) => (attempt === 1 ? 500 : 200));
      webhookUrl = receiver.url;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-6', prefill });
      const eventId = await provider.complete(inquiryId, 'approved');
      expect(receiver.requests).to.have.length(2);
      const ids = receiver.requests.map((r) => JSON.parse(r.body.toString('utf8')).id);
      expect(ids).to.deep.equal([eventId, eventId]);
    });

    it('rejects after the bounded attempts when the receiver is unreachable, keeping the decision', async () => {
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls += 1;
        return fetch(input, init);
      };
      const provider = sandbox({ fetch: counting, maxAttempts: 3 });
      webhookUrl = `http://127.0.0.1:${await closedPort()}/webhooks/identity/sandbox`;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-7', prefill });
      const error = await rejection(provider.complete(inquiryId, 'approved'));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.match(/not delivered after 3 attempt/);
      expect(calls).to.equal(3);
      expect((await provider.getInquiry(inquiryId)).status).to.equal('approved');
    });

    it('gives up on a receiver that does not answer within timeoutMs', async () => {
      const provider = sandbox({ timeoutMs: 100, maxAttempts: 2 });
      // The receiver answers only once the test lets it: the call coming back first is the timeout's doing.
      let answer: (status: number) => void = () => {};
      const answered = new Promise<number>((resolve) => {
        answer = resolve;
      });
      receiver = await startReceiver(() => answered);
      webhookUrl = receiver.url;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-8', prefill });
      const error = await rejection(provider.complete(inquiryId, 'approved'));
      expect(error.message).to.match(/no answer within 100 ms/);
      expect(receiver.requests).to.have.length(2);
      answer(200);
    });

    it('does not retry a receiver that rejects the webhook with a 4xx', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 401);
      webhookUrl = receiver.url;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-9', prefill });
      const error = await rejection(provider.complete(inquiryId, 'approved'));
      expect(error.message).to.contain('answered 401');
      expect(receiver.requests).to.have.length(1);
    });

    it('re-delivers the same outcome under a new event id, and refuses another outcome once decided', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 200);
      webhookUrl = receiver.url;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-10', prefill });
      const first = await provider.complete(inquiryId, 'approved');
      const before = await provider.getInquiry(inquiryId);
      const second = await provider.complete(inquiryId, 'approved');
      expect(second).to.not.equal(first);
      expect(await provider.getInquiry(inquiryId)).to.deep.equal(before);
      const error = await rejection(provider.complete(inquiryId, 'declined'));
      expect(error).to.be.instanceOf(SandboxInquiryConflictError);
      expect(receiver.requests).to.have.length(2);
    });

    it('lets a reviewer decide an inquiry sent to review', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 200);
      webhookUrl = receiver.url;
      const { inquiryId } = await provider.createInquiry({ referenceId: 'user-11', prefill });
      await provider.complete(inquiryId, 'needs_review');
      await provider.complete(inquiryId, 'declined');
      expect((await provider.getInquiry(inquiryId)).status).to.equal('declined');
    });

    it('rejects an unknown inquiry without sending anything', async () => {
      const provider = sandbox();
      receiver = await startReceiver(() => 200);
      webhookUrl = receiver.url;
      expect(await rejection(provider.complete('inq_sandbox_nope', 'approved'))).to.be.instanceOf(SandboxInquiryNotFoundError);
      expect(receiver.requests).to.have.length(0);
    });
  });

  describe('parseWebhook', () => {
    const body = Buffer.from(
      JSON.stringify({
        id: 'evt_sandbox_1',
        type: 'inquiry.declined',
        createdAt: '2025-05-12T10:00:00.000Z',
        data: { inquiryId: 'inq_sandbox_1', referenceId: 'user-1', status: 'declined', snapshot: null },
      }),
    );
    // Taken per test: a value of when the file loaded is stale once a long suite reaches these tests.
    let now = 0;
    beforeEach(() => {
      now = Math.floor(Date.now() / 1000);
    });

    it('maps a signed event without a snapshot', () => {
      const event = sandbox().parseWebhook(body, { 'x-signature': signPayload(SECRET, body, now) });
      expect(event).to.deep.equal({
        eventId: 'evt_sandbox_1',
        inquiryId: 'inq_sandbox_1',
        status: 'declined',
        occurredAt: '2025-05-12T10:00:00.000Z',
        snapshot: null,
      });
    });

    it('rejects a tampered body, another secret and a stale timestamp', () => {
      const provider = sandbox();
      const tampered = Buffer.from(body.toString('utf8').replace('declined', 'approved'));
      expect(() => provider.parseWebhook(tampered, { 'x-signature': signPayload(SECRET, body, now) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, { 'x-signature': signPayload('other', body, now) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, { 'x-signature': signPayload(SECRET, body, now - 301) })).to.throw(WebhookSignatureError);
      expect(() => provider.parseWebhook(body, {})).to.throw(WebhookSignatureError);
    });

    it('rejects a signed body that is not a sandbox event', () => {
      const junk = Buffer.from('{"hello":"world"}');
      expect(() => sandbox().parseWebhook(junk, { 'x-signature': signPayload(SECRET, junk, now) })).to.throw(ProviderError, /Malformed/);
    });
  });

  describe('hosted page', () => {
    const inquiry = {
      inquiryId: 'inq_sandbox_abc',
      referenceId: 'user-1',
      status: 'created' as const,
      riskLevel: null,
      riskScore: null,
      reasons: null,
      document: null,
      updatedAt: '2025-05-12T10:00:00.000Z',
      prefill: { firstName: '<script>alert("x")</script>', lastName: `O'Brien & "Sons"`, email: 'a@b.co', birthDate: '1990-01-01' },
    };

    it('escapes HTML in prefill values', () => {
      const html = renderHostedPage(inquiry);
      expect(html).to.not.contain('<script>');
      expect(html).to.contain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
      expect(html).to.contain('O&#39;Brien &amp; &quot;Sons&quot;');
    });

    it('is a self-contained page with the decision form and the three buttons', () => {
      const html = renderHostedPage(inquiry);
      expect(html).to.contain('<title>Sandbox identity verification</title>');
      expect(html).to.contain('<form method="post" action="/sandbox/identity/inquiries/inq_sandbox_abc/decision">');
      expect(html).to.match(/<button[^>]*id="approve"[^>]*name="outcome"[^>]*value="approved"/);
      expect(html).to.match(/<button[^>]*id="decline"[^>]*name="outcome"[^>]*value="declined"/);
      expect(html).to.match(/<button[^>]*id="review"[^>]*name="outcome"[^>]*value="needs_review"/);
      expect(html).to.match(/id="status"[^>]*>Status: <strong>created<\/strong>/);
      expect(html).to.not.match(/<script|<link|src=|@import|https?:\/\//);
    });

    it('shows no buttons once the inquiry is decided', () => {
      const html = renderHostedPage({ ...inquiry, status: 'approved' });
      expect(html).to.not.contain('<form');
      expect(html).to.contain('already decided');
    });

    it('renders the decision page with the resulting status, escaped', () => {
      const html = renderDecisionPage('approved', { inquiryId: 'inq_<b>' });
      expect(html).to.contain('<title>Sandbox identity verification</title>');
      expect(html).to.match(/id="result"[^>]*>Status: <strong>approved<\/strong>/);
      expect(html).to.contain('inq_&lt;b&gt;');
    });
  });
});
