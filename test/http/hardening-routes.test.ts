import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { lastWritten, type PartnerCredentials, type startTestApp } from '../support/app';
import { activeUser, COMPLETE_PROFILE, kycStartedUser, login, registerUser } from '../support/identity';
import { balanceOf, type Customer, customer, fund, PAYER, PAYOUT_DESTINATION, startWithCustomers } from '../support/ledger';

/**
 * Route-level findings of the hardening review (decisions, "Input and hardening" and "Profile"):
 * query numbers and dates out of range, payout decimals, verified identity fields, the minimum age's
 * message, and the IETF `Idempotency-Key` header.
 */
describe('hardening: route inputs and rules', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  before(async () => {
    ({ app, acme, ada, bob } = await startWithCustomers());
  });
  after(() => app?.close());

  const written = () => lastWritten(app);

  describe('query and path numbers and dates out of range', () => {
    it('answers 400 naming the field for a query integer past its column type (accountId 2^63-1 was a 500)', async () => {
      const cases: Array<[string, string]> = [
        ['/api/v1/transactions?accountId=9223372036854775807', 'accountId'],
        ['/api/v1/transactions?accountId=9007199254740992', 'accountId'],
        [`/api/v1/transactions?accountId=${ada.accountId}&page=9223372036854775807`, 'page'],
        [`/api/v1/transactions?accountId=${ada.accountId}&limit=9223372036854775807`, 'limit'],
        ['/api/v1/user/balance?page=9223372036854775807', 'page'],
        ['/api/v1/user/balance?limit=9223372036854775807', 'limit'],
      ];
      for (const [url, field] of cases) {
        const res = await app.http.get(url).set(ada.bearer);
        expect(res.status, url).to.equal(400);
        expect(res.body.success, url).to.equal(false);
        expect(res.body.error, url).to.match(new RegExp(`^${field}\\b`));
      }
      const users = await app.http.get('/api/v1/partner/users?page=9223372036854775807').set(acme.headers);
      expect(users.status).to.equal(400);
      expect(users.body.error).to.match(/^page\b/);
      // In range: the ordinary answers.
      expect((await app.http.get(`/api/v1/transactions?accountId=${ada.accountId}&page=1000000`).set(ada.bearer)).body).to.deep.equal([]);
      expect((await app.http.get('/api/v1/transactions?accountId=9007199254740991').set(ada.bearer)).status).to.equal(404);
    });

    it('answers 400 naming the field for a transaction list date outside years 1970-9999, after its offset too (both were 500s)', async () => {
      const cases: Array<[Record<string, string>, string]> = [
        [{ from: '0000-01-01' }, 'from'],
        [{ from: '1969-12-31T23:59:59Z' }, 'from'],
        [{ from: '1970-01-01T00:30:00+01:00' }, 'from'],
        [{ to: '9999-12-31T23:59:59-23:59' }, 'to'],
        [{ to: '0001-01-01' }, 'to'],
      ];
      for (const [dates, field] of cases) {
        const res = await app.http
          .get('/api/v1/transactions')
          .query({ accountId: ada.accountId, ...dates })
          .set(ada.bearer);
        expect(res.status, JSON.stringify(dates)).to.equal(400);
        expect(res.body.error, JSON.stringify(dates)).to.equal(`${field} must be a date between 1970-01-01 and 9999-12-31 (UTC)`);
      }
      // The edges themselves are fine, and the whole of day 9999-12-31 lists.
      for (const dates of [
        { from: '1970-01-01', to: '9999-12-31' },
        { from: '1970-01-01T00:00:00Z', to: '9999-12-31T23:59:59.999Z' },
        { to: '9999-12-31T23:59:59+00:00' },
      ]) {
        const res = await app.http
          .get('/api/v1/transactions')
          .query({ accountId: ada.accountId, ...dates })
          .set(ada.bearer);
        expect(res.status, JSON.stringify(dates)).to.equal(200);
        expect(res.body.length, JSON.stringify(dates)).to.be.at.least(1);
      }
    });

    it('answers 400 naming the field for a balance `at` or a user list bound outside years 1970-9999', async () => {
      const balance = await app.http.get('/api/v1/user/balance').query({ at: '0000-01-01T00:00:00Z' }).set(ada.bearer);
      expect([balance.status, balance.body.error]).to.deep.equal([400, 'at must be a date between 1970-01-01 and 9999-12-31 (UTC)']);
      for (const [query, field] of [
        [{ createdFrom: '0000-01-01T00:00:00Z' }, 'createdFrom'],
        [{ createdTo: '9999-12-31T23:59:59-23:59' }, 'createdTo'],
        [{ createdFrom: '1969-12-31T23:00:00-00:30' }, 'createdFrom'],
      ] as Array<[Record<string, string>, string]>) {
        const res = await app.http.get('/api/v1/partner/users').query(query).set(acme.headers);
        expect(res.status, JSON.stringify(query)).to.equal(400);
        expect(res.body.error, JSON.stringify(query)).to.equal(`${field} must be a date between 1970-01-01 and 9999-12-31 (UTC)`);
      }
      const ok = await app.http
        .get('/api/v1/partner/users')
        .query({ createdFrom: '1970-01-01T00:00:00Z', createdTo: '9999-12-31T23:59:59Z' })
        .set(acme.headers);
      expect(ok.status).to.equal(200);
      expect(ok.body.data.items.length).to.be.at.least(2);
    });
  });

  describe('payout amounts', () => {
    const payout = (body: Record<string, unknown>) =>
      app.http
        .post('/api/v1/user/payout')
        .set(ada.bearer)
        .send({
          transactionId: randomUUID(),
          asset: 'COP',
          provider: 'mock',
          source: { metadata: { fundingId: 'f1' } },
          destination: PAYOUT_DESTINATION,
          ...body,
        });

    it("refuses an amount with more decimal places than the asset's (0.001 COP was accepted), writing nothing", async () => {
      for (const amount of [0.001, '0.001', '1000.125']) {
        const before = await written();
        const res = await payout({ amount });
        expect(res.status, String(amount)).to.equal(400);
        expect(res.body.error, String(amount)).to.equal('amount must have at most 2 decimal places for COP');
        expect(await written(), String(amount)).to.equal(before);
      }
      // Trailing zeros are not places the amount has; two places are fine.
      for (const amount of ['1000.100', 1000.1, '0.01']) {
        const res = await payout({ amount });
        expect(res.status, String(amount)).to.equal(200);
      }
    });
  });

  describe('verified identity fields', () => {
    it('refuses (409) a change of a verified identity field once KYC is approved, on the partner and bearer routes; other fields change', async () => {
      const user = await activeUser(app.http, acme);
      const { accessToken } = await login(app.http, acme, user.email);
      const bearer = { Authorization: `Bearer ${accessToken}` };
      const partnerPatch = (fields: Record<string, unknown>) =>
        app.http
          .patch('/api/v1/user/profile')
          .set(acme.headers)
          .send({ userId: user.id, ...fields });
      const bearerPatch = (fields: Record<string, unknown>) => app.http.patch('/api/v1/auth/profile').set(bearer).send(fields);
      for (const patch of [partnerPatch, bearerPatch]) {
        const before = await written();
        const one = await patch({ lastName: 'Byron' });
        expect([one.status, one.body.error]).to.deep.equal([409, 'Verified identity fields cannot be changed: lastName']);
        // Every changing identity field named, in the decided order; fields set to their value are not.
        const many = await patch({
          governmentIdCountry: 'MX',
          firstName: 'Augusta',
          lastName: COMPLETE_PROFILE.lastName,
          nationality: 'co',
          dateOfBirth: '1991-01-01',
          governmentIdNumber: 'ZZ999',
          governmentIdType: 'national_id',
          city: 'Medellín',
        });
        expect(many.status).to.equal(409);
        expect(many.body.error).to.equal(
          'Verified identity fields cannot be changed: firstName, dateOfBirth, governmentIdType, governmentIdNumber, governmentIdCountry',
        );
        expect(await written()).to.equal(before);
      }
      // The same values, and other fields: fine.
      const same = await partnerPatch({ firstName: 'Ada', nationality: 'co', dateOfBirth: COMPLETE_PROFILE.dateOfBirth, city: 'Cali' });
      expect(same.status).to.equal(200);
      expect(same.body.data.profile).to.include({ firstName: 'Ada', nationality: 'CO', city: 'Cali' });
      const other = await bearerPatch({ addressLine1: 'Carrera 7', occupation: 'Mathematician' });
      expect(other.status).to.equal(200);
      expect(other.body.data.profile).to.include({ addressLine1: 'Carrera 7', occupation: 'Mathematician', lastName: 'Lovelace' });
      // POST on the existing profile stays the decided 409.
      const post = await app.http
        .post('/api/v1/user/profile')
        .set(acme.headers)
        .send({ userId: user.id, ...COMPLETE_PROFILE, firstName: 'Augusta' });
      expect([post.status, post.body.error]).to.deep.equal([409, `PersonalProfile already exists: ${user.id}`]);
    });

    it('lets identity fields change before KYC is approved', async () => {
      const user = await kycStartedUser(app.http, acme);
      const res = await app.http.patch('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, firstName: 'Augusta', governmentIdNumber: 'CD7' });
      expect(res.status).to.equal(200);
      expect(res.body.data.profile).to.include({ firstName: 'Augusta', governmentIdNumber: 'CD7' });
    });
  });

  it('names the field when dateOfBirth is of a minor', async () => {
    const user = await registerUser(app.http, acme);
    const minor = new Date(Date.now() - 17 * 365.25 * 86_400_000).toISOString().slice(0, 10);
    const res = await app.http.post('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, dateOfBirth: minor });
    expect([res.status, res.body.error]).to.deep.equal([400, 'dateOfBirth: the user must be at least 18 years old']);
  });

  describe('Idempotency-Key', () => {
    const transfer = (who: Customer, body: Record<string, unknown>) => app.http.post('/api/v1/transactions/transfer').set(who.bearer).send(body);

    it('a transfer sent twice with Idempotency-Key moves money once, and the second answer says Idempotent-Replayed: true', async () => {
      const sender = await customer(app.http, acme);
      const receiver = await customer(app.http, acme);
      await fund(app.http, acme, sender, '10');
      const key = randomUUID();
      const body = { toAccountId: receiver.accountId, amount: '2.5', description: 'rent' };
      const first = await transfer(sender, body).set('Idempotency-Key', key);
      expect(first.status).to.equal(201);
      expect(first.headers['idempotent-replayed']).to.equal(undefined);
      const again = await transfer(sender, body).set('Idempotency-Key', key);
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers['idempotent-replayed']).to.equal('true');
      // The same key in the other header names the same request.
      const legacy = await transfer(sender, body).set('x-idempotency-key', key);
      expect([legacy.status, legacy.headers['idempotent-replayed']]).to.deep.equal([201, 'true']);
      expect(await balanceOf(app.http, receiver)).to.deep.equal({ credits: '2.50000000', debits: '0.00000000' });
      expect(await balanceOf(app.http, sender)).to.deep.equal({ credits: '10.00000000', debits: '2.50000000' });
    });

    it('refuses both headers with different values (400 naming the header), and an Idempotency-Key that is not a UUID', async () => {
      const before = await written();
      const both = await transfer(ada, { toAccountId: bob.accountId, amount: '1', description: 'x' })
        .set('Idempotency-Key', randomUUID())
        .set('x-idempotency-key', randomUUID());
      expect([both.status, both.body.error]).to.deep.equal([400, 'Idempotency-Key and x-idempotency-key must be the same when both are sent']);
      const bad = await transfer(ada, { toAccountId: bob.accountId, amount: '1', description: 'x' }).set('Idempotency-Key', 'abc');
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'Idempotency-Key must be a UUID']);
      expect(await written()).to.equal(before);
      // Both, the same key: one request.
      const key = randomUUID();
      const same = await transfer(ada, { toAccountId: bob.accountId, amount: '1', description: 'x' }).set('Idempotency-Key', key).set('x-idempotency-key', key);
      expect(same.status).to.equal(201);
    });

    it('a deposit replayed by Idempotency-Key answers the first one with Idempotent-Replayed: true', async () => {
      const key = randomUUID();
      const body = { toAccountId: ada.accountId, amount: '5', currency: 'USDC', provider: 'mock', description: 'top up', metadata: PAYER };
      const first = await app.http.post('/api/v1/transactions/deposit').set(ada.bearer).set('Idempotency-Key', key).send(body);
      expect(first.status).to.equal(201);
      expect(first.headers['idempotent-replayed']).to.equal(undefined);
      const again = await app.http.post('/api/v1/transactions/deposit').set(ada.bearer).set('Idempotency-Key', key).send(body);
      expect(again.status).to.equal(201);
      expect(again.body.transactionId).to.equal(first.body.transactionId);
      expect(again.headers['idempotent-replayed']).to.equal('true');
    });

    it('a payout replayed by transactionId carries Idempotent-Replayed: true', async () => {
      const body = {
        transactionId: randomUUID(),
        amount: 1000,
        asset: 'COP',
        provider: 'mock',
        source: { metadata: { fundingId: 'f1' } },
        destination: PAYOUT_DESTINATION,
      };
      const first = await app.http.post('/api/v1/user/payout').set(ada.bearer).send(body);
      expect(first.status).to.equal(200);
      expect(first.headers['idempotent-replayed']).to.equal(undefined);
      const again = await app.http.post('/api/v1/user/payout').set(ada.bearer).send(body);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers['idempotent-replayed']).to.equal('true');
    });
  });
});
