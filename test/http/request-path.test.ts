import { expect } from 'chai';
import { IncomingMessage } from 'node:http';
import type { Response } from 'supertest';
import { createPartner, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';

/**
 * Every request takes one path, through express and the route table. A path asked for exactly and
 * with a trailing slash must get the same answer, whatever its body, query or credentials.
 */
describe('HTTP request path (one, through express)', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  /** Per request path, whether express handled it (it swaps the request's prototype). */
  const viaExpress = new Map<string, boolean>();
  /** Per request path, whether node made the request with express's prototype already (expressServerOptions). */
  const bornForExpress = new Map<string, boolean>();

  before(async () => {
    app = await startTestApp();
    partner = await createPartner(app.http, 'Front');
    app.server.on('request', (req: IncomingMessage, res) => {
      bornForExpress.set(`${req.method} ${req.url}`, Object.getPrototypeOf(req) !== IncomingMessage.prototype && 'get' in req && 'json' in res);
      res.on('finish', () => viaExpress.set(`${req.method} ${req.url}`, Object.getPrototypeOf(req) !== IncomingMessage.prototype));
    });
  });
  after(async () => {
    await app.close();
  });

  /** What must be equal for both spellings: status, body, and every header but the per-response ones. */
  function answer(res: Response) {
    const { date: _date, 'x-request-id': requestId, ...headers } = res.headers as Record<string, string>;
    expect(requestId).to.match(/^[A-Za-z0-9._-]{1,100}$/);
    // An error body says its request id too (`requestId`): the same per-response value, left out.
    return { status: res.status, headers, body: res.text.replace(`,"requestId":"${requestId}"`, '') };
  }

  async function both(method: 'get' | 'post', path: string, prepare: (r: ReturnType<typeof app.http.get>) => ReturnType<typeof app.http.get> = (r) => r) {
    const [pathname, query] = path.split('?');
    const slashed = `${pathname}/${query === undefined ? '' : `?${query}`}`;
    const exact = answer(await prepare(app.http[method](path)));
    const withSlash = answer(await prepare(app.http[method](slashed)));
    expect(viaExpress.get(`${method.toUpperCase()} ${path}`), `${method} ${path} by express`).to.equal(true);
    expect(bornForExpress.get(`${method.toUpperCase()} ${path}`), `${method} ${path} born for express`).to.equal(true);
    expect(viaExpress.get(`${method.toUpperCase()} ${slashed}`), `${method} ${slashed} by express`).to.equal(true);
    expect(exact, `${method} ${path}`).to.deep.equal(withSlash);
    return exact;
  }

  it('answers a path and its trailing-slash spelling alike: JSON, validation and credential errors, bad JSON, queries, HTML', async () => {
    const bad = await both('post', '/api/v1/partner/users', (r) => r.set(partner.headers).send({ email: 'not an email' }));
    expect(bad.status).to.equal(400);
    const noCredentials = await both('post', '/api/v1/partner/users', (r) => r.send({ email: 'a@b.co' }));
    expect(noCredentials.status).to.equal(401);
    const malformed = await both('post', '/api/v1/partner/users', (r) => r.set(partner.headers).set('Content-Type', 'application/json').send('{"email": '));
    expect(malformed.status).to.equal(400);
    expect(JSON.parse(malformed.body)).to.include({ success: false, error: 'Invalid JSON body' });
    const empty = await both('post', '/api/v1/partner/users', (r) => r.set(partner.headers).set('Content-Type', 'application/json').send(''));
    expect(empty.status).to.equal(400);
    const withBom = await both('post', '/api/v1/partner/users', (r) =>
      r.set(partner.headers).set('Content-Type', 'application/json; charset=UTF-8').send('\ufeff{"email": "not an email"}'),
    );
    expect(withBom.body).to.equal(bad.body);
    const vendorType = await both('post', '/api/v1/partner/users', (r) =>
      r.set(partner.headers).set('Content-Type', 'application/vnd.api+json').send('{"email": 1}'),
    );
    expect(vendorType.status).to.equal(400);
    const list = await both('get', '/api/v1/partner/users?page=1&limit=5', (r) => r.set(partner.headers));
    expect(list.status).to.equal(200);
    const badQuery = await both('get', '/api/v1/partner/users?page=zero', (r) => r.set(partner.headers));
    expect(badQuery.status).to.equal(400);
    const assets = await both('get', '/api/v1/exchanges/assets/public');
    expect(assets.status).to.equal(200);
    const docs = await both('get', '/docs');
    expect(docs.headers['content-type']).to.equal('text/html; charset=utf-8');
  });

  it('stores a write once, whichever spelling of its path it came by (the same email is refused on the other)', async () => {
    const email = uniqueEmail('front');
    const first = await app.http.post('/api/v1/partner/users').set(partner.headers).send({ email, countryCode: 'CO' });
    expect(first.status).to.equal(201);
    const again = await app.http.post('/api/v1/partner/users/').set(partner.headers).send({ email, countryCode: 'CO' });
    const fresh = await app.http
      .post('/api/v1/partner/users/')
      .set(partner.headers)
      .send({ email: uniqueEmail('router'), countryCode: 'CO' });
    expect(fresh.status).to.equal(201);
    expect(again.status).to.be.within(400, 499);
    expect(again.body.success).to.equal(false);
    expect(Object.keys(first.body).sort()).to.deep.equal(Object.keys(fresh.body).sort());
  });

  it('refuses what a JSON route does not read: forms, other charsets, compressed and oversized bodies', async () => {
    const cases: Array<[string, (r: ReturnType<typeof app.http.post>) => ReturnType<typeof app.http.post>, number]> = [
      ['form', (r) => r.set(partner.headers).type('form').send('email=a%40b.co'), 415],
      ['latin1', (r) => r.set(partner.headers).set('Content-Type', 'application/json; charset=latin1').send('{"email":"x"}'), 415],
      // Not gzip at all: a client fault (400), not a 500.
      ['gzip header', (r) => r.set(partner.headers).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send('not gzip'), 400],
      ['too large', (r) => r.set(partner.headers).send({ email: 'x'.repeat(110 * 1024) }), 413],
    ];
    for (const [name, prepare, status] of cases) {
      const res = await prepare(app.http.post('/api/v1/partner/users'));
      expect(res.status, name).to.equal(status);
      expect(res.body.success, name).to.equal(false);
    }
  });
});
