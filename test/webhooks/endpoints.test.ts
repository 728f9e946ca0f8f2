import { expect } from 'chai';
import type { Resolver } from '../../src/providers/notifications/address-guard';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { registerUser } from '../support/identity';

const ALL_TYPES = [
  'user.status.updated',
  'kyc.status.updated',
  'deposit.completed',
  'deposit.failed',
  'transfer.completed',
  'payout.updated',
  'card.application.updated',
  'card.updated',
  'card.transaction.created',
  'card.transaction.updated',
];

describe('partner webhook endpoint configuration over HTTP', () => {
  describe('in sandbox mode', () => {
    let app: Awaited<ReturnType<typeof startTestApp>>;
    let acme: PartnerCredentials;
    let globex: PartnerCredentials;

    before(async () => {
      app = await startTestApp();
      acme = await createPartner(app.http, 'Acme');
      globex = await createPartner(app.http, 'Globex');
    });
    after(async () => {
      await app.close();
    });

    const put = (partner: PartnerCredentials, body: unknown) =>
      app.http
        .put('/api/v1/partner/webhooks')
        .set(partner.headers)
        .send(body as object);

    it('answers 404 on GET and on rotation before any endpoint is configured', async () => {
      const read = await app.http.get('/api/v1/partner/webhooks').set(globex.headers);
      expect(read.status).to.equal(404);
      expect(read.body).to.include({ success: false, error: 'Webhook endpoint not configured', code: 'webhook_endpoint_not_configured' });
      const rotate = await app.http.post('/api/v1/partner/webhooks/secret/rotate').set(globex.headers).send();
      expect(rotate.status).to.equal(404);
      expect(rotate.body).to.include({ error: 'Webhook endpoint not configured', code: 'webhook_endpoint_not_configured' });
    });

    it('configures an endpoint for every type when events are omitted, shows the secret on PUT only', async () => {
      const res = await put(acme, { url: 'http://127.0.0.1:9/hooks' });
      expect(res.status).to.equal(200);
      expect(res.body.success).to.equal(true);
      expect(Object.keys(res.body.data).sort()).to.deep.equal(['events', 'secret', 'url']);
      expect(res.body.data.url).to.equal('http://127.0.0.1:9/hooks');
      expect(res.body.data.events).to.deep.equal(ALL_TYPES);
      expect(res.body.data.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(res.headers['cache-control']).to.equal('no-store');
      const read = await app.http.get('/api/v1/partner/webhooks').set(acme.headers);
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal({ success: true, data: { url: 'http://127.0.0.1:9/hooks', events: ALL_TYPES } });
    });

    it('keeps the secret when a later PUT changes the url or the types', async () => {
      const first = await put(acme, { url: 'http://127.0.0.1:9/a' });
      const second = await put(acme, { url: 'https://127.0.0.1:9/b', events: ['deposit.completed', 'payout.updated', 'deposit.completed'] });
      expect(second.status).to.equal(200);
      expect(second.body.data).to.deep.equal({ url: 'https://127.0.0.1:9/b', events: ['deposit.completed', 'payout.updated'], secret: first.body.data.secret });
      const read = await app.http.get('/api/v1/partner/webhooks').set(acme.headers);
      expect(read.body.data.events).to.deep.equal(['deposit.completed', 'payout.updated']);
    });

    it('refuses an unknown event type and a url that is not http(s), changing nothing', async () => {
      const before = await app.http.get('/api/v1/partner/webhooks').set(acme.headers);
      const unknown = await put(acme, { url: 'http://127.0.0.1:9/x', events: ['deposit.completed', 'money.printed'] });
      expect(unknown.status).to.equal(400);
      expect(unknown.body).to.include({ success: false, error: 'Unknown event type: money.printed', code: 'unknown_event_type', param: 'events' });
      const ftp = await put(acme, { url: 'ftp://127.0.0.1/x' });
      expect(ftp.status).to.equal(400);
      expect(ftp.body).to.include({ error: 'url must use https or http', code: 'webhook_url_not_http_or_https', param: 'url' });
      const relative = await put(acme, { url: '/hooks' });
      expect(relative.status).to.equal(400);
      expect(relative.body).to.include({ error: 'url must be an absolute URL', code: 'webhook_url_not_absolute', param: 'url' });
      const credentials = await put(acme, { url: 'http://user:pass@127.0.0.1:9/x' });
      expect([credentials.status, credentials.body.error, credentials.body.code]).to.deep.equal([
        400,
        'url must not contain credentials',
        'webhook_url_has_credentials',
      ]);
      const fragment = await put(acme, { url: 'http://127.0.0.1:9/x#part' });
      expect([fragment.status, fragment.body.error, fragment.body.code]).to.deep.equal([400, 'url must not contain a fragment', 'webhook_url_has_fragment']);
      const long = await put(acme, { url: `http://127.0.0.1:9/${'a'.repeat(2_100)}` });
      expect(long.status).to.equal(400);
      expect(long.body.error).to.contain('url');
      const missing = await put(acme, { events: [] });
      expect(missing.status).to.equal(400);
      expect(missing.body.error).to.contain('url');
      const after = await app.http.get('/api/v1/partner/webhooks').set(acme.headers);
      expect(after.body).to.deep.equal(before.body);
    });

    it('rotates the secret: a new one, the previous one signing for 24 more hours', async () => {
      const current = await put(acme, { url: 'http://127.0.0.1:9/r' });
      const res = await app.http.post('/api/v1/partner/webhooks/secret/rotate').set(acme.headers).send();
      expect(res.status).to.equal(200);
      expect(res.body.data.secret).to.match(/^whsec_/);
      expect(res.body.data.secret).to.not.equal(current.body.data.secret);
      expect(Date.parse(res.body.data.previousSecretExpiresAt) - Date.now()).to.be.closeTo(24 * 3600 * 1000, 60_000);
      const again = await put(acme, { url: 'http://127.0.0.1:9/r' });
      expect(again.body.data.secret).to.equal(res.body.data.secret);
    });

    it('keeps secrets out of the log in clear', async () => {
      const res = await put(globex, { url: 'http://127.0.0.1:9/g' });
      const events = await app.tally.store.readStream(`partner-webhooks-${globex.id}`);
      expect(events.map((e) => e.type)).to.deep.equal(['WebhookEndpointConfigured', 'WebhookSecretIssued']);
      expect(JSON.stringify(events)).to.not.contain(res.body.data.secret);
      expect(JSON.stringify(events)).to.not.contain(res.body.data.secret.slice(6));
    });

    it("never shows one partner's endpoint to another", async () => {
      await put(acme, { url: 'http://127.0.0.1:9/acme-only' });
      const read = await app.http.get('/api/v1/partner/webhooks').set(globex.headers);
      expect(read.body.data.url).to.equal('http://127.0.0.1:9/g');
    });
  });

  describe('outside sandbox mode', () => {
    let app: Awaited<ReturnType<typeof startTestApp>>;
    let acme: PartnerCredentials;

    before(async () => {
      app = await startTestApp({ sandbox: false });
      acme = await createPartner(app.http, 'Acme');
    });
    after(async () => {
      await app.close();
    });

    const put = (url: string) => app.http.put('/api/v1/partner/webhooks').set(acme.headers).send({ url });

    it('refuses http', async () => {
      const res = await put('http://93.184.216.34/hooks');
      expect(res.status).to.equal(400);
      expect(res.body).to.include({ success: false, error: 'url must use https', code: 'webhook_url_not_https', param: 'url' });
    });

    for (const target of [
      'https://127.0.0.1/hooks',
      'https://localhost/hooks',
      'https://10.1.2.3/hooks',
      'https://172.16.0.5/hooks',
      'https://192.168.1.1/hooks',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hooks',
      'https://[fe80::1]/hooks',
      'https://[fd00::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://0.0.0.0/hooks',
    ]) {
      it(`refuses ${target} (SSRF)`, async () => {
        const res = await put(target);
        expect(res.status).to.equal(400);
        expect(res.body).to.include({
          success: false,
          error: 'url must not point to a private, loopback or link-local address',
          code: 'webhook_url_private_address',
          param: 'url',
        });
      });
    }

    it('refuses another port than 443, and a host that does not resolve, each with its code', async () => {
      const port = await put('https://hooks.example.com:8443/');
      expect([port.status, port.body.error, port.body.code, port.body.param]).to.deep.equal([
        400,
        'url must use the https port (443)',
        'webhook_url_port_not_allowed',
        'url',
      ]);
      const { endpoints } = app.tally.notifications;
      const saved = endpoints.resolve;
      Object.assign(endpoints, { resolve: (async () => Promise.reject(new Error('ENOTFOUND'))) as Resolver });
      try {
        const nowhere = await put('https://nowhere.example/hooks');
        expect([nowhere.status, nowhere.body.error, nowhere.body.code]).to.deep.equal([400, 'url host does not resolve', 'webhook_url_host_unresolvable']);
      } finally {
        Object.assign(endpoints, { resolve: saved });
      }
    });

    it('accepts https to a public address', async () => {
      const res = await put('https://93.184.216.34/hooks');
      expect(res.status).to.equal(200);
      expect(res.body.data.url).to.equal('https://93.184.216.34/hooks');
    });

    it('refuses at delivery a name that answered a public address when set and a loopback one at the connection (DNS rebinding)', async () => {
      const asked: string[] = [];
      // The name's answer changes after the first lookup (the PUT's check): a public address, then loopback.
      const rebinding: Resolver = async (host) => {
        asked.push(host);
        return [{ address: asked.length === 1 ? '93.184.216.34' : '127.0.0.1', family: 4 }];
      };
      const { endpoints, dispatcher } = app.tally.notifications;
      const saved = { put: endpoints.resolve, delivery: dispatcher.options.resolve };
      Object.assign(endpoints, { resolve: rebinding });
      Object.assign(dispatcher.options, { resolve: rebinding });
      try {
        const partner = await createPartner(app.http, 'Rebinding');
        // Port 443 only outside sandbox mode: without the guard this would connect to 127.0.0.1:443,
        // and the attempt would fail with a connection error, not the guard's refusal.
        const put = await app.http
          .put('/api/v1/partner/webhooks')
          .set(partner.headers)
          .send({ url: 'https://rebind.example/hooks', events: ['user.status.updated'] });
        expect(put.status, JSON.stringify(put.body)).to.equal(200);
        const user = await registerUser(app.http, partner);
        expect((await app.http.post(`/admin/v1/users/${user.id}/suspend`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({})).status).to.equal(200);
        const deadline = Date.now() + 10_000;
        let attempts: Array<{ error: string | null; httpStatus: number | null }> = [];
        while (attempts.length === 0 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
          const page = (await app.http.get('/api/v1/partner/webhooks/deliveries').set(partner.headers)).body.data;
          attempts = page.items.flatMap((d: { attempts: typeof attempts }) => d.attempts);
        }
        expect(attempts.length, 'an attempt was made').to.be.above(0);
        for (const a of attempts) expect(a).to.deep.equal({ ...a, httpStatus: null, error: 'refused: rebind.example resolves to a non-public address' });
        expect(asked.slice(0, 2)).to.deep.equal(['rebind.example', 'rebind.example']);
      } finally {
        Object.assign(endpoints, { resolve: saved.put });
        Object.assign(dispatcher.options, { resolve: saved.delivery });
      }
    });

    it('has no webhook inbox (404): it is a sandbox receiver', async () => {
      const read = await app.http.get('/sandbox/v1/webhook-inbox').set(acme.headers);
      const post = await app.http.post('/sandbox/v1/webhook-inbox').send({});
      expect([read.status, post.status]).to.deep.equal([404, 404]);
    });
  });
});
