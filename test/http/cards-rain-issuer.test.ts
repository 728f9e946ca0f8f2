import { createHmac, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config';
import { RainCardIssuer } from '../../src/providers/cards/rain';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { customer } from '../support/ledger';

const fixture = (name: string) => readFileSync(path.join(__dirname, '..', 'providers', 'fixtures', name), 'utf8');
const PUBLIC_PEM = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
/** The settings as an environment carries them: the PEM on one line, its line breaks written \n. */
const RAIN = {
  CARD_ISSUER: 'rain',
  RAIN_API_KEY: 'rain_test_key',
  RAIN_PUBLIC_KEY: PUBLIC_PEM.replace(/\n/g, '\\n'),
  RAIN_WEBHOOK_SECRET: 'rain_webhook_secret_test',
};

describe('the card issuer the configuration selects', () => {
  describe('CARD_ISSUER and the Rain settings', () => {
    it('is the sandbox issuer by default', () => {
      const config = loadConfig({});
      expect([config.cardIssuer, config.rain]).to.deep.equal(['sandbox', undefined]);
      expect(loadConfig({ CARD_ISSUER: 'sandbox' }).cardIssuer).to.equal('sandbox');
    });

    it('is Rain with its three settings, the PEM read back with its line breaks', () => {
      const config = loadConfig({ ...RAIN, RAIN_BASE_URL: 'https://rain.test/v1' });
      expect(config.cardIssuer).to.equal('rain');
      expect(config.rain).to.deep.equal({
        apiKey: 'rain_test_key',
        publicKeyPem: PUBLIC_PEM,
        webhookSecret: 'rain_webhook_secret_test',
        baseUrl: 'https://rain.test/v1',
      });
    });

    it('refuses an incomplete Rain configuration, naming every missing setting, and an issuer it does not have', () => {
      expect(() => loadConfig({ CARD_ISSUER: 'rain' })).to.throw(
        "CARD_ISSUER=rain needs RAIN_API_KEY, RAIN_PUBLIC_KEY, RAIN_WEBHOOK_SECRET (Rain's API key, its RSA public key in PEM, the callbacks' signing secret)",
      );
      for (const name of ['RAIN_API_KEY', 'RAIN_PUBLIC_KEY', 'RAIN_WEBHOOK_SECRET'] as const) {
        expect(() => loadConfig({ ...RAIN, [name]: '' })).to.throw(new RegExp(`^CARD_ISSUER=rain needs ${name} \\(`));
      }
      expect(() => loadConfig({ ...RAIN, RAIN_PUBLIC_KEY: 'not a key' })).to.throw('RAIN_PUBLIC_KEY must be a PEM public key (-----BEGIN PUBLIC KEY-----)');
      expect(() => loadConfig({ CARD_ISSUER: 'visa' })).to.throw('CARD_ISSUER must be one of sandbox, rain, got visa');
    });

    it('is Rain outside sandbox mode, where there is no sandbox issuer', () => {
      const production = {
        NODE_ENV: 'production',
        SMTP_URL: 'smtp://mail.example.com:587',
        IDENTITY_PROVIDER: 'persona',
        PERSONA_API_KEY: 'k',
        PERSONA_TEMPLATE_ID: 't',
        PERSONA_WEBHOOK_SECRET: 's',
      };
      expect(() => loadConfig(production)).to.throw(/CARD_ISSUER \(is sandbox; outside sandbox mode the card issuer is rain\)/);
      expect(loadConfig({ ...production, ...RAIN })).to.include({ sandbox: false, cardIssuer: 'rain' });
    });
  });

  describe('over HTTP, with CARD_ISSUER=rain and Rain answering on this machine (real Postgres)', function () {
    this.timeout(60_000);
    let rain: Server;
    let app: Awaited<ReturnType<typeof startTestApp>>;
    let acme: PartnerCredentials;
    const calls: string[] = [];

    before(async () => {
      // Rain as recorded: an application is pending until Rain decides it.
      const pending = fixture('rain-application-pending.json');
      rain = createServer((req, res) => {
        calls.push(`${req.method} ${req.url} ${req.headers['api-key']}`);
        req.resume();
        res.writeHead(req.url?.startsWith('/v1/issuing/applications/user') ? 200 : 404, { 'content-type': 'application/json' });
        res.end(req.url?.startsWith('/v1/issuing/applications/user') ? pending : '{"message":"not found"}');
      });
      await new Promise<void>((resolve) => rain.listen(0, '127.0.0.1', resolve));
      const config = loadConfig({ ...RAIN, RAIN_BASE_URL: `http://127.0.0.1:${(rain.address() as AddressInfo).port}/v1` });
      app = await startTestApp({ cardIssuer: config.cardIssuer, rain: config.rain });
      acme = await createPartner(app.http);
    });

    after(async () => {
      await app?.close();
      await new Promise((resolve) => rain?.close(resolve));
    });

    it('sends new applications to Rain, shows its status word, and takes its signed callbacks at /webhooks/cards/rain', async () => {
      expect(app.tally.cards.applications.issuer()).to.be.instanceOf(RainCardIssuer);
      const ada = await customer(app.http, acme);
      const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      expect(applied.status, JSON.stringify(applied.body)).to.equal(201);
      const issuerApplicationId = JSON.parse(fixture('rain-application-pending.json')).id;
      expect(applied.body.data.application).to.include({ applicationStatus: 'pending', issuerApplicationId });
      expect(calls[0]).to.equal('POST /v1/issuing/applications/user rain_test_key');
      const status = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(status.body.data.statusSummary).to.deep.equal({ local: 'pending', external: 'manualReview', synced: true });
      expect(calls).to.include(`GET /v1/issuing/applications/user/${issuerApplicationId} rain_test_key`);

      // Rain's callback, as recorded, about this application: signed, it decides it; unsigned, nothing changes.
      const event = JSON.parse(fixture('rain-webhook-user-denied.json'));
      const raw = Buffer.from(JSON.stringify({ ...event, body: { ...event.body, id: issuerApplicationId } }));
      const unsigned = await app.http.post('/webhooks/cards/rain').set('content-type', 'application/json').send(raw.toString());
      expect([unsigned.status, unsigned.body.error]).to.deep.equal([401, 'Invalid webhook signature']);
      const signature = createHmac('sha256', RAIN.RAIN_WEBHOOK_SECRET).update(raw).digest('hex');
      const signed = await app.http.post('/webhooks/cards/rain').set({ 'content-type': 'application/json', signature }).send(raw.toString());
      expect(signed.status, JSON.stringify(signed.body)).to.equal(200);
      const decided = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(decided.body.data.application).to.include({ applicationStatus: 'declined', applicationReason: 'Sanctions screening match' });
    });
  });
});
