import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { latestCode, registerUser } from '../support/identity';

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
          .then((res) => res.status);
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
      expect(new Set(statuses)).to.deep.equal(new Set([401]));
    });
  });
});
