import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { JsonObject } from '../../src/eventstore/port';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund } from '../support/ledger';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

/**
 * A projection stopped on an event it cannot apply misses every later event (decisions, "Input and
 * hardening"). Suspensions, logouts and key revocations still take effect at once ("Login and
 * tokens"): the bearer and partner checks do not trust the stopped read model, they ask the log.
 * Before, a suspended user's token, a logged-out session and a revoked key kept working for as long
 * as the projection stayed stopped.
 */
describe('hardening: access while the users, sessions or partners projection is stopped', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  beforeEach(async () => {
    // A log of its own each: a planted event stays in the log for good.
    app = await startTestApp({ readYourWritesTimeoutMs: 1_000 });
    acme = await createPartner(app.http);
    ada = await customer(app.http, acme);
    bob = await customer(app.http, acme);
    await fund(app.http, acme, ada, '50');
  });
  afterEach(() => app?.close());

  const profile = (bearer: { Authorization: string }) => app.http.get('/api/v1/auth/profile').set(bearer);
  const transfer = (from: Customer, to: Customer) =>
    app.http
      .post('/api/v1/transactions/transfer')
      .set(from.bearer)
      .send({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: '1', description: 'while users is stopped' });

  /** Appends, straight to the log, an event of the projection's types that it cannot apply (a required field missing). */
  async function stop(projection: 'users' | 'sessions' | 'partners'): Promise<void> {
    const id = randomUUID();
    const planted: { stream: string; type: string; data: JsonObject } = {
      // No partnerId (rm_users.partner_id is NOT NULL; email may be null since erasure).
      users: { stream: `user-${id}`, type: 'UserRegistered', data: { userId: id, email: `${id}@example.com`, countryCode: 'CO', language: 'en' } },
      sessions: {
        stream: `session-${id}`,
        type: 'SessionStarted',
        data: { sessionId: id, partnerId: acme.id, refreshHash: 'ab', at: new Date().toISOString() },
      },
      partners: { stream: `partner-${id}`, type: 'PartnerCreated', data: { partnerId: id, sandbox: true } },
    }[projection];
    await app.tally.store.append(
      planted.stream,
      [{ id: randomUUID(), type: planted.type, data: planted.data, metadata: { actor: { kind: 'system', id: 'test' } } }],
      'no_stream',
    );
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await app.http.get('/admin/v1/projections').set(admin);
      const failure = (res.body.data as Array<{ name: string; failure: unknown }>).find((p) => p.name === projection)?.failure;
      if (failure) return;
      if (Date.now() > deadline) throw new Error(`the ${projection} projection did not stop`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('users stopped: a suspended user’s token is refused at once (transfers included), an active user’s still works', async () => {
    // Used before: the node remembers the session as active.
    expect((await profile(bob.bearer)).status).to.equal(200);
    await stop('users');
    expect((await app.http.post(`/admin/v1/users/${bob.id}/suspend`).set(admin).send({})).status).to.equal(200);
    const refused = await profile(bob.bearer);
    expect(refused.status).to.equal(401);
    expect(refused.body).to.include({ success: false, error: 'Invalid or expired token' });
    expect((await transfer(bob, ada)).status).to.equal(401);
    // The stopped read model is not trusted, yet the check still answers: ada is active and served.
    expect((await profile(ada.bearer)).status).to.equal(200);
    const moved = await transfer(ada, bob);
    expect(moved.status, JSON.stringify(moved.body)).to.equal(201);
  });

  it('sessions stopped: a logged-out session’s token is refused at once', async () => {
    const { body } = await app.http.post('/api/v1/partner/auth/send').set(acme.headers).send({ email: ada.email });
    expect(body.success).to.equal(true);
    const code = (await app.http.get(`/sandbox/v1/emails?to=${encodeURIComponent(ada.email)}`).set(acme.headers)).body.data[0].code;
    const second = (await app.http.post('/api/v1/partner/auth/verify').set(acme.headers).send({ email: ada.email, code })).body;
    const bearer = { Authorization: `Bearer ${second.accessToken}` };
    expect((await profile(bearer)).status).to.equal(200);
    await stop('sessions');
    expect((await app.http.post('/api/v1/partner/auth/logout').set(acme.headers).send({ refreshToken: second.refreshToken })).status).to.equal(200);
    expect((await profile(bearer)).status).to.equal(401);
    // Ada's other session was not logged out.
    expect((await profile(ada.bearer)).status).to.equal(200);
  });

  it('partners stopped: a revoked key is refused at once, the partner’s other key still works', async () => {
    const created = await app.http.post(`/admin/v1/partners/${acme.id}/keys`).set(admin).send({});
    expect(created.status).to.equal(201);
    const second = { 'X-Api-Key': created.body.apiKey, 'X-Api-Secret': created.body.apiSecret };
    // Both used before: each pair is remembered as right.
    for (const headers of [acme.headers, second]) expect((await app.http.get('/api/v1/partner/users').set(headers)).status).to.equal(200);
    await stop('partners');
    expect((await app.http.delete(`/admin/v1/partners/${acme.id}/keys/${acme.apiKey}`).set(admin)).status).to.equal(204);
    const refused = await app.http.get('/api/v1/partner/users').set(acme.headers);
    expect(refused.status).to.equal(401);
    expect(refused.body).to.include({ success: false, error: 'Invalid partner credentials' });
    expect((await app.http.get('/api/v1/partner/users').set(second)).status).to.equal(200);
  });
});
