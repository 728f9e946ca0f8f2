import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, lastWrittenPosition, startTestApp, uniqueEmail } from '../support/app';
import { customer, fund } from '../support/ledger';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('operator API over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  before(async () => {
    app = await startTestApp();
  });
  after(async () => {
    await app.close();
  });

  describe('access', () => {
    it('answers 401 without the admin token or with a wrong one', async () => {
      for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: ADMIN_TOKEN }]) {
        const res = await app.http.post('/admin/v1/partners').set(headers).send({ name: 'X' });
        expect(res.status).to.equal(401);
        expect(res.body).to.include({ success: false, error: 'Invalid admin token' });
      }
    });

    it('does not exist while ADMIN_TOKEN is unset', async () => {
      const off = await startTestApp({ adminToken: undefined });
      try {
        const res = await off.http.post('/admin/v1/partners').set(admin).send({ name: 'X' });
        expect(res.status).to.equal(404);
        expect(res.body).to.include({ success: false, error: 'Not found' });
      } finally {
        await off.close();
      }
    });
  });

  describe('partners and key pairs', () => {
    it('creates a partner and shows its secret once; the pair authenticates', async () => {
      const res = await app.http.post('/admin/v1/partners').set(admin).send({ name: '  Initech  ' });
      expect(res.status).to.equal(201);
      expect(Object.keys(res.body).sort()).to.deep.equal(['apiKey', 'apiSecret', 'id', 'name']);
      expect(res.body.name).to.equal('Initech');
      expect(res.body.apiKey).to.match(/^tk_sandbox_[0-9a-f]{24}$/);
      expect(res.body.apiSecret).to.match(/^ts_[A-Za-z0-9_-]{43}$/);
      const list = await app.http.get('/api/v1/partner/users').set({ 'X-Api-Key': res.body.apiKey, 'X-Api-Secret': res.body.apiSecret });
      expect(list.status).to.equal(200);
    });

    it('keeps no secret in clear in the log or the read models', async () => {
      const p = await createPartner(app.http, 'Hushed');
      const inLog = await app.tally.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM es_events WHERE data::text LIKE $1 OR metadata::text LIKE $1`, [
        `%${p.apiSecret}%`,
      ]);
      expect(inLog[0]?.n).to.equal('0');
      const [key] = await app.tally.sql.query<{ secret_hash: string }>('SELECT secret_hash FROM rm_partner_keys WHERE api_key = $1', [p.apiKey]);
      expect(key?.secret_hash).to.match(/^scrypt\$/);
      expect(key?.secret_hash).to.not.contain(p.apiSecret);
    });

    it('rejects a partner without a name with 400', async () => {
      const res = await app.http.post('/admin/v1/partners').set(admin).send({});
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('name is required');
    });

    it('creates a second key pair; revoking the first stops it at once and leaves the second working', async () => {
      const p = await createPartner(app.http, 'Rotator');
      const second = await app.http.post(`/admin/v1/partners/${p.id}/keys`).set(admin).send();
      expect(second.status).to.equal(201);
      expect(second.body.id).to.equal(p.id);
      const secondHeaders = { 'X-Api-Key': second.body.apiKey, 'X-Api-Secret': second.body.apiSecret };
      // Both pairs see the same partner's users.
      const created = await app.http.post('/api/v1/partner/users').set(p.headers).send({ email: uniqueEmail(), countryCode: 'CO' });
      expect((await app.http.get(`/api/v1/partner/users/${created.body.data.user.id}`).set(secondHeaders)).status).to.equal(200);
      const revoked = await app.http.delete(`/admin/v1/partners/${p.id}/keys/${p.apiKey}`).set(admin);
      expect(revoked.status).to.equal(204);
      const old = await app.http.get('/api/v1/partner/users').set(p.headers);
      expect(old.status).to.equal(401);
      expect(old.body.error).to.equal('Invalid partner credentials');
      expect((await app.http.get('/api/v1/partner/users').set(secondHeaders)).status).to.equal(200);
      const again = await app.http.delete(`/admin/v1/partners/${p.id}/keys/${p.apiKey}`).set(admin);
      expect(again.status).to.equal(404);
      expect(again.body).to.include({ error: 'API key not found', code: 'api_key_not_found' });
    });

    it('answers 404 for keys of an unknown partner', async () => {
      const res = await app.http.post('/admin/v1/partners/00000000-0000-4000-8000-000000000000/keys').set(admin).send();
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ error: 'Partner not found', code: 'partner_not_found' });
    });
  });

  describe('user actions', () => {
    it('answers 404 "User not found" for an unknown user', async () => {
      const res = await app.http.post('/admin/v1/users/00000000-0000-4000-8000-000000000000/suspend').set(admin).send({});
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ error: 'User not found', code: 'user_not_found' });
    });
  });

  describe('projections', () => {
    it('lists every projection with position and lag', async () => {
      const res = await app.http.get('/admin/v1/projections').set(admin);
      expect(res.status).to.equal(200);
      const names = res.body.data.map((p: { name: string }) => p.name);
      expect(names).to.include.members(['partners', 'users']);
      for (const p of res.body.data) {
        expect(p.lag).to.equal(0);
        expect(p.position).to.be.a('string');
      }
    });

    it('rebuilds every projection, leaving every read identical', async () => {
      const p = await createPartner(app.http, 'Rebuilt');
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await app.http
          .post('/api/v1/partner/users')
          .set(p.headers)
          .send({ email: uniqueEmail('rb'), countryCode: 'CO' });
        ids.push(res.body.data.user.id);
      }
      await app.http.post(`/admin/v1/users/${ids[0]}/suspend`).set(admin).send({});
      await app.http.post(`/admin/v1/users/${ids[1]}/ban`).set(admin).send({});
      // Every read model gets rows: profiles, KYC, sessions, accounts and transactions too.
      const alice = await customer(app.http, p);
      const bob = await customer(app.http, p);
      await fund(app.http, p, alice, '50');
      await app.http.post('/api/v1/transactions/transfer').set(alice.bearer).send({ toAccountId: bob.accountId, amount: '1.5', description: 'x' });
      // And card transactions: a card for Alice, and a purchase on it.
      const applied = await app.http.post('/api/v1/cards/application').set(alice.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(p.headers).send({});
      const card = await app.http.post('/api/v1/cards').set(alice.bearer).send({});
      const spent = await app.http
        .post(`/sandbox/v1/cards/${card.body.data.id}/authorizations`)
        .set(p.headers)
        .send({ amount: '2', currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5411' });
      expect(spent.status, JSON.stringify(spent.body)).to.equal(201);
      // And two signed checkpoints, for the audit read model, with a purchase between them: the second
      // replaces the heads of the card's streams the first recorded (the read model's history).
      expect((await app.http.post('/admin/v1/checkpoints').set(admin).send()).status).to.equal(201);
      const again = await app.http
        .post(`/sandbox/v1/cards/${card.body.data.id}/authorizations`)
        .set(p.headers)
        .send({ amount: '3', currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5411' });
      expect(again.status, JSON.stringify(again.body)).to.equal(201);
      expect((await app.http.post('/admin/v1/checkpoints').set(admin).send()).status).to.equal(201);
      // The tables are read directly, not through a route that waits for its read model: wait for all
      // of them to pass the last event written (the second signing may still be on its way to the audit's).
      expect(await app.tally.engine.waitFor(await lastWrittenPosition(app), { timeoutMs: 10_000 })).to.equal(true);
      // The read models: the list also shows the reactors (the outbox), which have nothing to rebuild.
      const listed: string[] = (await app.http.get('/admin/v1/projections').set(admin)).body.data.map((x: { name: string }) => x.name);
      expect(listed).to.include('outbox');
      const names = listed.filter((name) => app.tally.engine.projections.some((p) => p.name === name));
      const tables = app.tally.engine.projections.flatMap((x) => x.tables);
      const reads = async () => ({
        list: (await app.http.get('/api/v1/partner/users?limit=100').set(p.headers)).body,
        one: (await app.http.get(`/api/v1/partner/users/${ids[0]}`).set(p.headers)).body,
        accounts: (await app.http.get('/api/v1/user/accounts').set(alice.bearer)).body,
        history: (await app.http.get(`/api/v1/transactions?accountId=${alice.accountId}`).set(alice.bearer)).body,
        tables: await Promise.all(tables.map((t) => app.tally.sql.query(`SELECT * FROM ${t} ORDER BY 1`))),
      });
      const before = await reads();
      // Every table has rows, but the audit's staging of heads recorded for a checkpoint not yet signed.
      for (const [i, table] of before.tables.entries()) if (tables[i] !== 'rm_audit_pending_heads') expect(table.length, tables[i]).to.be.greaterThan(0);
      for (const name of names) {
        const res = await app.http.post(`/admin/v1/projections/${name}/rebuild`).set(admin).send();
        expect(res.status, name).to.equal(200);
        expect(res.body.data.events, name).to.be.greaterThan(0);
      }
      expect(await reads()).to.deep.equal(before);
      // Again with a rebuild that can remember only one row: it then reads its rows back.
      app.tally.engine.buildMemoryRows = 1;
      try {
        for (const name of names) expect((await app.http.post(`/admin/v1/projections/${name}/rebuild`).set(admin).send()).status, name).to.equal(200);
      } finally {
        app.tally.engine.buildMemoryRows = 1_000_000;
      }
      expect(await reads()).to.deep.equal(before);
      // And it keeps following the log after the swap.
      const later = await app.http
        .post('/api/v1/partner/users')
        .set(p.headers)
        .send({ email: uniqueEmail('after'), countryCode: 'CO' });
      expect((await app.http.get(`/api/v1/partner/users/${later.body.data.user.id}`).set(p.headers)).status).to.equal(200);
    });

    it('answers 404 for an unknown projection', async () => {
      const res = await app.http.post('/admin/v1/projections/nope/rebuild').set(admin).send();
      expect(res.status).to.equal(404);
    });
  });
});
