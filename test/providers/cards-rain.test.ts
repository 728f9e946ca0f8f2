import { constants, createHmac, generateKeyPairSync, privateDecrypt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { IssuerApplicationRequest } from '../../src/providers/cards/port';
import { decryptSecret, encryptSecret, limitInCents, pinBlock, pinFromBlock, RainCardIssuer } from '../../src/providers/cards/rain';
import { ProviderError, WebhookSignatureError } from '../../src/providers/errors';

const fixture = (name: string) => readFileSync(path.join(__dirname, 'fixtures', name), 'utf8');
const WEBHOOK_SECRET = 'rain_webhook_secret_test';
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PUBLIC_PEM = publicKey.export({ type: 'spki', format: 'pem' }).toString();

interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that records requests and answers each from `answer` (status and text). */
function fakeFetch(answer: (request: Recorded) => { status: number; text: string }) {
  const calls: Recorded[] = [];
  const impl: typeof fetch = async (input, init) => {
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, key) => {
      headers[key] = value;
    });
    const request = { url: String(input), method: init?.method ?? 'GET', headers, body: typeof init?.body === 'string' ? JSON.parse(init.body) : null };
    calls.push(request);
    const { status, text } = answer(request);
    return new Response(text, { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch: impl, calls };
}

/** What Rain does with a SessionId: decrypts it with its private key to the session's AES key. */
function sessionKeyOf(sessionId: string): Buffer {
  const encoded = privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING }, Buffer.from(sessionId, 'base64')).toString('utf8');
  return Buffer.from(Buffer.from(encoded, 'base64').toString('hex'), 'hex');
}

const issuer = (fetchImpl: typeof fetch) =>
  new RainCardIssuer({ apiKey: 'rain_test_key', publicKeyPem: PUBLIC_PEM, webhookSecret: WEBHOOK_SECRET, fetch: fetchImpl, baseUrl: 'https://rain.test/v1' });

const APPLICATION: IssuerApplicationRequest = {
  applicationId: '0b7c5a3e-2d1f-4e6a-9b8c-7d6e5f4a3b2c',
  userId: '8f0f6f0e-8a51-4d83-9d3c-3c8c1e6b2a10',
  cardType: 'virtual',
  walletAddress: '0x742d35Cc6634C0532925a3b844Bc9e7595f0bEb0',
  solanaAddress: null,
  tronAddress: null,
  chainId: null,
  contractAddress: null,
  identityShareToken: 'shr_persona_token',
  sourceKey: 'partner-1',
  ipAddress: '203.0.113.7',
  occupation: 'engineer',
  annualSalary: '85000',
  accountPurpose: 'spending',
  expectedMonthlyVolume: '1500',
  isTermsOfServiceAccepted: true,
};

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
  }
  throw new Error('expected a rejection');
}

describe('Rain card issuer', () => {
  it('submits an application with the share token, wallet and profile fields, and mirrors its status word', async () => {
    const fake = fakeFetch(() => ({ status: 200, text: fixture('rain-application-pending.json') }));
    const answer = await issuer(fake.fetch).submitApplication(APPLICATION);
    expect(answer).to.deep.equal({
      issuerApplicationId: '7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f',
      externalStatus: 'manualReview',
      status: 'pending',
      reason: null,
    });
    const call = fake.calls[0] as Recorded;
    expect(call.method).to.equal('POST');
    expect(call.url).to.equal('https://rain.test/v1/issuing/applications/user');
    expect(call.headers['api-key']).to.equal('rain_test_key');
    expect(call.headers['idempotency-key']).to.equal(APPLICATION.applicationId);
    expect(call.body).to.deep.equal({
      personaShareToken: 'shr_persona_token',
      walletAddress: '0x742d35Cc6634C0532925a3b844Bc9e7595f0bEb0',
      ipAddress: '203.0.113.7',
      sourceKey: 'partner-1',
      occupation: 'engineer',
      annualSalary: '85000',
      accountPurpose: 'spending',
      expectedMonthlyVolume: '1500',
      isTermsOfServiceAccepted: true,
    });
  });

  it('reads an application and maps approved', async () => {
    const fake = fakeFetch(() => ({ status: 200, text: fixture('rain-application-approved.json') }));
    const answer = await issuer(fake.fetch).getApplication('7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f');
    expect(answer).to.include({ externalStatus: 'approved', status: 'approved' });
    expect(fake.calls[0]?.url).to.equal('https://rain.test/v1/issuing/applications/user/7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f');
  });

  it("keeps only the error's message of a refusal, never the body it echoes", async () => {
    const fake = fakeFetch(() => ({ status: 400, text: fixture('rain-error-400.json') }));
    const error = await rejection(issuer(fake.fetch).submitApplication(APPLICATION));
    expect(error).to.be.instanceOf(ProviderError);
    expect(error.message).to.equal('Rain POST /issuing/applications/user answered 400: walletAddress must be a valid EVM address');
    expect(fake.calls).to.have.length(1);
  });

  it('issues a card for the application user with the limit in cents, and maps last4 and a two-digit expiry', async () => {
    const fake = fakeFetch(() => ({ status: 200, text: fixture('rain-card-created.json') }));
    const card = await issuer(fake.fetch).issueCard({
      cardId: 'd7c6b5a4-9382-4716-a5b4-c3d2e1f0a9b8',
      issuerApplicationId: '7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f',
      type: 'virtual',
      limit: { amount: '1000.00000000', frequency: 'per24HourPeriod' },
    });
    expect(card).to.deep.equal({ reference: 'c0d1e2f3-a4b5-4c6d-8e7f-901a2b3c4d5e', last4: '0427', expirationMonth: '03', expirationYear: '29' });
    expect(fake.calls[0]?.url).to.equal('https://rain.test/v1/issuing/users/7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f/cards');
    expect(fake.calls[0]?.body).to.deep.equal({ type: 'virtual', limit: { amount: 100000, frequency: 'per24HourPeriod' } });
    expect(limitInCents({ amount: '10.009', frequency: 'allTime' }).amount, 'never rounded up').to.equal(1000);
  });

  it('reads the secrets under a session key sent encrypted to Rain, and decrypts them', async () => {
    const fake = fakeFetch((request) => {
      const key = sessionKeyOf(request.headers.sessionid as string);
      const text = JSON.stringify({
        encryptedPan: encryptSecret(key, '4111111111111111'),
        encryptedCvc: encryptSecret(key, '123'),
        expirationMonth: 3,
        expirationYear: 2029,
      });
      return { status: 200, text };
    });
    const secrets = await issuer(fake.fetch).revealSecrets('c0d1e2f3-a4b5-4c6d-8e7f-901a2b3c4d5e');
    expect(secrets).to.deep.equal({ cardNumber: '4111111111111111', cvc: '123', expirationMonth: '03', expirationYear: '29' });
    expect(fake.calls[0]?.url).to.equal('https://rain.test/v1/issuing/cards/c0d1e2f3-a4b5-4c6d-8e7f-901a2b3c4d5e/secrets');
  });

  it('sets and reads a PIN as an encrypted ISO format 2 block, never in clear on the wire', async () => {
    let stored: { iv: string; data: string } | null = null;
    const fake = fakeFetch((request) => {
      const key = sessionKeyOf(request.headers.sessionid as string);
      if (request.method === 'PUT') {
        const sent = (request.body as { encryptedPin: { iv: string; data: string } }).encryptedPin;
        stored = encryptSecret(key, decryptSecret(key, sent));
        return { status: 200, text: '{}' };
      }
      return { status: 200, text: JSON.stringify({ encryptedPin: encryptSecret(key, pinBlock('2580')) }) };
    });
    const rain = issuer(fake.fetch);
    await rain.setPin('card-ref', '2580');
    expect(JSON.stringify(fake.calls[0]?.body)).not.to.contain('2580');
    expect(stored).to.not.equal(null);
    expect(await rain.revealPin('card-ref')).to.equal('2580');
    expect(pinBlock('2580')).to.equal('242580FFFFFFFFFF');
    expect(pinFromBlock('242580FFFFFFFFFF')).to.equal('2580');
  });

  it('parses a signed user webhook into the application status, and refuses a bad signature', () => {
    const raw = Buffer.from(fixture('rain-webhook-user-denied.json'));
    const signature = createHmac('sha256', WEBHOOK_SECRET).update(raw).digest('hex');
    const rain = issuer(fakeFetch(() => ({ status: 500, text: '' })).fetch);
    expect(rain.parseWebhook(raw, { signature })).to.deep.equal({
      eventId: 'e9f8a7b6-c5d4-4e3f-a2b1-c0d9e8f7a6b5',
      issuerApplicationId: '7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f',
      externalStatus: 'denied',
      status: 'declined',
      reason: 'Sanctions screening match',
      occurredAt: '2026-11-21T08:30:00.000Z',
    });
    expect(() => rain.parseWebhook(raw, {})).to.throw(WebhookSignatureError);
    expect(() => rain.parseWebhook(raw, { signature: createHmac('sha256', 'other').update(raw).digest('hex') })).to.throw(WebhookSignatureError);
  });
});
