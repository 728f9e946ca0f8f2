import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { expect } from 'chai';
import { LIMITS } from '../../src/platform/limits';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { sharedCluster } from '../support/postgres';
import { CuttableProxy } from '../support/proxy';

describe('HTTP foundation', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  before(async () => {
    app = await startTestApp();
    partner = await createPartner(app.http);
  });
  after(async () => {
    await app.close();
  });

  it("asks the kernel to queue a burst of new connections (listen backlog 4,096, not Node's 511), so none is dropped and retried seconds later", function () {
    let listening: string;
    try {
      listening = execFileSync('ss', ['-ltnH', `sport = :${new URL(app.url).port}`], { encoding: 'utf8' });
    } catch {
      // No `ss` (iproute2) on this machine: the socket's backlog cannot be read here.
      this.skip();
    }
    // A listening socket's Send-Q is its backlog; the kernel caps what was asked at net.core.somaxconn.
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    const backlog = Number(listening.trim().split('\n')[0]?.split(/\s+/)[2]);
    expect(backlog).to.equal(Math.min(LIMITS.http.listenBacklog, somaxconn));
  });

  it("keeps an idle keep-alive connection past a client pool's 5 s, so a request sent on it then is answered, not reset", async function () {
    this.timeout(20_000);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; port: number }>((resolve, reject) => {
        const req = request(`${app.url}/healthz`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, port: req.socket?.localPort ?? 0 }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const first = await get();
      // Node's own server closes an idle connection after 5 s; the client's pool would write on it meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      const second = await get();
      expect([first.status, second.status]).to.deep.equal([200, 200]);
      expect(second.port, 'the same connection').to.equal(first.port);
    } finally {
      agent.destroy();
    }
  });

  it('answers an unknown route with 404 "Not found" in the error envelope', async () => {
    const res = await app.http.get('/api/v1/nothing-here');
    expect(res.status).to.equal(404);
    expect(res.body).to.include({ success: false, error: 'Not found' });
  });

  it('answers a path without parameters the same however it is spelled (exact lookup or express router)', async () => {
    // The exact spelling is found by one lookup; a trailing slash, another case or HEAD go through
    // express's router. All must reach the same handler, with the same errors.
    const exact = await app.http.get('/api/v1/exchanges/assets/public');
    expect(exact.status).to.equal(200);
    for (const path of ['/api/v1/exchanges/assets/public/', '/API/v1/Exchanges/assets/PUBLIC']) {
      const res = await app.http.get(path);
      expect(res.status, path).to.equal(200);
      expect(res.body, path).to.deep.equal(exact.body);
    }
    const head = await app.http.head('/api/v1/exchanges/assets/public');
    expect(head.status).to.equal(200);
    expect(head.headers['content-type']).to.equal(exact.headers['content-type']);
    for (const path of ['/api/v1/partner/users', '/api/v1/partner/users/']) {
      const res = await app.http.post(path).set(partner.headers).send({ email: 'not an email' });
      expect(res.status, path).to.equal(400);
      expect(res.body.success, path).to.equal(false);
    }
    const first = await app.http.post('/api/v1/partner/users').set(partner.headers).set('X-Request-Id', 'same-request').send({ email: 'not an email' });
    const second = await app.http.post('/api/v1/partner/users/').set(partner.headers).set('X-Request-Id', 'same-request').send({ email: 'not an email' });
    expect(second.body).to.deep.equal(first.body);
    expect(first.body.requestId).to.equal('same-request');
    const unauthenticated = await app.http.post('/api/v1/transactions/transfer').send({ toAccountId: 1, amount: '1', description: 'x' });
    expect(unauthenticated.status).to.equal(401);
    expect(unauthenticated.headers['x-request-id']).to.be.a('string');
  });

  it('has no route for the removed POST /api/v1/partner/auth/token', async () => {
    const res = await app.http.post('/api/v1/partner/auth/token').set(partner.headers).send({ userId: 'x' });
    expect(res.status).to.equal(404);
    expect(res.body.error).to.equal('Not found');
  });

  it('answers malformed JSON with 400 "Invalid JSON body" and writes nothing', async () => {
    const res = await app.http.post('/api/v1/partner/users').set(partner.headers).set('Content-Type', 'application/json').send('{"email": "a@b.co",');
    expect(res.status).to.equal(400);
    expect(res.body).to.include({ success: false, error: 'Invalid JSON body' });
    const list = await app.http.get('/api/v1/partner/users').set(partner.headers);
    expect(list.body.data.meta.totalItems).to.equal(0);
  });

  it('answers a body over 100 kB with 413', async () => {
    const res = await app.http
      .post('/api/v1/partner/users')
      .set(partner.headers)
      .send({ email: uniqueEmail(), countryCode: 'CO', padding: 'x'.repeat(110_000) });
    expect(res.status).to.equal(413);
    expect(res.body.success).to.equal(false);
  });

  it('answers a JSON body that is not an object with 400', async () => {
    const res = await app.http.post('/api/v1/partner/users').set(partner.headers).set('Content-Type', 'application/json').send('[1,2]');
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('Request body must be a JSON object');
  });

  it('puts a request id on every response, keeping a sane incoming one', async () => {
    const fresh = await app.http.get('/healthz');
    expect(fresh.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    const kept = await app.http.get('/nothing').set('X-Request-Id', 'trace-123');
    expect(kept.headers['x-request-id']).to.equal('trace-123');
    const replaced = await app.http.get('/healthz').set('X-Request-Id', 'bad id with spaces');
    expect(replaced.headers['x-request-id']).to.not.equal('bad id with spaces');
  });

  it('serves /healthz, /readyz with projection lag, and Prometheus /metrics', async () => {
    expect((await app.http.get('/healthz')).body).to.deep.equal({ status: 'ok' });
    const ready = await app.http.get('/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body.status).to.equal('ready');
    expect(ready.body.projections.map((p: { name: string }) => p.name)).to.include.members(['partners', 'users']);
    // ADMIN_TOKEN is set here: /metrics is the operator's.
    expect((await app.http.get('/metrics')).status).to.equal(401);
    expect((await app.http.get('/metrics').set('Authorization', 'Bearer wrong')).status).to.equal(401);
    const metrics = await app.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(metrics.status).to.equal(200);
    expect(metrics.text).to.match(/tally_http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    // The domain's figures, read at the scrape.
    expect(metrics.text).to.match(/^tally_projection_lag_events\{projection="ledger"\} \d+$/m);
    expect(metrics.text).to.match(/^tally_projection_stopped_seconds\{projection="users"\} 0$/m);
    expect(metrics.text).to.match(/^tally_projections_scrape_ok 1$/m);
    expect(metrics.text).to.match(/^tally_store_available 1$/m);
    // Node's process figures stay, the event loop's delay among them (sampled every 100 ms, platform/http/metrics.ts).
    expect(metrics.text).to.match(/^nodejs_eventloop_lag_max_seconds \d/m);
    expect(metrics.text).to.match(/^tally_log_append_batches_total [1-9]\d*$/m);
    expect(metrics.text).to.match(/^tally_log_append_held_back_total \d+$/m);
    // The log's latency: every request timed, in batches timed too.
    const count = (name: string) => Number(new RegExp(`^${name}_count (\\d+)$`, 'm').exec(metrics.text)?.[1]);
    expect(count('tally_log_append_batch_seconds')).to.be.at.least(1);
    expect(count('tally_log_append_seconds')).to.be.at.least(count('tally_log_append_batch_seconds'));
    expect(metrics.text).to.match(/^tally_log_append_seconds_bucket\{le="0.001"\} \d+$/m);
  });

  it('documents every served route in OpenAPI 3.1 and renders /docs', async () => {
    const doc = await app.http.get('/api/v1/openapi.json');
    expect(doc.status).to.equal(200);
    expect(doc.body.openapi).to.equal('3.1.0');
    // The request body is a named schema (components.schemas), referenced from the operation.
    const ref: string = doc.body.paths['/api/v1/partner/users'].post.requestBody.content['application/json'].schema.$ref;
    expect(doc.body.components.schemas[ref.replace('#/components/schemas/', '')].required).to.include.members(['email', 'countryCode']);
    expect(doc.body.paths['/api/v1/partner/users/{userId}'].get.parameters[0]).to.include({ name: 'userId', in: 'path', required: true });
    const docs = await app.http.get('/docs');
    expect(docs.status).to.equal(200);
    expect(docs.headers['content-type']).to.match(/text\/html/);
    expect(docs.text).to.contain('/api/v1/partner/users');
  });

  describe('rate limits', () => {
    it('answers 429 "Too many requests" with Retry-After past a partner key’s burst', async () => {
      const limited = await startTestApp({ rateLimit: { partnerRps: 2, userRps: 0, ipRps: 0 } });
      try {
        const p = await createPartner(limited.http);
        const statuses: number[] = [];
        let retryAfter: string | undefined;
        for (let i = 0; i < 6; i++) {
          const res = await limited.http.get('/api/v1/partner/users').set(p.headers);
          statuses.push(res.status);
          if (res.status === 429) {
            retryAfter = res.headers['retry-after'];
            expect(res.body).to.include({ success: false, error: 'Too many requests' });
          }
        }
        expect(statuses.slice(0, 4)).to.deep.equal([200, 200, 200, 200]);
        expect(statuses).to.include(429);
        expect(Number(retryAfter)).to.be.at.least(1);
      } finally {
        await limited.close();
      }
    });

    it('limits per client IP as well', async () => {
      const limited = await startTestApp({ rateLimit: { partnerRps: 0, userRps: 0, ipRps: 1 } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) statuses.push((await limited.http.get('/healthz')).status);
        expect(statuses.slice(0, 2)).to.deep.equal([200, 200]);
        expect(statuses.at(-1)).to.equal(429);
      } finally {
        await limited.close();
      }
    });
  });

  describe('when the store is down', () => {
    it('answers 503 "Service unavailable", writes nothing, and recovers', async () => {
      const direct = new URL(await (await sharedCluster()).freshDatabase());
      const proxy = new CuttableProxy(direct.hostname, Number(direct.port));
      await proxy.open();
      const viaProxy = new URL(direct.toString());
      viaProxy.port = String(proxy.port);
      const fragile = await startTestApp({ databaseUrl: viaProxy.toString() });
      try {
        const p = await createPartner(fragile.http);
        const email = uniqueEmail('down');
        await proxy.cut();
        const res = await fragile.http.post('/api/v1/partner/users').set(p.headers).send({ email, countryCode: 'CO' });
        expect(res.status).to.equal(503);
        expect(res.body).to.include({ success: false, error: 'Service unavailable' });
        expect((await fragile.http.get('/readyz')).status).to.equal(503);
        await proxy.restore();
        const list = await fragile.http.get('/api/v1/partner/users').set(p.headers);
        expect(list.status).to.equal(200);
        expect(list.body.data.meta.totalItems).to.equal(0);
        const again = await fragile.http.post('/api/v1/partner/users').set(p.headers).send({ email, countryCode: 'CO' });
        expect(again.status).to.equal(201);
      } finally {
        await proxy.restore().catch(() => {});
        await fragile.close();
        await proxy.cut();
      }
    });
  });
});
