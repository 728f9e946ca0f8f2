import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';

describe('partner users over HTTP', () => {
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

  const register = (partner: PartnerCredentials, body: Record<string, unknown>) => app.http.post('/api/v1/partner/users').set(partner.headers).send(body);

  describe('POST /api/v1/partner/users', () => {
    it('registers a pending user and answers 201 with the user and a message', async () => {
      const email = uniqueEmail();
      const res = await register(acme, { email, countryCode: 'CO', phoneNumber: ' +573001234567 ', language: 'es' });
      expect(res.status).to.equal(201);
      expect(res.body.success).to.equal(true);
      expect(res.body.message).to.equal('User created');
      const { user } = res.body.data;
      expect(Object.keys(user).sort()).to.deep.equal(['createdAt', 'email', 'id', 'status']);
      expect(user.email).to.equal(email);
      expect(user.status).to.equal('pending');
      expect(user.id).to.match(/^[0-9a-f-]{36}$/);
      expect(Date.parse(user.createdAt)).to.be.closeTo(Date.now(), 60_000);
      const read = await app.http.get(`/api/v1/partner/users/${user.id}`).set(acme.headers);
      expect(read.status).to.equal(200);
      expect(read.body.data.user).to.include({
        id: user.id,
        email,
        status: 'pending',
        countryCode: 'CO',
        phoneNumber: '+573001234567',
        language: 'es',
        kycStatus: null,
      });
    });

    it('trims and lower-cases the email, and defaults the language to en', async () => {
      const email = uniqueEmail('MiXeD');
      const res = await register(acme, { email: `  ${email.toUpperCase()} `, countryCode: 'co' });
      expect(res.status).to.equal(201);
      expect(res.body.data.user.email).to.equal(email.toLowerCase());
      const read = await app.http.get(`/api/v1/partner/users/${res.body.data.user.id}`).set(acme.headers);
      expect(read.body.data.user).to.include({ language: 'en', countryCode: 'CO', phoneNumber: null });
    });

    it('takes any assigned ISO 3166-1 alpha-2 code, in any case, and stores it upper-cased', async () => {
      for (const countryCode of ['GB', 'us', 'Ax', 'AQ']) {
        const res = await register(acme, { email: uniqueEmail('country'), countryCode });
        expect(res.status, countryCode).to.equal(201);
        const read = await app.http.get(`/api/v1/partner/users/${res.body.data.user.id}`).set(acme.headers);
        expect(read.body.data.user.countryCode).to.equal(countryCode.toUpperCase());
      }
      const zz = await register(acme, { email: uniqueEmail('country'), countryCode: 'ZZ' });
      expect(zz.status).to.equal(400);
      expect(zz.body).to.include({
        success: false,
        error: 'countryCode must be an ISO 3166-1 alpha-2 country code',
        code: 'validation_error',
        param: 'countryCode',
      });
    });

    it('refuses an email taken anywhere in the service, in any case, with 409', async () => {
      const email = uniqueEmail();
      expect((await register(acme, { email, countryCode: 'CO' })).status).to.equal(201);
      const same = await register(acme, { email, countryCode: 'CO' });
      expect(same.status).to.equal(409);
      expect(same.body).to.include({ success: false, error: 'User with this email already exists', code: 'email_taken', param: 'email' });
      const otherPartner = await register(globex, { email: email.toUpperCase(), countryCode: 'MX' });
      expect(otherPartner.status).to.equal(409);
      expect(otherPartner.body.error).to.equal('User with this email already exists');
    });

    it('lets exactly one of many concurrent registrations of one email win', async () => {
      const email = uniqueEmail('race');
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => register(i % 2 ? acme : globex, { email, countryCode: 'CO' })));
      expect(results.filter((r) => r.status === 201)).to.have.length(1);
      expect(results.filter((r) => r.status === 409)).to.have.length(7);
    });

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['email missing', { countryCode: 'CO' }, 'email is required'],
      ['email not an address', { email: 'not-an-email', countryCode: 'CO' }, 'email must be a valid email address'],
      ['email not a string', { email: 42, countryCode: 'CO' }, 'email must be a valid email address'],
      ['countryCode missing', { email: 'a@example.com' }, 'countryCode is required'],
      ['countryCode too long', { email: 'a@example.com', countryCode: 'COL' }, 'countryCode must be exactly 2 characters'],
      ['countryCode too short', { email: 'a@example.com', countryCode: 'C' }, 'countryCode must be exactly 2 characters'],
      [
        'phone not international',
        { email: 'a@example.com', countryCode: 'CO', phoneNumber: '3001234567' },
        'phoneNumber must be in international format, e.g. +573001234567',
      ],
      ['language not a code', { email: 'a@example.com', countryCode: 'CO', language: 'english' }, 'language must be a language code such as en or es'],
      ['countryCode not assigned by ISO 3166-1', { email: 'a@example.com', countryCode: 'ZZ' }, 'countryCode must be an ISO 3166-1 alpha-2 country code'],
      ['countryCode not assigned, in lower case', { email: 'a@example.com', countryCode: 'zz' }, 'countryCode must be an ISO 3166-1 alpha-2 country code'],
      ['countryCode two digits', { email: 'a@example.com', countryCode: '12' }, 'countryCode must be an ISO 3166-1 alpha-2 country code'],
    ];
    for (const [name, body, message] of invalid) {
      it(`answers 400 "${message}" when ${name}, and writes nothing`, async () => {
        const before = await app.http.get('/api/v1/partner/users').set(acme.headers);
        const res = await register(acme, body);
        expect(res.status).to.equal(400);
        expect(res.body.success).to.equal(false);
        expect(res.body.error).to.equal(message);
        expect(res.body.code).to.equal('validation_error');
        const after = await app.http.get('/api/v1/partner/users').set(acme.headers);
        expect(after.body.data.meta.totalItems).to.equal(before.body.data.meta.totalItems);
      });
    }

    it('answers 401 "Invalid partner credentials" without, or with wrong, credentials', async () => {
      const none = await app.http.post('/api/v1/partner/users').send({ email: uniqueEmail(), countryCode: 'CO' });
      expect(none.status).to.equal(401);
      expect(none.body).to.include({ success: false, error: 'Invalid partner credentials' });
      const wrongSecret = await app.http
        .post('/api/v1/partner/users')
        .set({ 'X-Api-Key': acme.apiKey, 'X-Api-Secret': `${acme.apiSecret}x` })
        .send({ email: uniqueEmail(), countryCode: 'CO' });
      expect(wrongSecret.status).to.equal(401);
      const otherSecret = await app.http.post('/api/v1/partner/users').set({ 'X-Api-Key': acme.apiKey, 'X-Api-Secret': globex.apiSecret }).send({});
      expect(otherSecret.status).to.equal(401);
      expect(otherSecret.body.error).to.equal('Invalid partner credentials');
    });
  });

  describe('GET /api/v1/partner/users', () => {
    let partner: PartnerCredentials;
    const emails: string[] = [];
    before(async () => {
      partner = await createPartner(app.http, 'Lister');
      for (let i = 0; i < 5; i++) {
        const email = uniqueEmail(`list${i}`);
        emails.push(email);
        await register(partner, { email, countryCode: 'CO' });
        await new Promise((r) => setTimeout(r, 5));
      }
    });

    it('lists only the partner’s own users, newest first, with page meta', async () => {
      const res = await app.http.get('/api/v1/partner/users').set(partner.headers);
      expect(res.status).to.equal(200);
      expect(res.body.success).to.equal(true);
      expect(res.body.data.items.map((u: { email: string }) => u.email)).to.deep.equal([...emails].reverse());
      expect(res.body.data.meta).to.deep.equal({ totalItems: 5, totalPages: 1, currentPage: 1, itemsPerPage: 20 });
    });

    it('pages with page and limit', async () => {
      const res = await app.http.get('/api/v1/partner/users?page=2&limit=2').set(partner.headers);
      expect(res.body.data.items.map((u: { email: string }) => u.email)).to.deep.equal([emails[2], emails[1]]);
      expect(res.body.data.meta).to.deep.equal({ totalItems: 5, totalPages: 3, currentPage: 2, itemsPerPage: 2 });
    });

    it('filters by email, substring, status and creation time', async () => {
      const byEmail = await app.http.get(`/api/v1/partner/users?email=${encodeURIComponent(emails[3]?.toUpperCase() ?? '')}`).set(partner.headers);
      expect(byEmail.body.data.items.map((u: { email: string }) => u.email)).to.deep.equal([emails[3]]);
      const byQ = await app.http.get('/api/v1/partner/users?q=list1.').set(partner.headers);
      expect(byQ.body.data.items.map((u: { email: string }) => u.email)).to.deep.equal([emails[1]]);
      const pending = await app.http.get('/api/v1/partner/users?status=pending').set(partner.headers);
      expect(pending.body.data.meta.totalItems).to.equal(5);
      const active = await app.http.get('/api/v1/partner/users?status=active').set(partner.headers);
      expect(active.body.data.meta.totalItems).to.equal(0);
      const all = await app.http.get('/api/v1/partner/users').set(partner.headers);
      const third = all.body.data.items[2];
      const from = await app.http.get(`/api/v1/partner/users?createdFrom=${encodeURIComponent(third.createdAt)}`).set(partner.headers);
      expect(from.body.data.meta.totalItems).to.equal(3);
      const to = await app.http.get(`/api/v1/partner/users?createdTo=${encodeURIComponent(third.createdAt)}`).set(partner.headers);
      expect(to.body.data.meta.totalItems).to.equal(3);
    });

    it('rejects bad list parameters with 400 naming the field', async () => {
      const cases: Array<[string, string]> = [
        ['limit=101', 'limit must be at most 100'],
        ['limit=0', 'limit must be at least 1'],
        ['page=0', 'page must be at least 1'],
        ['page=abc', 'page must be an integer'],
        ['status=gone', 'status must be one of pending, kyc_required, active, suspended, banned'],
        ['createdFrom=yesterday', 'createdFrom must be an ISO 8601 date'],
        ['createdTo=2026-1-1', 'createdTo must be an ISO 8601 date'],
        ['createdFrom=2026-02-30', 'createdFrom must be an ISO 8601 date'],
        ['createdTo=2026-11-01T25:00:00Z', 'createdTo must be an ISO 8601 date'],
      ];
      for (const [query, message] of cases) {
        const res = await app.http.get(`/api/v1/partner/users?${query}`).set(partner.headers);
        expect(res.status, query).to.equal(400);
        expect(res.body.error, query).to.equal(message);
        expect(res.body.code, query).to.equal('validation_error');
      }
    });

    it('takes a date alone as a bound: the start of that day, UTC, for createdFrom and createdTo alike', async () => {
      const count = async (query: string) => {
        const res = await app.http.get(`/api/v1/partner/users?${query}`).set(partner.headers);
        expect(res.status, query).to.equal(200);
        return res.body.data.meta.totalItems as number;
      };
      const all = (await app.http.get('/api/v1/partner/users').set(partner.headers)).body.data.items as Array<{ createdAt: string }>;
      const day = (at: string, plus = 0) => new Date(Date.parse(`${at.slice(0, 10)}T00:00:00Z`) + plus * 86_400_000).toISOString().slice(0, 10);
      const oldest = all[all.length - 1]?.createdAt ?? '';
      const newest = all[0]?.createdAt ?? '';
      expect(await count('createdFrom=2020-01-01')).to.equal(5);
      expect(await count(`createdFrom=${day(oldest)}`)).to.equal(5);
      expect(await count(`createdFrom=${day(newest, 1)}`)).to.equal(0);
      expect(await count(`createdTo=${day(newest, 1)}`)).to.equal(5);
      // The upper bound too is the day's first instant: that day's users are left out.
      expect(await count(`createdTo=${day(oldest)}`)).to.equal(0);
      expect(await count(`createdFrom=${day(oldest)}&createdTo=${day(newest, 1)}`)).to.equal(5);
      // A date-time without an offset is UTC, not the database's time zone.
      expect(await count(`createdFrom=${day(newest, 1)}T00:00:00`)).to.equal(0);
      expect(await count(`createdTo=${day(newest, 1)}T00:00:00`)).to.equal(5);
    });
  });

  describe('GET /api/v1/partner/users/:userId', () => {
    it('answers 404 "User not found" for another partner’s user, an unknown id and a malformed id', async () => {
      const created = await register(acme, { email: uniqueEmail(), countryCode: 'CO' });
      const id = created.body.data.user.id;
      for (const path of [`/api/v1/partner/users/${id}`, '/api/v1/partner/users/00000000-0000-4000-8000-000000000000', '/api/v1/partner/users/nope']) {
        const res = await app.http.get(path).set(globex.headers);
        expect(res.status, path).to.equal(404);
        expect(res.body, path).to.include({ success: false, error: 'User not found', code: 'user_not_found' });
      }
    });

    it('shows the status an operator set (suspend, reinstate, ban)', async () => {
      const created = await register(acme, { email: uniqueEmail(), countryCode: 'CO' });
      const id = created.body.data.user.id;
      const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      expect((await app.http.post(`/admin/v1/users/${id}/suspend`).set(admin).send({})).body.data.user.status).to.equal('suspended');
      expect((await app.http.get(`/api/v1/partner/users/${id}`).set(acme.headers)).body.data.user.status).to.equal('suspended');
      expect((await app.http.post(`/admin/v1/users/${id}/reinstate`).set(admin).send({})).body.data.user.status).to.equal('pending');
      expect((await app.http.post(`/admin/v1/users/${id}/ban`).set(admin).send({ reason: 'fraud' })).body.data.user.status).to.equal('banned');
      const reinstate = await app.http.post(`/admin/v1/users/${id}/reinstate`).set(admin).send({});
      expect(reinstate.status).to.equal(409);
      expect(reinstate.body).to.include({ error: 'A banned user cannot be reinstated', code: 'banned_user_not_reinstatable' });
      expect((await app.http.get(`/api/v1/partner/users/${id}`).set(acme.headers)).body.data.user.status).to.equal('banned');
    });
  });
});
