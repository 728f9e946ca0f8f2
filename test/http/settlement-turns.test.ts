import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { accountStream } from '../../src/domain/ledger/account';
import { type Customer, customer, fund, PAYOUT_DESTINATION } from '../support/ledger';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';

/**
 * Settling a payout appends to its account: it takes the account's turn (CommandHandler.inLane) with
 * the transfers, holds and authorizations on that account, so on a busy account they wait for each
 * other instead of refusing each other's appends until one of them gives up with a 409.
 */
describe('a payout settlement takes its account’s turn', function () {
  this.timeout(30_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let who: Customer;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Turns');
    who = await customer(app.http, acme);
    await fund(app.http, acme, who, '100');
  });
  after(async () => {
    await app?.close();
  });

  const statusOf = async (transactionId: string) => (await app.http.get(`/api/v1/transactions/${transactionId}`).set(who.bearer)).body.status;

  it('waits while the account’s turn is taken, then settles', async () => {
    const transactionId = randomUUID();
    const res = await app.http
      .post('/api/v1/user/payout')
      .set(who.bearer)
      .send({ transactionId, amount: 40000, asset: 'COP', provider: 'mock', source: { metadata: { fundingId: 'f1' } }, destination: PAYOUT_DESTINATION });
    expect(res.status).to.equal(200);

    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const turn = app.tally.commands.inLane(accountStream(who.accountId), () => held);
    // The sandbox provider delivers its signed callback before it answers: the callback waits for the turn.
    const settled = app.http.post(`/sandbox/v1/payouts/${res.body.paymentId}/settle`).set(acme.headers).send();
    const settling = settled.then((r) => r.status);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await statusOf(transactionId)).to.equal('PROCESSING');

    release();
    await turn;
    expect(await settling).to.equal(202);
    expect(await statusOf(transactionId)).to.equal('COMPLETED');
  });
});
