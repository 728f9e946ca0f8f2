import { expect } from 'chai';
import { ProviderError } from '../../src/providers/errors';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { activeUser, COMPLETE_PROFILE, login, registerUser } from '../support/identity';
import { signPayload } from '../../src/providers/signature';

describe('identity: profile and KYC over HTTP', () => {
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

  const profiled = async () => {
    const user = await registerUser(app.http, acme);
    await app.http
      .post('/api/v1/user/profile')
      .set(acme.headers)
      .send({ userId: user.id, ...COMPLETE_PROFILE });
    return user;
  };
  const startKyc = (userId: string, extra: Record<string, unknown> = {}) =>
    app.http
      .post('/api/v1/partner/kyc')
      .set(acme.headers)
      .send({ userId, ...extra });
  const complete = (inquiryId: string, outcome: string) => app.http.post(`/sandbox/v1/kyc/${inquiryId}/complete`).set(acme.headers).send({ outcome });
  const status = async (userId: string) => (await app.http.get(`/api/v1/user/kyc/status?userId=${userId}`).set(acme.headers)).body.data;

  describe('profile', () => {
    it('refuses a second profile with 409 "PersonalProfile already exists: <userId>"', async () => {
      const user = await profiled();
      const res = await app.http.post('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, firstName: 'Again' });
      expect(res.status).to.equal(409);
      expect(res.body).to.include({ success: false, error: `PersonalProfile already exists: ${user.id}`, code: 'profile_exists' });
    });

    it('answers 404 "PersonalProfile not found: <userId>" on read and update before it exists', async () => {
      const user = await registerUser(app.http, acme);
      const read = await app.http.get(`/api/v1/user/profile?userId=${user.id}`).set(acme.headers);
      expect(read.status).to.equal(404);
      expect(read.body).to.include({ error: `PersonalProfile not found: ${user.id}`, code: 'profile_not_found' });
      const patch = await app.http.patch('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, city: 'Cali' });
      expect(patch.status).to.equal(404);
      expect(patch.body).to.include({ error: `PersonalProfile not found: ${user.id}`, code: 'profile_not_found' });
    });

    it('answers 400 "Missing userId in request body or query params" without userId', async () => {
      for (const res of [
        await app.http.get('/api/v1/user/profile/check-completion').set(acme.headers),
        await app.http.get('/api/v1/user/kyc/status').set(acme.headers),
        await app.http.post('/api/v1/user/profile').set(acme.headers).send({ firstName: 'A' }),
        await app.http.post('/api/v1/partner/kyc').set(acme.headers).send({}),
      ]) {
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('Missing userId in request body or query params');
      }
    });

    it('validates formats, naming the field, and writes nothing', async () => {
      const user = await registerUser(app.http, acme);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ dateOfBirth: '1990-02-30' }, 'dateOfBirth must be a real date in YYYY-MM-DD format'],
        [{ dateOfBirth: '10/12/1990' }, 'dateOfBirth must be a real date in YYYY-MM-DD format'],
        [{ dateOfBirth: new Date(Date.now() - 17 * 365.25 * 86_400_000).toISOString().slice(0, 10) }, 'dateOfBirth: the user must be at least 18 years old'],
        [{ nationality: 'COL' }, 'nationality must be an ISO 3166-1 alpha-2 country code'],
        [{ nationality: 'ZZ' }, 'nationality must be an ISO 3166-1 alpha-2 country code'],
        [{ governmentIdCountry: 'zz' }, 'governmentIdCountry must be an ISO 3166-1 alpha-2 country code'],
        [{ addressCountry: 'XX' }, 'addressCountry must be an ISO 3166-1 alpha-2 country code'],
        [{ addressCountry: '170' }, 'addressCountry must be an ISO 3166-1 alpha-2 country code'],
        [{ gender: 'x' }, 'gender must be one of male, female, other'],
        [{ governmentIdType: 'visa' }, 'governmentIdType must be one of passport, national_id, drivers_license, residence_permit'],
        [{ annualSalary: -1 }, 'annualSalary must be a decimal number >= 0'],
        [{ annualSalary: '12.3.4' }, 'annualSalary must be a decimal number >= 0'],
        [{ firstName: '' }, 'firstName must be a non-empty string of at most 200 characters'],
        [{ city: 'x'.repeat(201) }, 'city must be a non-empty string of at most 200 characters'],
      ];
      for (const [fields, message] of cases) {
        const res = await app.http
          .post('/api/v1/user/profile')
          .set(acme.headers)
          .send({ userId: user.id, ...fields });
        expect(res.status, JSON.stringify(fields)).to.equal(400);
        expect(res.body.error, JSON.stringify(fields)).to.equal(message);
        // The age rule is the profile decider's; the rest are the request's validation.
        const code = message.endsWith('years old') ? 'user_under_age' : 'validation_error';
        expect(res.body, JSON.stringify(fields)).to.include({ code, param: Object.keys(fields)[0] });
      }
      expect((await app.http.get(`/api/v1/user/profile?userId=${user.id}`).set(acme.headers)).status).to.equal(404);
    });

    it('takes assigned country codes in any case, stored upper-cased, and refuses ZZ on PATCH and at the bearer twins too', async () => {
      const user = await profiled();
      const patched = await app.http.patch('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, addressCountry: 'mx', nationality: 'Gb' });
      expect(patched.status).to.equal(200);
      expect(patched.body.data.profile).to.include({ addressCountry: 'MX', nationality: 'GB' });
      const zz = await app.http.patch('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, city: 'Lima', addressCountry: 'ZZ' });
      expect(zz.status).to.equal(400);
      expect(zz.body).to.include({ error: 'addressCountry must be an ISO 3166-1 alpha-2 country code', code: 'validation_error', param: 'addressCountry' });
      expect((await app.http.get(`/api/v1/user/profile?userId=${user.id}`).set(acme.headers)).body.data.profile.city).to.not.equal('Lima');
      const active = await activeUser(app.http, acme);
      const { accessToken } = await login(app.http, acme, active.email);
      const bearer = await app.http
        .patch('/api/v1/auth/profile')
        .set({ Authorization: `Bearer ${accessToken}` })
        .send({ governmentIdCountry: 'ZZ' });
      expect(bearer.status).to.equal(400);
      expect(bearer.body).to.include({ error: 'governmentIdCountry must be an ISO 3166-1 alpha-2 country code', code: 'validation_error' });
    });

    it('keeps another partner out: 404 on reads, 403 on writes', async () => {
      const user = await profiled();
      const read = await app.http.get(`/api/v1/user/profile?userId=${user.id}`).set(globex.headers);
      expect(read.status).to.equal(404);
      expect(read.body).to.include({ error: 'User not found', code: 'user_not_found' });
      const completion = await app.http.get(`/api/v1/user/profile/check-completion?userId=${user.id}`).set(globex.headers);
      expect(completion.status).to.equal(404);
      for (const res of [
        await app.http.post('/api/v1/user/profile').set(globex.headers).send({ userId: user.id, firstName: 'Eve' }),
        await app.http.patch('/api/v1/user/profile').set(globex.headers).send({ userId: user.id, firstName: 'Eve' }),
        await app.http.post('/api/v1/partner/kyc').set(globex.headers).send({ userId: user.id }),
        await app.http.post('/api/v1/auth/kyc/verify').set(globex.headers).send({ userId: user.id }),
      ]) {
        expect(res.status).to.equal(403);
        expect(res.body).to.include({ error: 'User does not belong to this partner', code: 'user_of_another_partner' });
      }
      for (const path of [`/api/v1/user/kyc/status?userId=${user.id}`, `/api/v1/auth/kyc/simple-status?userId=${user.id}`]) {
        const res = await app.http.get(path).set(globex.headers);
        expect(res.status, path).to.equal(404);
        expect(res.body, path).to.include({ error: 'User not found', code: 'user_not_found' });
      }
      expect((await app.http.get(`/api/v1/user/profile?userId=${user.id}`).set(acme.headers)).body.data.profile.firstName).to.equal('Ada');
    });

    it('reads and writes the token user’s profile at the bearer twins', async () => {
      const user = await activeUser(app.http, acme);
      const { accessToken } = await login(app.http, acme, user.email);
      const bearer = { Authorization: `Bearer ${accessToken}` };
      const patched = await app.http.patch('/api/v1/auth/profile').set(bearer).send({ city: 'Medellín' });
      expect(patched.status).to.equal(200);
      expect(patched.body.data.profile.city).to.equal('Medellín');
      expect((await app.http.get('/api/v1/auth/profile').set(bearer)).body.data.profile.city).to.equal('Medellín');
      const twice = await app.http.post('/api/v1/auth/profile').set(bearer).send({ firstName: 'X' });
      expect(twice.status).to.equal(409);
      expect(twice.body).to.include({ error: `PersonalProfile already exists: ${user.id}`, code: 'profile_exists' });
      expect((await app.http.get('/api/v1/auth/profile').set(acme.headers)).status).to.equal(401);
    });
  });

  describe('KYC', () => {
    it('needs the profile first: 404 "PersonalProfile not found: <userId>"', async () => {
      const user = await registerUser(app.http, acme);
      const res = await startKyc(user.id);
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ error: `PersonalProfile not found: ${user.id}`, code: 'profile_not_found' });
      expect((await status(user.id)).kyc.hasKyc).to.equal(false);
    });

    it('rejects a bad birthDate with 400 "Invalid birthDate format. Use YYYY-MM-DD"', async () => {
      const user = await profiled();
      for (const birthDate of ['1990/01/01', '1990-13-01', 'yesterday']) {
        const res = await startKyc(user.id, { birthDate });
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('Invalid birthDate format. Use YYYY-MM-DD');
      }
      expect((await status(user.id)).kyc.hasKyc).to.equal(false);
    });

    it('answers 409 "KYC already in progress" once submitted for review', async () => {
      const user = await profiled();
      const start = await startKyc(user.id);
      expect((await complete(start.body.inquiryId, 'needs_review')).status).to.equal(202);
      const res = await startKyc(user.id);
      expect(res.status).to.equal(409);
      expect(res.body).to.include({ error: 'KYC already in progress', code: 'kyc_in_progress' });
      expect((await status(user.id)).kyc).to.include({ status: 'needs_review', canStartNewKyc: false });
    });

    for (const outcome of ['declined', 'failed', 'approved'] as const) {
      it(`answers 422 "KYC already finalized with status: ${outcome}" after ${outcome}`, async () => {
        const user = await profiled();
        const start = await startKyc(user.id);
        await complete(start.body.inquiryId, outcome);
        const res = await startKyc(user.id);
        expect(res.status).to.equal(422);
        expect(res.body).to.include({ error: `KYC already finalized with status: ${outcome}`, code: 'kyc_finalized' });
        const view = await status(user.id);
        expect(view.userStatus).to.equal(outcome === 'approved' ? 'active' : 'kyc_required');
        if (outcome !== 'approved') {
          const { body } = await app.http.get(`/api/v1/partner/users/${user.id}`).set(acme.headers);
          expect(body.data.user.status).to.equal('kyc_required');
        }
      });
    }

    it('refuses a suspended or banned user with 409 "User account is <status>"', async () => {
      const user = await profiled();
      const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      expect((await app.http.post(`/admin/v1/users/${user.id}/suspend`).set(admin).send({})).status).to.equal(200);
      const suspended = await startKyc(user.id);
      expect(suspended.status).to.equal(409);
      expect(suspended.body).to.include({ success: false, error: 'User account is suspended', code: 'user_suspended_or_banned' });
      expect((await app.http.post(`/admin/v1/users/${user.id}/ban`).set(admin).send({})).status).to.equal(200);
      expect((await startKyc(user.id)).body).to.include({ error: 'User account is banned', code: 'user_suspended_or_banned' });
      expect((await status(user.id)).kyc.hasKyc).to.equal(false);
    });

    it('shows history items in the interface’s five values, an expired verification as failed naming expired', async () => {
      const user = await profiled();
      const first = await startKyc(user.id);
      await complete(first.body.inquiryId, 'expired');
      const second = await startKyc(user.id);
      await complete(second.body.inquiryId, 'approved');
      const { accessToken } = await login(app.http, acme, user.email);
      const bearer = { Authorization: `Bearer ${accessToken}` };
      for (const path of ['/api/v1/auth/kyc/history', '/api/v1/user/kyc/history']) {
        const res = await app.http.get(path).set(bearer);
        expect(res.status, path).to.equal(200);
        expect(res.body.data.total, path).to.equal(2);
        const [approved, expired] = res.body.data.history;
        expect(approved, path).to.include({ status: 'approved', providerVerificationId: second.body.inquiryId, rejectionReasons: null });
        expect(expired, path).to.include({ status: 'failed', providerVerificationId: first.body.inquiryId });
        expect(expired.rejectionReasons[0], path).to.equal('expired');
      }
      // The status view and the document read keep the full KYC status.
      expect((await status(user.id)).kyc.status).to.equal('approved');
      expect((await app.http.get('/api/v1/auth/kyc/document/me').set(bearer)).body.data.kycStatus).to.equal('approved');
    });

    it('shows a declined verification as failed in the history, naming declined, while the status view keeps declined', async () => {
      const user = await profiled();
      const start = await startKyc(user.id);
      await complete(start.body.inquiryId, 'declined');
      expect((await status(user.id)).kyc.status).to.equal('declined');
      // The history's bearer routes need an active user, which a declined one is not: the service the routes answer with.
      const [row] = await app.tally.kyc.history(user.id);
      expect(row?.status).to.equal('declined');
      const item = app.tally.kyc.historyItem(row as NonNullable<typeof row>);
      expect(item.status).to.equal('failed');
      expect(item.rejectionReasons?.[0]).to.equal('declined');
    });

    it('starts a new verification after expiry', async () => {
      const user = await profiled();
      const first = await startKyc(user.id);
      await complete(first.body.inquiryId, 'expired');
      const view = await status(user.id);
      expect(view.kyc).to.include({ status: 'expired', isExpired: true, canStartNewKyc: true });
      expect(view.permissions.canStartKyc).to.equal(true);
      const second = await startKyc(user.id);
      expect(second.status).to.equal(200);
      expect(second.body.isExisting).to.equal(false);
      expect(second.body.inquiryId).to.not.equal(first.body.inquiryId);
      expect((await status(user.id)).kyc.status).to.equal('created');
      await complete(second.body.inquiryId, 'approved');
      expect((await status(user.id)).userStatus).to.equal('active');
    });

    it('answers 502 "Failed to create identity inquiry" when the provider fails, and records nothing', async () => {
      const user = await profiled();
      const real = app.tally.providers.identity.get('sandbox');
      if (!real) throw new Error('sandbox provider missing');
      app.tally.providers.identity.set('sandbox', {
        name: 'sandbox',
        createInquiry: async () => {
          throw new ProviderError('timeout', 'sandbox');
        },
        getInquiry: real.getInquiry.bind(real),
        parseWebhook: real.parseWebhook.bind(real),
      });
      try {
        const res = await startKyc(user.id);
        expect(res.status).to.equal(502);
        expect(res.body).to.include({ success: false, error: 'Failed to create identity inquiry' });
      } finally {
        app.tally.providers.identity.set('sandbox', real);
      }
      expect(await app.tally.store.readStream(`kyc-${user.id}`)).to.have.length(0);
      expect((await app.http.get(`/api/v1/partner/users/${user.id}`).set(acme.headers)).body.data.user.status).to.equal('pending');
    });

    it('gives a simple status string, not_started before any verification', async () => {
      const user = await profiled();
      expect((await app.http.get(`/api/v1/auth/kyc/simple-status?userId=${user.id}`).set(acme.headers)).body).to.deep.equal({
        success: true,
        data: { status: 'not_started' },
      });
      await startKyc(user.id);
      expect((await app.http.get(`/api/v1/auth/kyc/simple-status?userId=${user.id}`).set(acme.headers)).body.data.status).to.equal('created');
    });

    it('re-syncs from the provider with POST auth/kyc/verify', async () => {
      const user = await profiled();
      const noKyc = await app.http.post('/api/v1/auth/kyc/verify').set(acme.headers).send({ userId: user.id });
      expect(noKyc.status).to.equal(404);
      expect(noKyc.body).to.include({ error: `KycVerification not found: ${user.id}`, code: 'kyc_not_found' });
      const start = await startKyc(user.id);
      // Opening the hosted page moves the inquiry to pending at the provider, without a webhook.
      expect((await app.http.get(new URL(start.body.verificationUrl).pathname)).status).to.equal(200);
      expect((await status(user.id)).kyc.status).to.equal('created');
      const res = await app.http.post('/api/v1/auth/kyc/verify').set(acme.headers).send({ userId: user.id });
      expect(res.status).to.equal(200);
      expect(res.body.data.kyc.status).to.equal('pending');
    });
  });

  describe('sandbox inquiries', () => {
    it('answers 404 "Inquiry not found" for an unknown inquiry or another partner’s, and 409 when decided otherwise', async () => {
      const user = await profiled();
      const start = await startKyc(user.id);
      for (const res of [
        await complete('inq_unknown', 'approved'),
        await app.http.post(`/sandbox/v1/kyc/${start.body.inquiryId}/complete`).set(globex.headers).send({ outcome: 'approved' }),
        await app.http.get('/sandbox/identity/inquiries/inq_unknown'),
      ]) {
        expect(res.status).to.equal(404);
        expect(res.body).to.include({ success: false, error: 'Inquiry not found', code: 'inquiry_not_found' });
      }
      expect((await complete(start.body.inquiryId, 'approved')).status).to.equal(202);
      const again = await complete(start.body.inquiryId, 'declined');
      expect(again.status).to.equal(409);
      expect(again.body).to.include({ error: `Sandbox inquiry ${start.body.inquiryId} is already approved`, code: 'inquiry_already_decided' });
    });
  });

  describe('identity provider callbacks', () => {
    const webhook = (body: string, signature?: string) => {
      const req = app.http.post('/webhooks/identity/sandbox').set('Content-Type', 'application/json');
      if (signature) req.set('X-Signature', signature);
      return req.send(body);
    };

    it('refuses an unsigned or badly signed callback with 401 and changes nothing', async () => {
      const user = await profiled();
      const start = await startKyc(user.id);
      const body = JSON.stringify({
        id: 'evt_forged',
        type: 'inquiry.approved',
        createdAt: new Date().toISOString(),
        data: { inquiryId: start.body.inquiryId, referenceId: user.id, status: 'approved', snapshot: null },
      });
      const unsigned = await webhook(body);
      expect(unsigned.status).to.equal(401);
      expect(unsigned.body).to.include({ success: false, error: 'Invalid webhook signature' });
      const wrongSecret = await webhook(body, signPayload('not-the-secret', Buffer.from(body), Math.floor(Date.now() / 1000)));
      expect(wrongSecret.status).to.equal(401);
      const secret = app.tally.keys.webhooks['identity/sandbox'] ?? '';
      const stale = await webhook(body, signPayload(secret, Buffer.from(body), Math.floor(Date.now() / 1000) - 301));
      expect(stale.status).to.equal(401);
      const tampered = await webhook(body.replace('approved', 'declined'), signPayload(secret, Buffer.from(body), Math.floor(Date.now() / 1000)));
      expect(tampered.status).to.equal(401);
      expect((await status(user.id)).kyc.status).to.equal('created');
      expect((await status(user.id)).userStatus).to.equal('kyc_required');
    });

    it('applies a redelivered callback once, and ignores a late one that would move a final status back', async () => {
      const user = await profiled();
      const start = await startKyc(user.id);
      const secret = app.tally.keys.webhooks['identity/sandbox'] ?? '';
      const send = (id: string, status: string) => {
        const body = JSON.stringify({
          id,
          type: `inquiry.${status}`,
          createdAt: new Date().toISOString(),
          data: { inquiryId: start.body.inquiryId, referenceId: user.id, status, snapshot: null },
        });
        return webhook(body, signPayload(secret, Buffer.from(body), Math.floor(Date.now() / 1000)));
      };
      expect((await send('evt_1', 'approved')).status).to.equal(200);
      expect((await send('evt_1', 'approved')).status).to.equal(200);
      expect((await send('evt_0', 'needs_review')).status).to.equal(200);
      const events = await app.tally.store.readStream(`kyc-${user.id}`);
      expect(events.map((e) => e.type)).to.deep.equal(['KycVerificationStarted', 'KycStatusChanged']);
      expect((await status(user.id)).kyc.status).to.equal('approved');
    });
  });
});
