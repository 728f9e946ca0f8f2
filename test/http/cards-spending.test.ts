import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

describe('card spending over HTTP: authorizations, clearing, reversal, balance and card transactions (real Postgres)', function () {
  this.timeout(180_000);
  let app: App;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  const key = () => ({ 'x-idempotency-key': randomUUID() });
  const purchase = (amount: number | string, over: Record<string, unknown> = {}) => ({
    amount,
    currency: 'USD',
    merchantName: 'Corner Shop',
    merchantCategoryCode: '5411',
    ...over,
  });

  /** A customer of `partner` with an active virtual card and `balance` USDC on the account. */
  async function holder(balance: string | null = '100', partner = acme): Promise<{ who: Customer; cardId: string; partner: PartnerCredentials }> {
    const who = await customer(app.http, partner);
    const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
    await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
    const issued = await app.http.post('/api/v1/cards').set(who.bearer).set(key()).send({});
    expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
    if (balance !== null) await fund(app.http, partner, who, balance);
    return { who, cardId: issued.body.data.id, partner };
  }
  const authorize = (h: { cardId: string; partner: PartnerCredentials }, body: Record<string, unknown>) =>
    app.http.post(`/sandbox/v1/cards/${h.cardId}/authorizations`).set(h.partner.headers).send(body);
  const account = async (who: Customer) => (await app.http.get('/api/v1/user/accounts').set(who.bearer)).body.items[0];
  const balance = async (who: Customer) => (await app.http.get('/api/v1/cards/balance').set(who.bearer)).body.data;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
  });

  after(async () => {
    await app.close();
  });

  describe('authorizations', () => {
    it('approves within balance and limit: 201 a pending card transaction with every 2.10 field, its amount held on the account', async () => {
      const h = await holder('100');
      const res = await authorize(h, purchase(25.5, { localAmount: '101000', localCurrency: 'COP', authorizationMethod: 'contactless' }));
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      const { id, type, spend } = res.body.data;
      expect(type).to.equal('spend');
      expect(spend).to.deep.equal({
        amount: 25.5,
        currency: 'USD',
        localAmount: 101000,
        localCurrency: 'COP',
        authorizedAmount: 25.5,
        authorizationMethod: 'contactless',
        memo: null,
        receipt: false,
        merchantName: 'Corner Shop',
        merchantCategory: 'Grocery Stores and Supermarkets',
        merchantCategoryCode: '5411',
        merchantId: null,
        enrichedMerchantIcon: null,
        enrichedMerchantName: null,
        enrichedMerchantCategory: null,
        cardId: h.cardId,
        cardType: 'virtual',
        companyId: acme.id,
        userId: h.who.id,
        userFirstName: 'Ada',
        userLastName: 'Lovelace',
        userEmail: h.who.email,
        status: 'pending',
        declinedReason: null,
        authorizedAt: spend.authorizedAt,
        postedAt: null,
      });
      expect(await account(h.who)).to.include({ credits: '100.00000000', debits: '25.50000000' });
      expect(await balance(h.who)).to.deep.equal([{ currency: 'USD', available: '74.50000000', pending: '25.50000000' }]);
      const ledger = await app.http.get(`/api/v1/transactions/${id}`).set(h.who.bearer);
      expect(ledger.body).to.include({ uuid: id, status: 'PENDING', amount: '25.50000000', debitAccountId: h.who.accountId });
    });

    it('declines in order: CARD_NOT_ACTIVE on a locked card, INSUFFICIENT_FUNDS, then SPEND_LIMIT_EXCEEDED; a decline holds nothing', async () => {
      const h = await holder('50');
      await app.http.patch('/api/v1/cards/limit').set(h.who.bearer).set(key()).send({ amount: 20, frequency: 'perAuthorization' });
      const reasons = async () => {
        const out = [];
        for (const amount of [60, 30, 20]) {
          const res = await authorize(h, purchase(amount));
          expect(res.status).to.equal(201);
          out.push([res.body.data.spend.status, res.body.data.spend.declinedReason]);
        }
        return out;
      };
      await app.http.post('/api/v1/cards/lock').set(h.who.bearer).set(key()).send();
      expect(await reasons()).to.deep.equal([
        ['declined', 'CARD_NOT_ACTIVE'],
        ['declined', 'CARD_NOT_ACTIVE'],
        ['declined', 'CARD_NOT_ACTIVE'],
      ]);
      await app.http.post('/api/v1/cards/unlock').set(h.who.bearer).set(key()).send();
      expect(await reasons()).to.deep.equal([
        ['declined', 'INSUFFICIENT_FUNDS'],
        ['declined', 'SPEND_LIMIT_EXCEEDED'],
        ['pending', null],
      ]);
      expect(await balance(h.who)).to.deep.equal([{ currency: 'USD', available: '30.00000000', pending: '20.00000000' }]);
    });

    it('declines CARD_NOT_ACTIVE on a canceled card', async () => {
      const h = await holder('50');
      await app.http.post(`/admin/v1/cards/${h.cardId}/cancel`).set({ Authorization: 'Bearer test-admin-token' }).send();
      expect((await authorize(h, purchase(1))).body.data.spend.declinedReason).to.equal('CARD_NOT_ACTIVE');
    });

    it("is 404 'Card not found' on another partner's card or an unknown one, and 400 on bad input naming the field", async () => {
      const h = await holder(null);
      for (const res of [await authorize({ ...h, partner: globex }, purchase(1)), await authorize({ ...h, cardId: randomUUID() }, purchase(1))]) {
        expect(res.status).to.equal(404);
        expect(res.body).to.include({ success: false, error: 'Card not found', code: 'card_not_found' });
      }
      expect((await authorize({ ...h, cardId: 'not-a-uuid' }, purchase(1))).body).to.include({ error: 'Card not found', code: 'card_not_found' });
      expect((await authorize(h, purchase(1, { currency: 'EUR' }))).status).to.equal(400);
      expect((await authorize(h, purchase(1, { merchantCategoryCode: '54' }))).body.error).to.equal('merchantCategoryCode must be four digits (ISO 18245)');
      expect((await authorize(h, purchase(0))).body.error).to.equal('Amount must be greater than 0');
      expect((await authorize(h, purchase('1.000000001'))).body.error).to.equal('amount must have at most 8 decimal places');
    });

    it('never overdraws under concurrent authorizations and transfers on one account', async () => {
      const h = await holder('100');
      const bob = await customer(app.http, acme);
      const requests = [];
      for (let i = 0; i < 12; i++) {
        requests.push(authorize(h, purchase(10)));
        requests.push(
          app.http
            .post('/api/v1/transactions/transfer')
            .set(h.who.bearer)
            .send({ fromAccountId: h.who.accountId, toAccountId: bob.accountId, amount: 10, description: 'split' }),
        );
      }
      const answers = await Promise.all(requests);
      const approved = answers.filter((r) => r.status === 201 && r.body.data?.spend?.status === 'pending').length;
      const transferred = answers.filter((r) => r.status === 201 && r.body.uuid).length;
      expect(approved + transferred).to.equal(10);
      const after = await account(h.who);
      expect(after).to.include({ credits: '100.00000000', debits: '100.00000000' });
      expect(await balance(h.who)).to.deep.equal([{ currency: 'USD', available: '0.00000000', pending: `${approved * 10}.00000000` }]);
    });
  });

  describe('clearing and reversal', () => {
    const clear = (h: { partner: PartnerCredentials }, id: string, body: Record<string, unknown> = {}) =>
      app.http.post(`/sandbox/v1/card-transactions/${id}/clear`).set(h.partner.headers).send(body);
    const reverse = (h: { partner: PartnerCredentials }, id: string) =>
      app.http.post(`/sandbox/v1/card-transactions/${id}/reverse`).set(h.partner.headers).send();

    it('clears for the authorized amount: completed with postedAt, the hold posted', async () => {
      const h = await holder('100');
      const id = (await authorize(h, purchase(40))).body.data.id;
      const cleared = await clear(h, id);
      expect(cleared.status, JSON.stringify(cleared.body)).to.equal(200);
      expect(cleared.body.data.spend).to.include({ status: 'completed', amount: 40, authorizedAmount: 40 });
      expect(cleared.body.data.spend.postedAt).to.be.a('string');
      expect(await balance(h.who)).to.deep.equal([{ currency: 'USD', available: '60.00000000', pending: '0.00000000' }]);
      expect((await app.http.get(`/api/v1/transactions/${id}`).set(h.who.bearer)).body).to.include({ status: 'COMPLETED' });
    });

    it('clears for less and returns the rest; for more, needs the balance for the difference (400, still pending, otherwise)', async () => {
      const h = await holder('100');
      const less = (await authorize(h, purchase(40))).body.data.id;
      expect((await clear(h, less, { amount: 35 })).body.data.spend).to.include({ status: 'completed', amount: 35, authorizedAmount: 40 });
      // The rest came back as a credit of its own (a REVERSAL ledger transaction).
      expect(await account(h.who)).to.include({ credits: '105.00000000', debits: '40.00000000' });
      const more = (await authorize(h, purchase(50))).body.data.id;
      const refused = await clear(h, more, { amount: '65.5' });
      expect([refused.status, refused.body.error]).to.deep.equal([400, `Insufficient balance in account ${h.who.accountId}`]);
      expect((await clear(h, more, { amount: '60' })).body.data.spend).to.include({ status: 'completed', amount: 60, authorizedAmount: 50 });
      expect(await balance(h.who)).to.deep.equal([{ currency: 'USD', available: '5.00000000', pending: '0.00000000' }]);
    });

    it('reverses a pending one (its hold back), once: a second clear or reverse is 409; a declined one is 409; unknown or foreign 404', async () => {
      const h = await holder('100');
      const id = (await authorize(h, purchase(30))).body.data.id;
      expect((await reverse(h, id)).body.data.spend).to.include({ status: 'reversed', postedAt: null });
      expect(await balance(h.who)).to.deep.equal([{ currency: 'USD', available: '100.00000000', pending: '0.00000000' }]);
      for (const res of [await reverse(h, id), await clear(h, id)]) expect(res.status).to.equal(409);
      expect((await clear(h, id)).body.error).to.equal('Cannot clear a card transaction in status reversed');
      const declined = (await authorize(h, purchase(5000))).body.data.id;
      expect((await clear(h, declined)).body).to.include({
        success: false,
        error: 'Cannot clear a card transaction in status declined',
        code: 'card_transaction_status_forbids',
      });
      const pending = (await authorize(h, purchase(1))).body.data.id;
      for (const res of [await clear({ partner: globex }, pending), await reverse(h, randomUUID()), await clear(h, 'nope')]) {
        expect([res.status, res.body.error, res.body.code]).to.deep.equal([404, 'Card transaction not found', 'card_transaction_not_found']);
      }
    });
  });

  describe('the card holder a card transaction names', () => {
    it('is the verified identity: its names cannot change once the card exists, other profile fields can, and every answer keeps them', async () => {
      const h = await holder('100');
      const first = await authorize(h, purchase(10));
      const named = { userFirstName: 'Ada', userLastName: 'Lovelace', userEmail: h.who.email };
      expect(first.body.data.spend).to.include(named);
      // A card needs an approved KYC, after which the verified names are fixed (docs/decisions.md, "Profile").
      for (const path of ['/api/v1/auth/profile', '/api/v1/user/profile']) {
        const change = path.includes('auth')
          ? app.http.patch(path).set(h.who.bearer).send({ firstName: 'Augusta', lastName: 'King' })
          : app.http.patch(path).set(h.partner.headers).send({ userId: h.who.id, firstName: 'Augusta', lastName: 'King' });
        const refused = await change;
        expect([refused.status, refused.body.error]).to.deep.equal([409, 'Verified identity fields cannot be changed: firstName, lastName']);
      }
      const moved = await app.http.patch('/api/v1/auth/profile').set(h.who.bearer).send({ city: 'London', occupation: 'mathematician' });
      expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
      const second = await authorize(h, purchase(5));
      expect(second.body.data.spend).to.include(named);
      const cleared = await app.http.post(`/sandbox/v1/card-transactions/${first.body.data.id}/clear`).set(h.partner.headers).send({});
      expect(cleared.body.data.spend).to.include(named);
      const listed = await app.http.get('/api/v1/cards/transactions').set(h.who.bearer);
      expect(listed.body.items.map((t: { spend: Record<string, unknown> }) => [t.spend.userFirstName, t.spend.userLastName, t.spend.userEmail])).to.deep.equal([
        ['Ada', 'Lovelace', h.who.email],
        ['Ada', 'Lovelace', h.who.email],
      ]);
    });
  });

  describe('GET cards/balance and cards/transactions', () => {
    it("is 404 'Card not found' while the user has no card", async () => {
      const who = await customer(app.http, acme);
      for (const path of ['/api/v1/cards/balance', '/api/v1/cards/transactions']) {
        const res = await app.http.get(path).set(who.bearer);
        expect(res.status, path).to.equal(404);
        expect(res.body, path).to.include({ success: false, error: 'Card not found', code: 'card_not_found' });
      }
    });

    it('walks every card transaction exactly once, newest first, while new ones arrive', async () => {
      const h = await holder('1000');
      const made: string[] = [];
      for (let i = 0; i < 7; i++) made.push((await authorize(h, purchase(i + 1))).body.data.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: Record<string, string | number> = { limit: 3, ...(cursor ? { cursor } : {}) };
        const page = await app.http.get('/api/v1/cards/transactions').query(query).set(h.who.bearer);
        expect(page.status, JSON.stringify(page.body)).to.equal(200);
        seen.push(...page.body.items.map((t: { id: string }) => t.id));
        cursor = page.body.nextCursor;
        // Newer ones arrive in the middle of the walk: they are above it, never on a later page.
        if (pages++ === 0) for (let i = 0; i < 4; i++) made.push((await authorize(h, purchase(1))).body.data.id);
      } while (cursor);
      expect(seen).to.deep.equal(made.slice(0, 7).reverse());
      const all = await app.http.get('/api/v1/cards/transactions').query({ cardId: h.cardId }).set(h.who.bearer);
      expect(all.body.items.map((t: { id: string }) => t.id)).to.deep.equal([...made].reverse());
      expect(all.body.nextCursor).to.equal(null);
    });

    it('shows a user only their own card transactions; another user’s cardId is 403, another partner’s 404; a bad cursor 400; another type none', async () => {
      const ada = await holder('50');
      const bob = await holder('50');
      const mine = (await authorize(ada, purchase(5))).body.data.id;
      await authorize(bob, purchase(6));
      const list = await app.http.get('/api/v1/cards/transactions').set(ada.who.bearer);
      expect(list.body.items.map((t: { id: string }) => t.id)).to.deep.equal([mine]);
      const foreign = await app.http.get('/api/v1/cards/transactions').query({ cardId: bob.cardId }).set(ada.who.bearer);
      expect([foreign.status, foreign.body.error, foreign.body.code]).to.deep.equal([403, 'Card does not belong to the authenticated user', 'card_not_owned']);
      const bad = await app.http.get('/api/v1/cards/transactions').query({ cursor: 'not-a-cursor' }).set(ada.who.bearer);
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'cursor is not valid']);
      expect((await app.http.get('/api/v1/cards/transactions').query({ limit: 0 }).set(ada.who.bearer)).status).to.equal(400);
      expect((await app.http.get('/api/v1/cards/transactions').query({ type: 'refund' }).set(ada.who.bearer)).body).to.deep.equal({
        items: [],
        nextCursor: null,
      });
      const other = await holder('50', globex);
      expect((await app.http.get('/api/v1/cards/transactions').set(other.who.bearer)).body.items).to.deep.equal([]);
      const otherPartners = await app.http.get('/api/v1/cards/transactions').query({ cardId: ada.cardId }).set(other.who.bearer);
      expect([otherPartners.status, otherPartners.body.error]).to.deep.equal([404, 'Card not found']);
    });
  });
});
