import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { activeUser, kycStartedUser, latestCode, login, registerUser } from '../support/identity';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('hardening: logins, partner secrets and user status over HTTP', () => {
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

  const send = (partner: PartnerCredentials, email: string) => app.http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email });

  const refresh = (partner: PartnerCredentials, refreshToken: string) =>
    app.http.post('/api/v1/partner/auth/refresh').set(partner.headers).send({ refreshToken });
  const profile = (accessToken: string) => app.http.get('/api/v1/auth/profile').set('Authorization', `Bearer ${accessToken}`);
  const operator = (userId: string, action: 'suspend' | 'ban' | 'reinstate') => app.http.post(`/admin/v1/users/${userId}/${action}`).set(admin).send({});
  const sessionEvents = async (sessionId: string) =>
    (await app.tally.sql.query('SELECT 1 FROM es_events WHERE stream_id = $1', [`session-${sessionId}`])).length;
  const sessionOf = (accessToken: string): string => JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString()).sid;

  describe('auth/send limit', () => {
    it('counts sends per partner and email: one partner’s sends never use up another partner’s', async () => {
      const user = await registerUser(app.http, acme);
      const globexSends: number[] = [];
      for (let i = 0; i < 6; i++) globexSends.push((await send(globex, user.email)).status);
      expect(globexSends).to.deep.equal([200, 200, 200, 200, 200, 429]);
      const acmeSends: number[] = [];
      for (let i = 0; i < 6; i++) acmeSends.push((await send(acme, user.email)).status);
      expect(acmeSends).to.deep.equal([200, 200, 200, 200, 200, 429]);
      expect(await latestCode(app.http, acme, user.email)).to.match(/^\d{6}$/);
    });
  });

  describe('a flood of wrong partner secrets', () => {
    it('never slows another partner: failed checks are bounded per key, and a known pair stays fast', async function () {
      this.timeout(120_000);
      const victim = await createPartner(app.http, 'Victim');
      const bystander = await createPartner(app.http, 'Bystander');
      // The victim's own pair was checked before the flood: it is remembered and stays fast.
      expect((await app.http.get('/api/v1/partner/users').set(victim.headers)).status).to.equal(200);
      // Counted as they reach the server: the other calls go once the whole flood is there.
      let received = 0;
      const count = (req: IncomingMessage) => {
        if (req.headers['x-api-key'] === victim.apiKey) received++;
      };
      app.server.on('request', count);
      const wrong = (secret: string) =>
        app.http
          .get('/api/v1/partner/users')
          .set({ 'X-Api-Key': victim.apiKey, 'X-Api-Secret': secret })
          .then((res) => `${res.status} ${res.body.error}${res.headers['retry-after'] ? ' with Retry-After' : ''}`);
      // 200 different wrong secrets, and one wrong secret again and again.
      const flood = [
        ...Array.from({ length: 200 }, (_, i) => wrong(`ts_wrong_${i}_${'x'.repeat(32)}`)),
        ...Array.from({ length: 50 }, () => wrong('ts_always_the_same_wrong_secret')),
      ];
      const deadline = Date.now() + 30_000;
      while (received < flood.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      app.server.off('request', count);
      const timed = async (partner: PartnerCredentials) => {
        const started = performance.now();
        const res = await app.http.get('/api/v1/partner/users').set(partner.headers);
        return { status: res.status, ms: performance.now() - started };
      };
      // The bystander's first call needs a full secret check of its own.
      const first = await timed(bystander);
      const victimDuring = await timed(victim);
      const statuses = await Promise.all(flood);
      expect(first.status).to.equal(200);
      expect(first.ms, `the bystander's first call took ${Math.round(first.ms)} ms`).to.be.below(1_000);
      expect(victimDuring.status).to.equal(200);
      expect(victimDuring.ms, `the victim's known pair took ${Math.round(victimDuring.ms)} ms`).to.be.below(1_000);
      // Checked and wrong, or not checked (the key's budget spent) and told to come back, never a wrong 401.
      expect(new Set(statuses)).to.deep.equal(new Set(['401 Invalid partner credentials', '429 Too many requests with Retry-After']));
    });

    it('never tells a partner its right secret is wrong: its first call behind the flood is 429 with Retry-After, and it passes when it comes back', async function () {
      this.timeout(60_000);
      // Never used on this node: its pair needs a full secret check.
      const victim = await createPartner(app.http, 'Cold victim');
      const flood = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          app.http.get('/api/v1/partner/users').set({ 'X-Api-Key': victim.apiKey, 'X-Api-Secret': `ts_flood_${i}_${'x'.repeat(32)}` }),
        ),
      );
      const first = await app.http.get('/api/v1/partner/users').set(victim.headers);
      expect(first.status).to.equal(429);
      expect(first.body).to.include({ success: false, error: 'Too many requests', code: 'rate_limited' });
      expect(flood.filter((res) => res.status === 401)).to.have.length(4);
      const retryAfter = Number(first.headers['retry-after']);
      expect(retryAfter).to.be.within(1, 2);
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1_000));
      expect((await app.http.get('/api/v1/partner/users').set(victim.headers)).status).to.equal(200);
    });
  });

  describe('sessions of a suspended user', () => {
    it('answers a refresh while suspended with 401 "User account is suspended" and does not spend the token', async () => {
      const user = await activeUser(app.http, acme);
      const tokens = await login(app.http, acme, user.email);
      const sessionId = sessionOf(tokens.accessToken);
      const before = await sessionEvents(sessionId);
      expect((await operator(user.id, 'suspend')).status).to.equal(200);
      const res = await refresh(acme, tokens.refreshToken);
      expect(res.status).to.equal(401);
      expect(res.body).to.include({ success: false, error: 'User account is suspended', code: 'user_not_active' });
      expect(await sessionEvents(sessionId)).to.equal(before);
      expect((await operator(user.id, 'ban')).status).to.equal(200);
      const banned = await refresh(acme, tokens.refreshToken);
      expect(banned.status).to.equal(401);
      expect(banned.body).to.include({ success: false, error: 'User account is banned', code: 'user_not_active' });
      expect(await sessionEvents(sessionId)).to.equal(before);
    });

    it('ends every session on suspension: after reinstatement old access and refresh tokens stay dead, a new login works', async () => {
      const user = await activeUser(app.http, acme);
      const first = await login(app.http, acme, user.email);
      const second = await login(app.http, acme, user.email);
      // Used twice: the node remembers the sessions as active.
      for (const tokens of [first, second, first, second]) expect((await profile(tokens.accessToken)).status).to.equal(200);
      expect((await operator(user.id, 'suspend')).status).to.equal(200);
      expect((await operator(user.id, 'reinstate')).status).to.equal(200);
      for (const tokens of [first, second]) {
        const use = await profile(tokens.accessToken);
        expect(use.status).to.equal(401);
        expect(use.body).to.include({ success: false, error: 'Invalid or expired token' });
        const renewed = await refresh(acme, tokens.refreshToken);
        expect(renewed.status).to.equal(401);
        expect(renewed.body).to.include({ success: false, error: 'Invalid or expired token', code: 'refresh_token_invalid' });
      }
      const fresh = await login(app.http, acme, user.email);
      expect((await profile(fresh.accessToken)).status).to.equal(200);
      const renewed = await refresh(acme, fresh.refreshToken);
      expect(renewed.status).to.equal(200);
      expect((await profile(renewed.body.accessToken)).status).to.equal(200);
    });
  });

  describe('reinstatement', () => {
    it('lands where the user would be without the suspension: KYC approved while suspended makes them active', async () => {
      const user = await kycStartedUser(app.http, acme);
      const status = async () => (await app.http.get(`/api/v1/partner/users/${user.id}`).set(acme.headers)).body.data.user;
      expect((await status()).status).to.equal('kyc_required');
      expect((await operator(user.id, 'suspend')).status).to.equal(200);
      const approved = await app.http.post(`/sandbox/v1/kyc/${user.inquiryId}/complete`).set(acme.headers).send({ outcome: 'approved' });
      expect(approved.status).to.equal(202);
      expect(await status()).to.include({ status: 'suspended', kycStatus: 'approved' });
      const reinstated = await operator(user.id, 'reinstate');
      expect(reinstated.status).to.equal(200);
      expect(await status()).to.include({ status: 'active', kycStatus: 'approved' });
      await login(app.http, acme, user.email);
    });

    it('still returns a user whose KYC was not approved meanwhile to kyc_required', async () => {
      const user = await kycStartedUser(app.http, acme);
      expect((await operator(user.id, 'suspend')).status).to.equal(200);
      const declined = await app.http.post(`/sandbox/v1/kyc/${user.inquiryId}/complete`).set(acme.headers).send({ outcome: 'declined' });
      expect(declined.status).to.equal(202);
      expect((await operator(user.id, 'reinstate')).status).to.equal(200);
      const res = await app.http.get(`/api/v1/partner/users/${user.id}`).set(acme.headers);
      expect(res.body.data.user).to.include({ status: 'kyc_required', kycStatus: 'declined' });
    });
  });
});
