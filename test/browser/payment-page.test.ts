import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { launchChromium } from '../support/browser';
import { balanceOf, customer, PAYER } from '../support/ledger';

describe('ledger in a browser: the mock provider’s hosted payment page', function () {
  this.timeout(90_000);
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

  it('opens the payment link, pays, and the balance shows the deposit', async () => {
    const who = await customer(app.http, partner);
    const created = await app.http
      .post('/api/v1/transactions/deposit')
      .set(who.bearer)
      .send({ toAccountId: who.accountId, amount: 25.5, currency: 'USDC', provider: 'mock', description: 'Top up <script>', metadata: PAYER });
    expect(created.status).to.equal(201);
    const page = await chromium.browser.newPage();
    const response = await page.goto(`${app.url}${created.body.paymentLink}`);
    expect(response?.status()).to.equal(200);
    expect(await page.title()).to.equal('Mock payment');
    const text = (await page.textContent('body')) ?? '';
    expect(text).to.contain('25.5');
    expect(text).to.contain('Top up <script>');
    await Promise.all([page.waitForLoadState('load'), page.click('#pay')]);
    expect(await page.textContent('body')).to.match(/confirmed/i);
    await page.close();
    expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '25.50000000', debits: '0.00000000' });
    const txn = await app.http.get(`/api/v1/transactions/${created.body.transactionId}`).set(who.bearer);
    expect(txn.body.status).to.equal('COMPLETED');
  });

  it('cancels: the deposit fails and nothing is credited', async () => {
    const who = await customer(app.http, partner);
    const created = await app.http
      .post('/api/v1/transactions/deposit')
      .set(who.bearer)
      .send({ toAccountId: who.accountId, amount: 10, currency: 'USDC', provider: 'mock', description: 'Top up', metadata: PAYER });
    const page = await chromium.browser.newPage();
    await page.goto(`${app.url}${created.body.paymentLink}`);
    await Promise.all([page.waitForLoadState('load'), page.click('#cancel')]);
    expect(await page.textContent('body')).to.match(/failed/i);
    await page.close();
    expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '0.00000000', debits: '0.00000000' });
    expect((await app.http.get(`/api/v1/transactions/${created.body.transactionId}`).set(who.bearer)).body.status).to.equal('FAILED');
  });
});
