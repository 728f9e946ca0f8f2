import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { activeUser, COMPLETE_PROFILE, latestCode, login, registerUser } from '../support/identity';

describe('identity: the whole flow over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  before(async () => {
    app = await startTestApp();
    partner = await createPartner(app.http);
  });
  after(async () => {
    await app.close();
  });

  it('registers, profiles, verifies identity through the sandbox webhook, logs in and opens one account', async () => {
    const user = await registerUser(app.http, partner);
    const completion0 = await app.http.get(`/api/v1/user/profile/check-completion?userId=${user.id}`).set(partner.headers);
    expect(completion0.status).to.equal(404);
    expect(completion0.body.error).to.equal(`PersonalProfile not found: ${user.id}`);
    const created = await app.http.post('/api/v1/user/profile').set(partner.headers).send({ userId: user.id, firstName: 'Ada' });
    expect(created.status).to.equal(201);
    const partial = await app.http.get(`/api/v1/user/profile/check-completion?userId=${user.id}`).set(partner.headers);
    expect(partial.body.data.isComplete).to.equal(false);
    expect(partial.body.data.missingFields).to.include('lastName').and.not.include('firstName');
    const patched = await app.http
      .patch('/api/v1/user/profile')
      .set(partner.headers)
      .send({ userId: user.id, ...COMPLETE_PROFILE });
    expect(patched.status).to.equal(200);
    expect(patched.body.data.profile).to.include({ expectedMonthlyVolume: '2500', annualSalary: '85000.5', nationality: 'CO' });
    const complete = await app.http.get(`/api/v1/user/profile/check-completion?userId=${user.id}`).set(partner.headers);
    expect(complete.body).to.deep.equal({ success: true, data: { isComplete: true, missingFields: [] } });

    const before = await app.http.get(`/api/v1/user/kyc/status?userId=${user.id}`).set(partner.headers);
    expect(before.status).to.equal(200);
    expect(before.body.data.kyc).to.include({ hasKyc: false, status: null, canStartNewKyc: true });
    expect(before.body.data.permissions).to.include({ maxTransactionAmount: 0, dailyTransactionLimit: 0, requiresKyc: true });

    const start = await app.http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId: user.id, birthDate: '1990-12-10' });
    expect(start.status).to.equal(200);
    expect(start.body).to.include({ success: true, isExisting: false });
    expect(start.body.verificationUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/sandbox\/identity\/inquiries\//);
    expect((await app.http.get(`/api/v1/partner/users/${user.id}`).set(partner.headers)).body.data.user.status).to.equal('kyc_required');
    const again = await app.http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId: user.id });
    expect(again.body).to.include({ isExisting: true, inquiryId: start.body.inquiryId, verificationUrl: start.body.verificationUrl });

    const done = await app.http.post(`/sandbox/v1/kyc/${start.body.inquiryId}/complete`).set(partner.headers).send({ outcome: 'approved' });
    expect(done.status).to.equal(202);
    expect((await app.http.get(`/api/v1/partner/users/${user.id}`).set(partner.headers)).body.data.user).to.include({
      status: 'active',
      kycStatus: 'approved',
    });
    const after = await app.http.get(`/api/v1/user/kyc/status?userId=${user.id}`).set(partner.headers);
    expect(after.body.data.kyc).to.include({ hasKyc: true, isApproved: true, status: 'approved', inquiryId: start.body.inquiryId, canStartNewKyc: false });
    expect(after.body.data.permissions).to.include({ maxTransactionAmount: 10000, dailyTransactionLimit: 50000, requiresKyc: false, canCreateAccounts: true });
    expect(after.body.data.kyc.approvedAt).to.be.a('string');

    const sent = await app.http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email: user.email });
    expect(sent.body).to.deep.equal({ success: true, message: 'If the email is registered, a code has been sent' });
    const code = await latestCode(app.http, partner, user.email);
    expect(code).to.match(/^\d{6}$/);
    const verified = await app.http.post('/api/v1/partner/auth/verify').set(partner.headers).send({ email: user.email, code });
    expect(verified.status).to.equal(200);
    expect(verified.body).to.include({ success: true, tokenType: 'Bearer' });
    expect(verified.body.user).to.deep.equal({ id: user.id, email: user.email, status: 'active' });

    const bearer = { Authorization: `Bearer ${verified.body.accessToken}` };
    const profile = await app.http.get('/api/v1/auth/profile').set(bearer);
    expect(profile.status).to.equal(200);
    expect(profile.body.data.profile.firstName).to.equal('Ada');
    const doc = await app.http.get('/api/v1/auth/kyc/document/me').set(bearer);
    expect(doc.status).to.equal(200);
    expect(doc.body.data.inquiryId).to.equal(start.body.inquiryId);
    expect(doc.body.data.kycStatus).to.equal('approved');
    const history = await app.http.get('/api/v1/user/kyc/history').set(bearer);
    expect(history.body.data.total).to.equal(1);
    expect(history.body.data.history[0]).to.include({ status: 'approved', provider: 'sandbox', providerVerificationId: start.body.inquiryId });
    // The twins at the interface's other paths answer the same.
    expect((await app.http.get('/api/v1/user/kyc/document/me').set(bearer)).body).to.deep.equal(doc.body);
    expect((await app.http.get('/api/v1/auth/kyc/history').set(bearer)).body).to.deep.equal(history.body);

    const accounts = await app.tally.sql.query<{ account_id: string }>('SELECT account_id::text FROM rm_accounts WHERE user_id = $1', [user.id]);
    expect(accounts).to.have.length(1);
    await login(app.http, partner, user.email);
    expect(await app.tally.sql.query('SELECT 1 FROM rm_accounts WHERE user_id = $1', [user.id])).to.have.length(1);
  });

  it('opens exactly one account under two concurrent first logins', async () => {
    const user = await activeUser(app.http, partner);
    // Two codes cannot both be live (a send replaces the code), so race two verifies of one code
    // and two separate login rounds: whatever wins, one account.
    await app.http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email: user.email });
    const code = await latestCode(app.http, partner, user.email);
    const results = await Promise.all([0, 1].map(() => app.http.post('/api/v1/partner/auth/verify').set(partner.headers).send({ email: user.email, code })));
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 401]);
    const accounts = await app.tally.store.readStream(`useraccount-${user.id}`);
    expect(accounts).to.have.length(1);
  });
});
