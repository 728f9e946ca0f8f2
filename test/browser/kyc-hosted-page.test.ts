import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { launchChromium } from '../support/browser';
import { COMPLETE_PROFILE, registerUser } from '../support/identity';

describe('identity in a browser: the sandbox hosted verification page', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  before(async () => {
    app = await startTestApp();
    partner = await createPartner(app.http);
    chromium = await launchChromium();
  });
  after(async () => {
    await chromium?.close();
    await app?.close();
  });

  it('opens verificationUrl, approves, and the user becomes active with no partner call', async () => {
    const user = await registerUser(app.http, partner);
    await app.http
      .post('/api/v1/user/profile')
      .set(partner.headers)
      .send({ userId: user.id, ...COMPLETE_PROFILE, firstName: 'Ada <b>' });
    const kyc = await app.http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId: user.id });
    expect(kyc.status).to.equal(200);

    const page = await chromium.browser.newPage();
    const response = await page.goto(kyc.body.verificationUrl);
    expect(response?.status()).to.equal(200);
    expect(await page.title()).to.equal('Sandbox identity verification');
    // Pre-filled data is shown, escaped.
    expect(await page.content()).to.contain('Ada &lt;b&gt;');
    await Promise.all([page.waitForLoadState('load'), page.click('#approve')]);
    expect(await page.textContent('body')).to.match(/approved/i);
    await page.close();

    // No partner call: the sandbox provider's signed webhook already moved the user.
    const read = await app.http.get(`/api/v1/partner/users/${user.id}`).set(partner.headers);
    expect(read.body.data.user).to.include({ status: 'active', kycStatus: 'approved' });
  });
});
