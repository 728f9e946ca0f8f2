import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { createPartner, lastWritten, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer } from '../support/ledger';

/**
 * What an attacker still found (hardening, round two): inputs that answered 500, a forwarded header
 * stored as a client address, webhook urls that led back inside, and a sandbox route that answered
 * outside sandbox mode. Each is answered as decisions' "Input and hardening" and "Partner
 * notifications" say, and writes nothing.
 */
describe('hardening, round two: what an attacker still found', function () {
  this.timeout(60_000);

  describe('in sandbox mode, behind a trusted proxy', () => {
    let app: Awaited<ReturnType<typeof startTestApp>>;
    let acme: PartnerCredentials;
    let ada: Customer;

    before(async () => {
      app = await startTestApp({ trustProxy: 'loopback' });
      acme = await createPartner(app.http, 'Round Two');
      ada = await customer(app.http, acme);
    });
    after(() => app?.close());

    const NON_FINITE: Array<[string, string]> = [
      ['limit', 'Infinity'],
      ['limit', '1e400'],
      ['limit', '-Infinity'],
      ['page', '-1e400'],
      ['page', 'Infinity'],
    ];

    it('answers 400 naming the field for a non-finite number in a query, on every list, and writes nothing', async () => {
      const lists: Array<[string, Record<string, string>, string[]]> = [
        ['/api/v1/partner/users', acme.headers, ['limit', 'page']],
        ['/api/v1/cards/transactions', ada.bearer, ['limit']],
        ['/api/v1/partner/webhooks/deliveries', acme.headers, ['limit']],
        ['/sandbox/v1/webhook-inbox', acme.headers, ['limit']],
      ];
      for (const [path, headers, fields] of lists) {
        for (const [field, value] of NON_FINITE.filter(([f]) => fields.includes(f))) {
          const before = await lastWritten(app);
          const res = await app.http.get(`${path}?${field}=${encodeURIComponent(value)}`).set(headers);
          expect([res.status, res.body.error, res.body.code], `${path} ${field}=${value}`).to.deep.equal([
            400,
            `${field} must be a finite number`,
            'validation_error',
          ]);
          expect(await lastWritten(app)).to.equal(before);
        }
      }
    });

    it('records a card application with the peer address when X-Forwarded-For names no IP address', async () => {
      for (const forwarded of ['<script>alert(1)</script>', 'x'.repeat(8_000), 'not-an-ip\u0085', '1.2.3.4.5']) {
        const who = await customer(app.http, acme);
        const res = await app.http
          .post('/api/v1/cards/application')
          .set(who.bearer)
          .set('X-Forwarded-For', forwarded)
          .send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        expect(res.body.data.application.ipAddress, forwarded.slice(0, 20)).to.be.oneOf(['127.0.0.1', '::ffff:127.0.0.1', '::1']);
      }
      // A forwarded IP address from a trusted proxy is the client's.
      const who = await customer(app.http, acme);
      const res = await app.http
        .post('/api/v1/cards/application')
        .set(who.bearer)
        .set('X-Forwarded-For', '203.0.113.9')
        .send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      expect(res.status).to.equal(201);
      expect(res.body.data.application.ipAddress).to.equal('203.0.113.9');
    });

    it('answers 401, not 500, to an inbox signature of the right length in characters but not in bytes', async () => {
      const put = await app.http
        .put('/api/v1/partner/webhooks')
        .set(acme.headers)
        .send({ url: `${app.url}/sandbox/v1/webhook-inbox` });
      expect(put.status).to.equal(200);
      // A delivery id the service knows, so the check reaches the signature comparison.
      const [delivery] = await app.tally.sql.query<{ id: string }>('SELECT id::text FROM webhook_deliveries LIMIT 1');
      const id = delivery?.id ?? (await oneDelivery());
      const timestamp = String(Math.floor(Date.now() / 1000));
      const raw = '{"id":"x"}';
      const real = `v1,${createHmac('sha256', Buffer.from(put.body.data.secret.slice('whsec_'.length), 'base64'))
        .update(`${id}.${timestamp}.${raw}`)
        .digest('base64')}`;
      // Header bytes are read as latin1: é sent as UTF-8 arrives as two characters (Ã©) of two bytes each,
      // so these arrive as long in characters as the real signature and longer in bytes.
      const wide = `${real.slice(0, -2)}é`;
      for (const signature of [wide, `v1,${'é'.repeat((real.length - 3) / 2)}`]) {
        const res = await app.http
          .post('/sandbox/v1/webhook-inbox')
          .set({ 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature })
          .send(raw);
        expect([res.status, res.body.error]).to.deep.equal([401, 'Invalid webhook signature']);
      }
    });

    /** Makes the service send one notification (a user created), and waits for its delivery row. */
    async function oneDelivery(): Promise<string> {
      await customer(app.http, acme);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const [row] = await app.tally.sql.query<{ id: string }>('SELECT id::text FROM webhook_deliveries LIMIT 1');
        if (row) return row.id;
        if (Date.now() > deadline) throw new Error('no delivery was made');
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });

  describe('outside sandbox mode (production)', () => {
    let app: Awaited<ReturnType<typeof startTestApp>>;
    let acme: PartnerCredentials;

    before(async () => {
      app = await startTestApp({ sandbox: false });
      acme = await createPartner(app.http, 'Round Two Live');
      const publicOnly = async () => [{ address: '93.184.215.14', family: 4 }];
      Object.assign(app.tally.notifications.endpoints, { resolve: publicOnly });
    });
    after(() => app?.close());

    it('refuses webhook urls that carry a loopback IPv4 address, Teredo, and any port but 443', async () => {
      const refused: Array<[string, string]> = [
        ['https://[::127.0.0.1]/', 'url must not point to a private, loopback or link-local address'],
        ['https://[::ffff:0:7f00:1]/', 'url must not point to a private, loopback or link-local address'],
        ['https://[2002:7f00:1::1]/', 'url must not point to a private, loopback or link-local address'],
        ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'url must not point to a private, loopback or link-local address'],
        ['https://hooks.example.com:8443/', 'url must use the https port (443)'],
        ['https://hooks.example.com:22/', 'url must use the https port (443)'],
      ];
      for (const [url, error] of refused) {
        const before = await lastWritten(app);
        const res = await app.http.put('/api/v1/partner/webhooks').set(acme.headers).send({ url });
        expect([res.status, res.body.error], url).to.deep.equal([400, error]);
        expect(await lastWritten(app), url).to.equal(before);
      }
      const ok = await app.http.put('/api/v1/partner/webhooks').set(acme.headers).send({ url: 'https://hooks.example.com:443/tally' });
      expect([ok.status, ok.body.data?.url]).to.deep.equal([200, 'https://hooks.example.com/tally']);
    });

    it('answers 404 on every sandbox route, whatever it is sent', async () => {
      for (const query of ['', '?to=not-an-email', '?to=ada%40example.com']) {
        const res = await app.http.get(`/sandbox/v1/emails${query}`).set(acme.headers);
        expect([res.status, res.body.error, res.body.code], query).to.deep.equal([404, 'Not found', 'not_found']);
      }
      const bad = await app.http.post('/sandbox/v1/kyc/x/complete').set(acme.headers).send({ outcome: 'nonsense' });
      expect([bad.status, bad.body.error]).to.deep.equal([404, 'Not found']);
      const inbox = await app.http.get('/sandbox/v1/webhook-inbox?limit=Infinity').set(acme.headers);
      expect([inbox.status, inbox.body.error]).to.deep.equal([404, 'Not found']);
      const doc = await app.http.get('/api/v1/openapi.json');
      expect(Object.keys(doc.body.paths).filter((p) => p.startsWith('/sandbox/'))).to.deep.equal([]);
    });
  });
});
