import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { partnerKey } from '../../src/app/ledger/idempotency';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund, PAYER, PAYOUT_DESTINATION } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

const REUSED = { success: false, error: 'Idempotency key reused with different parameters', code: 'idempotency_key_reused' };
/** The answer's status and its body without its requestId (each answer's own). */
const answer = (res: { status: number; body: Record<string, unknown> }) => {
  const { requestId, ...body } = res.body;
  expect(requestId).to.be.a('string');
  return [res.status, body];
};

describe('one idempotency mechanism: transfers, deposits, payouts and card calls share one key space and one in-flight tracker', function () {
  this.timeout(120_000);
  let app: App;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  const lock = (key: string) => app.http.post('/api/v1/cards/lock').set(ada.bearer).set('x-idempotency-key', key).send();
  const unlock = (key: string) => app.http.post('/api/v1/cards/unlock').set(ada.bearer).set('x-idempotency-key', key).send();
  const limit = (key: string) =>
    app.http.patch('/api/v1/cards/limit').set(ada.bearer).set('x-idempotency-key', key).send({ amount: 500, frequency: 'allTime' });
  const transfer = (key: string) =>
    app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .set('Idempotency-Key', key)
      .send({ fromAccountId: ada.accountId, toAccountId: bob.accountId, amount: 1, description: 'keyed' });
  const deposit = (key: string) =>
    app.http
      .post('/api/v1/transactions/deposit')
      .set(ada.bearer)
      .set('Idempotency-Key', key)
      .send({ toAccountId: ada.accountId, amount: 5, currency: 'USDC', provider: 'mock', description: 'keyed', metadata: PAYER });
  const payout = (transactionId: string) =>
    app.http
      .post('/api/v1/user/payout')
      .set(ada.bearer)
      .send({ transactionId, amount: 4000, asset: 'COP', provider: 'mock', source: { metadata: { fundingId: 'f1' } }, destination: PAYOUT_DESTINATION });

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
    ada = await customer(app.http, acme);
    bob = await customer(app.http, acme);
    await fund(app.http, acme, ada, '100');
    const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
    await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(acme.headers).send({});
    expect((await app.http.post('/api/v1/cards').set(ada.bearer).send({})).status).to.equal(201);
  });

  after(async () => {
    await app.close();
  });

  it('refuses (422) a transfer or deposit under a key a card call was made under, and changes nothing', async () => {
    const key = randomUUID();
    expect((await limit(key)).status).to.equal(200);
    for (const res of [await transfer(key), await deposit(key)]) expect(answer(res)).to.deep.equal([422, REUSED]);
    const accounts = (await app.http.get('/api/v1/user/accounts').set(ada.bearer)).body.items[0];
    expect(accounts).to.include({ credits: '100.00000000', debits: '0.00000000' });
    // The card call's own retry still gets its first answer.
    expect((await limit(key)).headers['idempotent-replayed']).to.equal('true');
  });

  it('refuses (422) a card call under a key a transfer or a payout was made under; a payout under a transfer’s or card call’s key is 409', async () => {
    const transferKey = randomUUID();
    expect((await transfer(transferKey)).status).to.equal(201);
    expect(answer(await lock(transferKey))).to.deep.equal([422, REUSED]);
    const payoutId = randomUUID();
    expect((await payout(payoutId)).status).to.equal(200);
    for (const res of [await unlock(payoutId), await transfer(payoutId), await deposit(payoutId)]) expect(answer(res)).to.deep.equal([422, REUSED]);
    const cardKey = randomUUID();
    expect((await lock(cardKey)).status).to.equal(200);
    for (const key of [transferKey, cardKey]) {
      const res = await payout(key);
      expect([res.status, res.body.error]).to.deep.equal([409, 'transactionId already used with different parameters']);
    }
    expect((await unlock(randomUUID())).status).to.equal(200);
  });

  it('keeps each partner’s keys its own: another partner may use the same key for anything', async () => {
    const key = randomUUID();
    expect((await transfer(key)).status).to.equal(201);
    const carol = await customer(app.http, globex);
    await fund(app.http, globex, carol, '10');
    const dave = await customer(app.http, globex);
    const theirs = await app.http
      .post('/api/v1/transactions/transfer')
      .set(carol.bearer)
      .set('Idempotency-Key', key)
      .send({ fromAccountId: carol.accountId, toAccountId: dave.accountId, amount: 1, description: 'same key, other partner' });
    expect(theirs.status).to.equal(201);
  });

  it('tracks copies in flight in one place: while any keyed command runs under a key, a card call, transfer or deposit under it is 400', async () => {
    const key = randomUUID();
    let release: () => void = () => undefined;
    const held = app.tally.ledger.keys.run(partnerKey(acme.id, key), 'refuse', () => new Promise<void>((resolve) => (release = resolve)));
    try {
      for (const res of [await lock(key), await transfer(key), await deposit(key)]) {
        expect([res.status, res.body.error]).to.deep.equal([400, 'Duplicate request in progress']);
      }
    } finally {
      release();
      await held;
    }
    expect((await lock(key)).status).to.equal(200);
  });
});
