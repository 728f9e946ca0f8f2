import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { accountDecider } from '../../src/domain/ledger/account';
import { ADMIN_TOKEN, createPartner, lastWritten, type PartnerCredentials, type startTestApp, uniqueEmail } from '../support/app';
import { balanceOf, type Customer, customer, fund, PAYOUT_DESTINATION, startWithCustomers } from '../support/ledger';

/**
 * Rules a mutation audit found no test held (a one-line change to each left every test green), and
 * rules only one test held: each is checked here on its own, through the API.
 */
describe('rules held over HTTP: token algorithms, control characters at the range edges, balances, conservation, cards, settlement', function () {
  this.timeout(120_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  before(async () => {
    ({ app, acme, ada, bob } = await startWithCustomers());
    globex = await createPartner(app.http, 'Globex');
  });
  after(() => app?.close());

  const transfer = (who: Customer, to: Customer, amount: string, description = 'rules') =>
    app.http.post('/api/v1/transactions/transfer').set(who.bearer).send({ fromAccountId: who.accountId, toAccountId: to.accountId, amount, description });

  describe('access tokens', () => {
    const accounts = (token: string) => app.http.get('/api/v1/user/accounts').set('Authorization', `Bearer ${token}`);

    it('refuses a token signed HS384 or HS512 with the real signing key (the algorithm is pinned to HS256)', async () => {
      const decoded = jwt.decode(ada.token, { complete: true });
      if (!decoded || typeof decoded.payload === 'string') throw new Error('not a JWT');
      const key = app.tally.keys.signing.find((k) => k.kid === decoded.header.kid);
      if (!key) throw new Error('the token names no signing key of the service');
      const resign = (algorithm: jwt.Algorithm) => jwt.sign(decoded.payload, key.secret, { algorithm, keyid: key.kid });
      // Control: the same claims signed again with the key and HS256 are accepted, so only the algorithm differs below.
      expect((await accounts(resign('HS256'))).status).to.equal(200);
      for (const algorithm of ['HS384', 'HS512'] as const) {
        const token = resign(algorithm);
        expect(jwt.decode(token, { complete: true })?.header.alg).to.equal(algorithm);
        const res = await accounts(token);
        expect([res.status, res.body.error, res.body.code], algorithm).to.deep.equal([401, 'Invalid or expired token', 'token_invalid']);
      }
    });

    it('stops a token at its expiry though it was accepted (and remembered) a moment before', async () => {
      const decoded = jwt.decode(ada.token, { complete: true });
      if (!decoded || typeof decoded.payload === 'string') throw new Error('not a JWT');
      const key = app.tally.keys.signing.find((k) => k.kid === decoded.header.kid);
      if (!key) throw new Error('the token names no signing key of the service');
      const exp = Math.floor(Date.now() / 1000) + 2;
      const shortLived = jwt.sign({ ...decoded.payload, exp }, key.secret, { algorithm: 'HS256', keyid: key.kid });
      expect((await accounts(shortLived)).status).to.equal(200);
      await new Promise((r) => setTimeout(r, exp * 1000 + 100 - Date.now()));
      const res = await accounts(shortLived);
      // Past its expiry a token of ours is told apart from a bad one by its code.
      expect([res.status, res.body.error, res.body.code]).to.deep.equal([401, 'Invalid or expired token', 'token_expired']);
    });
  });

  describe('login code sends', () => {
    const send = (partner: PartnerCredentials, email: string) => app.http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email });
    const sixSends = async (partner: PartnerCredentials, email: string) => {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await send(partner, email)).status);
      return statuses;
    };

    it("counts one partner's sends apart from another's: the same email still gets five from a second partner", async () => {
      const email = uniqueEmail('two-partners');
      expect(await sixSends(acme, email)).to.deep.equal([200, 200, 200, 200, 200, 429]);
      expect(await sixSends(globex, email)).to.deep.equal([200, 200, 200, 200, 200, 429]);
    });

    it('counts the sends of the last hour: still 429 after 59 minutes, a send again after 61', async () => {
      const email = uniqueEmail('hourly');
      expect(await sixSends(acme, email)).to.deep.equal([200, 200, 200, 200, 200, 429]);
      // The sends' times, moved back (the table only counts them).
      await app.tally.sql.query(`UPDATE login_send_log SET sent_at = sent_at - interval '59 minutes'`);
      expect((await send(acme, email)).status).to.equal(429);
      await app.tally.sql.query(`UPDATE login_send_log SET sent_at = sent_at - interval '2 minutes'`);
      expect((await send(acme, email)).status).to.equal(200);
    });
  });

  describe('text fields: control characters at the edges of the refused ranges', () => {
    const REFUSED: Array<[string, string]> = [
      ['U+0001', '\u0001'],
      ['U+0008', '\u0008'],
      ['U+000B', '\u000b'],
      ['U+000C', '\u000c'],
      ['U+000E', '\u000e'],
      ['U+001F', '\u001f'],
      ['U+0080', '\u0080'],
      ['U+009F', '\u009f'],
    ];
    const ACCEPTED: Array<[string, string]> = [
      ['tab', 'a\tb'],
      ['line feed', 'a\nb'],
      ['carriage return', 'a\rb'],
      ['U+00A0', 'a\u00a0b'],
      ['space and tilde (next to the ranges)', 'a b~'],
    ];

    for (const [name, character] of REFUSED)
      it(`refuses ${name} in a description (400), and writes nothing`, async () => {
        const before = await lastWritten(app);
        const res = await transfer(ada, bob, '0.01', `before${character}after`);
        expect([res.status, res.body.error]).to.deep.equal([400, 'description contains characters that are not allowed']);
        expect(await lastWritten(app)).to.equal(before);
      });

    it('accepts tab, line feed, carriage return and U+00A0, and keeps them as sent', async () => {
      for (const [name, text] of ACCEPTED) {
        const res = await transfer(ada, bob, '0.01', text);
        expect(res.status, name).to.equal(201);
        expect(res.body.description, name).to.equal(text);
      }
    });
  });

  describe('balances', () => {
    it('transfers exactly the balance, and refuses the balance plus 0.000001 (and then a single unit)', async () => {
      const carol = await customer(app.http, acme);
      await fund(app.http, acme, carol, '10.5');
      const over = await transfer(carol, bob, '10.500001');
      expect([over.status, over.body.error]).to.deep.equal([400, `Insufficient balance in account ${carol.accountId}`]);
      expect(await balanceOf(app.http, carol)).to.deep.equal({ credits: '10.50000000', debits: '0.00000000' });
      expect((await transfer(carol, bob, '10.5')).status).to.equal(201);
      expect(await balanceOf(app.http, carol)).to.deep.equal({ credits: '10.50000000', debits: '10.50000000' });
      const unit = await transfer(carol, bob, '0.00000001');
      expect([unit.status, unit.body.error]).to.deep.equal([400, `Insufficient balance in account ${carol.accountId}`]);
    });
  });

  describe('conservation of money', () => {
    it('refuses (500) a transfer whose decider credits another amount than it debits, and appends nothing', async () => {
      const decide = accountDecider.decide;
      // A decider made wrong: its credits of transfers are a unit larger than asked.
      accountDecider.decide = (command, state) =>
        decide(command.type === 'Credit' && command.reason === 'transfer' ? { ...command, amount: (Number(command.amount) + 1).toFixed(8) } : command, state);
      const before = { head: await lastWritten(app), ada: await balanceOf(app.http, ada), bob: await balanceOf(app.http, bob) };
      let res: Awaited<ReturnType<typeof transfer>>;
      try {
        res = await transfer(ada, bob, '1');
      } finally {
        accountDecider.decide = decide;
      }
      expect([res.status, res.body.error]).to.deep.equal([500, 'Internal server error']);
      expect(await lastWritten(app)).to.equal(before.head);
      expect(await balanceOf(app.http, ada)).to.deep.equal(before.ada);
      expect(await balanceOf(app.http, bob)).to.deep.equal(before.bob);
      // The right decider again: the same transfer goes through.
      expect((await transfer(ada, bob, '1')).status).to.equal(201);
    });
  });

  describe('cards across users and partners', () => {
    const key = () => ({ 'x-idempotency-key': randomUUID() });
    async function holder(partner: PartnerCredentials): Promise<{ who: Customer; cardId: string }> {
      const who = await customer(app.http, partner);
      const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
      const issued = await app.http.post('/api/v1/cards').set(who.bearer).set(key()).send({});
      expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
      await fund(app.http, partner, who, '40');
      return { who, cardId: issued.body.data.id };
    }
    const purchase = { amount: 5, currency: 'USD', merchantName: 'Corner Shop', merchantCategoryCode: '5411' };

    it("keeps a card's transactions and settlements to its user and partner: another user 403, another partner 404, nothing moved", async () => {
      const owner = await holder(acme);
      const sameFirm = await holder(acme);
      const elsewhere = await holder(globex);
      const spent = await app.http.post(`/sandbox/v1/cards/${owner.cardId}/authorizations`).set(acme.headers).send(purchase);
      expect(spent.status, JSON.stringify(spent.body)).to.equal(201);
      const txnId = spent.body.data.id;
      const ofCard = (who: Customer, cardId: string) => app.http.get('/api/v1/cards/transactions').query({ cardId }).set(who.bearer);

      const sameFirmRead = await ofCard(sameFirm.who, owner.cardId);
      expect([sameFirmRead.status, sameFirmRead.body.error]).to.deep.equal([403, 'Card does not belong to the authenticated user']);
      const elsewhereRead = await ofCard(elsewhere.who, owner.cardId);
      expect([elsewhereRead.status, elsewhereRead.body.error]).to.deep.equal([404, 'Card not found']);
      for (const other of [sameFirm, elsewhere]) {
        const own = await app.http.get('/api/v1/cards/transactions').set(other.who.bearer);
        expect(own.body.items.map((t: { id: string }) => t.id)).to.not.include(txnId);
      }

      const foreignAuthorization = await app.http.post(`/sandbox/v1/cards/${owner.cardId}/authorizations`).set(globex.headers).send(purchase);
      expect([foreignAuthorization.status, foreignAuthorization.body.error]).to.deep.equal([404, 'Card not found']);
      for (const action of ['clear', 'reverse']) {
        const res = await app.http.post(`/sandbox/v1/card-transactions/${txnId}/${action}`).set(globex.headers).send({});
        expect(res.status, action).to.equal(404);
      }
      expect(await balanceOf(app.http, owner.who)).to.deep.equal({ credits: '40.00000000', debits: '5.00000000' });
      const mine = await ofCard(owner.who, owner.cardId);
      expect(mine.body.items.map((t: { id: string; spend: { status: string } }) => [t.id, t.spend.status])).to.deep.equal([[txnId, 'pending']]);
    });
  });

  describe('card secrets by status', () => {
    it('never reveals the PIN of a canceled card (409)', async () => {
      const who = await customer(app.http, acme);
      const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(acme.headers).send({});
      const issued = await app.http.post('/api/v1/cards').set(who.bearer).set({ 'x-idempotency-key': randomUUID() }).send({});
      expect((await app.http.put('/api/v1/cards/pin').set(who.bearer).set({ 'x-idempotency-key': randomUUID() }).send({ pin: '4321' })).status).to.equal(200);
      expect((await app.http.get('/api/v1/cards/pin').set(who.bearer)).body.data.pin).to.equal('4321');
      const canceled = await app.http.post(`/admin/v1/cards/${issued.body.data.id}/cancel`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send();
      expect(canceled.body.status).to.equal('canceled');
      const res = await app.http.get('/api/v1/cards/pin').set(who.bearer);
      expect([res.status, res.body.error]).to.deep.equal([409, 'Cannot reveal the PIN of a card in status canceled']);
    });
  });

  describe('settlement only from pending', () => {
    /** A payout of 40,000 COP (10 USDC): its transactionId and the provider's paymentId. */
    async function payout(who: Customer): Promise<{ transactionId: string; paymentId: string }> {
      const transactionId = randomUUID();
      const res = await app.http
        .post('/api/v1/user/payout')
        .set(who.bearer)
        .send({ transactionId, amount: 40000, asset: 'COP', provider: 'mock', source: { metadata: { fundingId: 'f1' } }, destination: PAYOUT_DESTINATION });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return { transactionId, paymentId: res.body.paymentId };
    }
    const statusOf = async (who: Customer, uuid: string) => (await app.http.get(`/api/v1/transactions/${uuid}`).set(who.bearer)).body.status;

    it('never settles a failed payout, nor fails a settled one: the money moves once', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const failed = await payout(who);
      await app.http.post(`/sandbox/v1/payouts/${failed.paymentId}/fail`).set(acme.headers).send({ reason: 'account_closed' });
      await app.http.post(`/sandbox/v1/payouts/${failed.paymentId}/settle`).set(acme.headers).send();
      expect(await statusOf(who, failed.transactionId)).to.equal('FAILED');
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '110.00000000', debits: '10.00000000' });

      const settled = await payout(who);
      await app.http.post(`/sandbox/v1/payouts/${settled.paymentId}/settle`).set(acme.headers).send();
      await app.http.post(`/sandbox/v1/payouts/${settled.paymentId}/fail`).set(acme.headers).send({ reason: 'account_closed' });
      expect(await statusOf(who, settled.transactionId)).to.equal('COMPLETED');
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '110.00000000', debits: '20.00000000' });
      const list = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}`).set(who.bearer);
      expect(list.body.map((t: { status: string }) => t.status)).to.deep.equal(['COMPLETED', 'REVERSED', 'FAILED', 'COMPLETED']);
    });

    it('never confirms a failed deposit: it stays FAILED and credits nothing', async () => {
      const who = await customer(app.http, acme);
      const created = await app.http
        .post('/api/v1/transactions/deposit')
        .set(who.bearer)
        .send({
          toAccountId: who.accountId,
          amount: '7',
          currency: 'USDC',
          provider: 'mock',
          description: 'top up',
          metadata: { payer: { documentType: 'CC', documentNumber: '1020304050' } },
        });
      expect(created.status).to.equal(201);
      const uuid = created.body.transactionId;
      expect((await app.http.post(`/sandbox/v1/deposits/${uuid}/fail`).set(acme.headers).send()).status).to.equal(202);
      await app.http.post(`/sandbox/v1/deposits/${uuid}/confirm`).set(acme.headers).send();
      expect(await statusOf(who, uuid)).to.equal('FAILED');
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '0.00000000', debits: '0.00000000' });
    });

    it('never clears or reverses a card spend once it is settled (409), and the balance stays', async () => {
      const who = await customer(app.http, acme);
      const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(acme.headers).send({});
      const issued = await app.http.post('/api/v1/cards').set(who.bearer).set({ 'x-idempotency-key': randomUUID() }).send({});
      await fund(app.http, acme, who, '50');
      const spend = async () =>
        (
          await app.http
            .post(`/sandbox/v1/cards/${issued.body.data.id}/authorizations`)
            .set(acme.headers)
            .send({ amount: 10, currency: 'USD', merchantName: 'Corner Shop', merchantCategoryCode: '5411' })
        ).body.data.id as string;
      const settle = (id: string, action: 'clear' | 'reverse') => app.http.post(`/sandbox/v1/card-transactions/${id}/${action}`).set(acme.headers).send({});
      const cleared = await spend();
      expect((await settle(cleared, 'clear')).status).to.equal(200);
      const reversed = await spend();
      expect((await settle(reversed, 'reverse')).status).to.equal(200);
      const balance = await balanceOf(app.http, who);
      for (const [id, done] of [
        [cleared, 'completed'],
        [reversed, 'reversed'],
      ] as const)
        for (const action of ['clear', 'reverse'] as const) {
          const res = await settle(id, action);
          expect([res.status, res.body.error], `${action} ${done}`).to.deep.equal([409, `Cannot ${action} a card transaction in status ${done}`]);
        }
      expect(await balanceOf(app.http, who)).to.deep.equal(balance);
    });
  });
});
