import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PERSONA_API_VERSION, PersonaIdentityProvider, type PersonaOptions } from '../../src/providers/identity/persona';
import { ProviderError, WebhookSignatureError } from '../../src/providers/errors';
import { signPayload } from '../../src/providers/signature';

const WEBHOOK_SECRET = 'wbhsec_persona_test_5f2c1e';

function fixture(name: string): string {
  return readFileSync(path.join(__dirname, 'fixtures', name), 'utf8');
}

interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

type Responder = (request: Recorded, signal: AbortSignal | null) => Promise<Response>;

/** A fetch that records requests and answers from a script of responders (the last one repeats). */
function fakeFetch(...responders: Responder[]): { fetch: typeof fetch; calls: Recorded[] } {
  const calls: Recorded[] = [];
  const impl: typeof fetch = async (input, init) => {
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, key) => {
      headers[key] = value;
    });
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : null;
    const request: Recorded = { url: String(input), method: init?.method ?? 'GET', headers, body };
    calls.push(request);
    const responder = responders[Math.min(calls.length - 1, responders.length - 1)]!;
    return responder(request, init?.signal ?? null);
  };
  return { fetch: impl, calls };
}

const json =
  (status: number, text: string): Responder =>
  async () =>
    new Response(text, { status, headers: { 'content-type': 'application/json' } });
const networkError: Responder = async () => {
  throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 10.0.0.1:443') });
};
/** Never answers; rejects only when the caller's signal aborts, as real fetch does. */
const hang: Responder = (_request, signal) =>
  new Promise((_resolve, reject) => {
    signal?.addEventListener('abort', () => reject(signal.reason));
  });

function provider(fetchImpl: typeof fetch, overrides: Partial<PersonaOptions> = {}): PersonaIdentityProvider {
  return new PersonaIdentityProvider({
    apiKey: 'persona_sandbox_key_abc123',
    templateId: 'itmpl_Ygs16MKTkA6obnF8C3Rb17dm',
    webhookSecret: WEBHOOK_SECRET,
    fetch: fetchImpl,
    retryDelayMs: 5,
    ...overrides,
  });
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

const PREFILL = { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', phone: '+14155550123', birthDate: '1990-12-10' };
const REFERENCE_ID = '8f0f6f0e-8a51-4d83-9d3c-3c8c1e6b2a10';

describe('Persona identity provider', () => {
  describe('createInquiry', () => {
    it('POSTs a JSON:API inquiry with template, reference id and prefill fields, with the pinned headers', async () => {
      const fake = fakeFetch(json(201, fixture('persona-inquiry-created.json')));
      await provider(fake.fetch).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL });
      expect(fake.calls).to.have.length(1);
      const call = fake.calls[0]!;
      expect(call.method).to.equal('POST');
      expect(call.url).to.equal('https://api.withpersona.com/api/v1/inquiries');
      expect(call.headers.authorization).to.equal('Bearer persona_sandbox_key_abc123');
      expect(call.headers['persona-version']).to.equal(PERSONA_API_VERSION).and.equal('2023-01-05');
      expect(call.headers['key-inflection']).to.equal('kebab');
      expect(call.headers['content-type']).to.equal('application/json');
      expect(call.headers['idempotency-key']).to.match(/^[0-9a-f-]{36}$/);
      expect(call.body).to.deep.equal({
        data: {
          attributes: {
            'inquiry-template-id': 'itmpl_Ygs16MKTkA6obnF8C3Rb17dm',
            'reference-id': REFERENCE_ID,
            fields: {
              'name-first': 'Ada',
              'name-last': 'Lovelace',
              'email-address': 'ada@example.com',
              'phone-number': '+14155550123',
              birthdate: '1990-12-10',
            },
          },
        },
      });
    });

    it('answers with the inquiry id, the hosted flow URL for it and status created', async () => {
      const fake = fakeFetch(json(201, fixture('persona-inquiry-created.json')));
      const created = await provider(fake.fetch).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL });
      expect(created).to.deep.equal({
        inquiryId: 'inq_2CVZ4HyVg7qaboXz2PUHknAn',
        verificationUrl: 'https://inquiry.withpersona.com/inquiry?inquiry-id=inq_2CVZ4HyVg7qaboXz2PUHknAn',
        status: 'created',
      });
    });

    it('leaves out prefill fields it was not given and honours custom base and hosted-flow URLs', async () => {
      const fake = fakeFetch(json(201, fixture('persona-inquiry-created.json')));
      const created = await provider(fake.fetch, { baseUrl: 'https://persona.internal/', hostedFlowUrl: 'https://verify.example.com/flow' }).createInquiry({
        referenceId: REFERENCE_ID,
        prefill: { firstName: 'Ada' },
      });
      expect(fake.calls[0]!.url).to.equal('https://persona.internal/api/v1/inquiries');
      expect(fake.calls[0]!.body).to.have.nested.property('data.attributes.fields').that.deep.equals({ 'name-first': 'Ada' });
      expect(created.verificationUrl).to.equal('https://verify.example.com/flow?inquiry-id=inq_2CVZ4HyVg7qaboXz2PUHknAn');
    });

    it('turns a 422 into a ProviderError naming the status and Persona error title, without retrying', async () => {
      const fake = fakeFetch(json(422, fixture('persona-error-422.json')));
      const error = await rejection(provider(fake.fetch).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL }));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.contain('422').and.contain('Bad request');
      expect((error as ProviderError).provider).to.equal('persona');
      expect(fake.calls).to.have.length(1);
    });

    it('does not retry a 500 on create, since Persona replays a stored 500 for the same idempotency key', async () => {
      const fake = fakeFetch(json(500, '{"errors":[{"title":"Internal server error"}]}'));
      const error = await rejection(provider(fake.fetch).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL }));
      expect(error).to.be.instanceOf(ProviderError);
      expect(fake.calls).to.have.length(1);
    });

    it('retries a network error once with the same idempotency key, then succeeds', async () => {
      const fake = fakeFetch(networkError, json(201, fixture('persona-inquiry-created.json')));
      const created = await provider(fake.fetch).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL });
      expect(created.inquiryId).to.equal('inq_2CVZ4HyVg7qaboXz2PUHknAn');
      expect(fake.calls).to.have.length(2);
      expect(fake.calls[1]!.headers['idempotency-key']).to.equal(fake.calls[0]!.headers['idempotency-key']);
    });

    it('gives up after the bounded attempts when the network keeps failing', async () => {
      const fake = fakeFetch(networkError);
      const error = await rejection(provider(fake.fetch, { maxAttempts: 2 }).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL }));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.contain('fetch failed');
      expect(fake.calls).to.have.length(2);
    });

    it('turns a Persona that never answers into a ProviderError by aborting the request once timeoutMs has passed', async () => {
      let abortReason: unknown;
      const fake = fakeFetch((request, signal) => {
        signal?.addEventListener('abort', () => {
          abortReason = signal.reason;
        });
        return hang(request, signal);
      });
      // A provider that ignored its timeout would hang here until mocha's own timeout fails the test.
      const error = await rejection(provider(fake.fetch, { timeoutMs: 80 }).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL }));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.match(/timed out after 80 ms/);
      expect((abortReason as Error | undefined)?.name, 'the request was aborted by its deadline').to.equal('TimeoutError');
      expect(fake.calls, 'no attempt after the deadline').to.have.length(1);
    });

    it('turns a 2xx whose body is not JSON into a ProviderError', async () => {
      const fake = fakeFetch(json(200, '<html>gateway</html>'));
      const error = await rejection(provider(fake.fetch).createInquiry({ referenceId: REFERENCE_ID, prefill: PREFILL }));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.contain('not JSON');
    });
  });

  describe('getInquiry', () => {
    it('GETs the inquiry with its verifications, without an idempotency key', async () => {
      const fake = fakeFetch(json(200, fixture('persona-inquiry-approved.json')));
      await provider(fake.fetch).getInquiry('inq_2CVZ4HyVg7qaboXz2PUHknAn');
      const call = fake.calls[0]!;
      expect(call.method).to.equal('GET');
      expect(call.url).to.equal('https://api.withpersona.com/api/v1/inquiries/inq_2CVZ4HyVg7qaboXz2PUHknAn?include=verifications');
      expect(call.headers['persona-version']).to.equal('2023-01-05');
      expect(call.headers).to.not.have.property('idempotency-key');
    });

    it('maps an approved inquiry: status, threat level, last change and the passed government id as document', async () => {
      const fake = fakeFetch(json(200, fixture('persona-inquiry-approved.json')));
      const snapshot = await provider(fake.fetch).getInquiry('inq_2CVZ4HyVg7qaboXz2PUHknAn');
      expect(snapshot).to.deep.equal({
        inquiryId: 'inq_2CVZ4HyVg7qaboXz2PUHknAn',
        referenceId: REFERENCE_ID,
        status: 'approved',
        riskLevel: 'low',
        riskScore: null,
        reasons: null,
        document: {
          issuingCountry: 'US',
          type: 'drivers_license',
          idNumber: 'D1234567',
          issuedDate: '2021-03-15',
          expiryDate: '2029-12-10',
          imageFront: 'https://files.withpersona.com/front.jpg?access_token=tok_front',
          imageBack: 'https://files.withpersona.com/back.jpg?access_token=tok_back',
        },
        updatedAt: '2025-05-12T14:09:13.000Z',
      });
    });

    it('maps a declined inquiry with the failed checks as reasons and the failed passport as document', async () => {
      const fake = fakeFetch(json(200, fixture('persona-inquiry-declined.json')));
      const snapshot = await provider(fake.fetch).getInquiry('inq_DcLnEdX4vT9pQw2Rm8Kz5HsB');
      expect(snapshot.status).to.equal('declined');
      expect(snapshot.riskLevel).to.equal('high');
      expect(snapshot.reasons).to.deep.equal(['id_expired_detection', 'selfie_id_comparison']);
      expect(snapshot.document).to.include({ issuingCountry: 'GB', type: 'passport', idNumber: 'X99887766', expiryDate: '2022-01-20', imageBack: null });
    });

    it('maps a freshly created inquiry with no verifications to no document', async () => {
      const fake = fakeFetch(json(200, fixture('persona-inquiry-created.json')));
      const snapshot = await provider(fake.fetch).getInquiry('inq_2CVZ4HyVg7qaboXz2PUHknAn');
      expect(snapshot).to.include({ status: 'created', riskLevel: null, reasons: null, document: null, updatedAt: '2025-05-12T14:03:11.000Z' });
    });

    it("maps each of Persona's inquiry statuses to the KYC status of the same name", async () => {
      const base = JSON.parse(fixture('persona-inquiry-created.json'));
      for (const status of ['created', 'pending', 'completed', 'failed', 'expired', 'needs_review', 'approved', 'declined']) {
        base.data.attributes.status = status;
        const fake = fakeFetch(json(200, JSON.stringify(base)));
        expect((await provider(fake.fetch).getInquiry('inq_x')).status).to.equal(status);
      }
    });

    it('rejects an inquiry status it does not know instead of guessing', async () => {
      const base = JSON.parse(fixture('persona-inquiry-created.json'));
      base.data.attributes.status = 'teleported';
      const error = await rejection(provider(fakeFetch(json(200, JSON.stringify(base))).fetch).getInquiry('inq_x'));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.contain('teleported');
    });

    it('encodes the inquiry id into the path', async () => {
      const fake = fakeFetch(json(200, fixture('persona-inquiry-created.json')));
      await provider(fake.fetch).getInquiry('inq_../../accounts');
      expect(fake.calls[0]!.url).to.equal('https://api.withpersona.com/api/v1/inquiries/inq_..%2F..%2Faccounts?include=verifications');
    });

    it('retries a 503 on a read and returns the answer of the second attempt', async () => {
      const fake = fakeFetch(json(503, '{"errors":[{"title":"Service unavailable"}]}'), json(200, fixture('persona-inquiry-approved.json')));
      const snapshot = await provider(fake.fetch).getInquiry('inq_2CVZ4HyVg7qaboXz2PUHknAn');
      expect(snapshot.status).to.equal('approved');
      expect(fake.calls).to.have.length(2);
    });

    it('turns a 404 into a ProviderError without retrying', async () => {
      const fake = fakeFetch(json(404, '{"errors":[{"title":"Record not found"}]}'));
      const error = await rejection(provider(fake.fetch).getInquiry('inq_missing'));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.contain('404').and.contain('Record not found');
      expect(fake.calls).to.have.length(1);
    });

    it('turns a timeout into a ProviderError, even when the first attempt failed and was retried', async () => {
      const fake = fakeFetch(json(502, '{}'), hang);
      const error = await rejection(provider(fake.fetch, { timeoutMs: 100 }).getInquiry('inq_x'));
      expect(error).to.be.instanceOf(ProviderError);
      expect(error.message).to.match(/timed out/);
    });
  });

  describe('parseWebhook', () => {
    const raw = Buffer.from(fixture('persona-webhook-inquiry-approved.json'), 'utf8');
    const now = () => Math.floor(Date.now() / 1000);

    it('accepts a correctly signed inquiry.approved event and maps it', () => {
      const event = provider(fakeFetch().fetch).parseWebhook(raw, { 'persona-signature': signPayload(WEBHOOK_SECRET, raw, now()) });
      expect(event).to.include({
        eventId: 'evt_XGuYWp7WuDzNxie5z16s7sGJ',
        inquiryId: 'inq_2CVZ4HyVg7qaboXz2PUHknAn',
        status: 'approved',
        occurredAt: '2025-05-12T14:09:14.183Z',
      });
      expect(event.snapshot?.referenceId).to.equal(REFERENCE_ID);
      expect(event.snapshot?.document?.idNumber).to.equal('D1234567');
    });

    it('accepts the two signatures Persona sends while its secret rotates', () => {
      const header = `${signPayload('wbhsec_previous', raw, now())} ${signPayload(WEBHOOK_SECRET, raw, now())}`;
      expect(provider(fakeFetch().fetch).parseWebhook(raw, { 'Persona-Signature': header }).status).to.equal('approved');
    });

    it('rejects a tampered body', () => {
      const header = signPayload(WEBHOOK_SECRET, raw, now());
      const tampered = Buffer.from(raw.toString('utf8').replace('"status": "approved"', '"status": "declined"'), 'utf8');
      expect(tampered.equals(raw)).to.equal(false);
      expect(() => provider(fakeFetch().fetch).parseWebhook(tampered, { 'persona-signature': header })).to.throw(WebhookSignatureError);
    });

    it('rejects a signature made with another secret', () => {
      const header = signPayload('wbhsec_someone_else', raw, now());
      expect(() => provider(fakeFetch().fetch).parseWebhook(raw, { 'persona-signature': header })).to.throw(WebhookSignatureError);
    });

    it('rejects a correctly signed event older than 300 s (replay)', () => {
      const header = signPayload(WEBHOOK_SECRET, raw, now() - 301);
      expect(() => provider(fakeFetch().fetch).parseWebhook(raw, { 'persona-signature': header })).to.throw(WebhookSignatureError, /tolerance/);
    });

    it('judges freshness with the injected clock', () => {
      const header = signPayload(WEBHOOK_SECRET, raw, 1_700_000_000);
      const at = (seconds: number) => provider(fakeFetch().fetch, { nowSeconds: () => seconds });
      expect(at(1_700_000_250).parseWebhook(raw, { 'persona-signature': header }).status).to.equal('approved');
      expect(() => at(1_700_000_400).parseWebhook(raw, { 'persona-signature': header })).to.throw(WebhookSignatureError);
    });

    it('rejects an unsigned request', () => {
      expect(() => provider(fakeFetch().fetch).parseWebhook(raw, {})).to.throw(WebhookSignatureError, /Missing/);
    });

    it('rejects a signed event that is not about an inquiry, naming it', () => {
      const body = Buffer.from(
        JSON.stringify({
          data: {
            type: 'event',
            id: 'evt_1',
            attributes: {
              name: 'report/watchlist.ready',
              'created-at': '2025-05-12T14:09:14.183Z',
              payload: { data: { type: 'report/watchlist', id: 'rep_1' } },
            },
          },
        }),
      );
      expect(() => provider(fakeFetch().fetch).parseWebhook(body, { 'persona-signature': signPayload(WEBHOOK_SECRET, body, now()) })).to.throw(
        ProviderError,
        /report\/watchlist.ready/,
      );
    });
  });
});
