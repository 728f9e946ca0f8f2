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
});
