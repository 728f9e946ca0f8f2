import { expect } from 'chai';
import { createPartner, lastWritten, type PartnerCredentials, startTestApp } from '../support/app';
import { issuedCard } from '../support/cards';
import { COMPLETE_PROFILE, registerUser } from '../support/identity';
import { type Customer, customer, fund } from '../support/ledger';

/** GET partner/users/:userId/export: everything the service holds about a user, as the reads show it (docs/decisions.md, "Personal data"). */
describe('a user’s data export (partner API)', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
    ada = await customer(app.http, acme);
    bob = await customer(app.http, acme);
    await fund(app.http, acme, ada, '120.50');
    const sent = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .send({ fromAccountId: ada.accountId, toAccountId: bob.accountId, amount: '20.25', description: 'lunch' });
    expect(sent.status, sent.text).to.equal(201);
    await issuedCard(app.http, acme, ada.bearer);
  });
  after(() => app.close());

  const exportOf = (userId: string, partner = acme) => app.http.get(`/api/v1/partner/users/${userId}/export`).set(partner.headers);

  it('answers the user, profile, KYC, accounts, cards and transactions exactly as their own reads do', async () => {
    const res = await exportOf(ada.id);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.success).to.equal(true);
    const data = res.body.data;
    expect(Object.keys(data)).to.deep.equal(['user', 'profile', 'kyc', 'accounts', 'cards', 'transactions']);
    const q = `userId=${ada.id}`;
    expect(data.user).to.deep.equal((await app.http.get(`/api/v1/partner/users/${ada.id}`).set(acme.headers)).body.data.user);
    expect(data.profile).to.deep.equal((await app.http.get(`/api/v1/user/profile?${q}`).set(acme.headers)).body.data.profile);
    expect(data.profile.governmentIdNumber).to.equal(COMPLETE_PROFILE.governmentIdNumber);
    expect(data.kyc.status).to.deep.equal((await app.http.get(`/api/v1/user/kyc/status?${q}`).set(acme.headers)).body.data);
    expect(data.kyc.history).to.deep.equal((await app.http.get('/api/v1/user/kyc/history').set(ada.bearer)).body.data.history);
    expect(data.kyc.document).to.deep.equal((await app.http.get('/api/v1/user/kyc/document/me').set(ada.bearer)).body.data);
    expect(data.accounts).to.deep.equal((await app.http.get('/api/v1/user/accounts').set(ada.bearer)).body.items);
    expect(data.cards).to.deep.equal((await app.http.get('/api/v1/cards/me').set(ada.bearer)).body);
    expect(data.cards).to.have.length(1);
    expect(JSON.stringify(data.cards)).to.not.match(/cvc|pin|"pan"/i);
    const listed = await app.http.get(`/api/v1/transactions?accountId=${ada.accountId}&limit=100`).set(ada.bearer);
    expect(data.transactions).to.deep.equal(listed.body);
    expect(data.transactions.map((t: { amount: string }) => t.amount)).to.deep.equal(['20.25000000', '120.50000000']);
  });

  it('shows what a user without a profile, KYC, card or money has: null and empty lists', async () => {
    const fresh = await registerUser(app.http, acme);
    const res = await exportOf(fresh.id);
    expect(res.status, res.text).to.equal(200);
    const { profile, kyc, accounts, cards, transactions } = res.body.data;
    expect({ profile, document: kyc.document, history: kyc.history, accounts, cards, transactions }).to.deep.equal({
      profile: null,
      document: null,
      history: [],
      accounts: [],
      cards: [],
      transactions: [],
    });
    expect(kyc.status.kyc.hasKyc).to.equal(false);
  });

  it('is 404 `User not found` for another partner’s user, an unknown id and a malformed one, and writes nothing', async () => {
    const head = await lastWritten(app);
    for (const [userId, partner] of [
      [ada.id, globex],
      ['0b5e1c7e-8f5a-4c1e-9a57-0d8a3b7e2f11', acme],
      ['not-a-uuid', acme],
    ] as const) {
      const res = await exportOf(userId, partner);
      expect(res.status, userId).to.equal(404);
      expect(res.body).to.include({ success: false, error: 'User not found', code: 'user_not_found' });
    }
    expect(await lastWritten(app)).to.equal(head);
  });
});
