import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp } from '../support/app';
import { balanceOf, startWithCustomers } from '../support/ledger';

/**
 * Two nodes on one database, the same keyed transfer sent to both at once, again and again: whichever
 * node makes it, the money moves once, and every answer is the one stored under the key (its number,
 * uuid and time), whichever node gives it.
 */
describe('a keyed transfer sent to two nodes at once', () => {
  let env: Awaited<ReturnType<typeof startWithCustomers>>;
  let second: Awaited<ReturnType<typeof startTestApp>>;

  before(async () => {
    env = await startWithCustomers();
    second = await startTestApp({ databaseUrl: env.app.config.databaseUrl });
  });
  after(async () => {
    await second?.close();
    await env?.app.close();
  });

  it('moves the money once, and every node answers with the transfer stored under the key', async () => {
    const { app, ada, bob } = env;
    const ROUNDS = 6;
    for (let round = 0; round < ROUNDS; round++) {
      const key = randomUUID();
      const send = (node: typeof app) =>
        node.http
          .post('/api/v1/transactions/transfer')
          .set(ada.bearer)
          .set('Idempotency-Key', key)
          .send({ toAccountId: bob.accountId, amount: '1', description: `round ${round}` });
      const answers = await Promise.all([app, second, app, second, second, app].map(send));
      const made = answers.filter((r) => r.status === 201);
      for (const r of answers.filter((x) => x.status !== 201)) expect([r.status, r.body.error]).to.deep.equal([400, 'Duplicate request in progress']);
      expect(made.length).to.be.at.least(2);
      for (const r of made) expect(r.body).to.deep.equal(made[0]?.body);
    }
    // Once per key: Ada's 100 less ROUNDS units, Bob's ROUNDS units, read on either node.
    await app.tally.engine.waitFor(await app.tally.store.headPosition(), { names: ['ledger'] });
    expect(await balanceOf(second.http, ada)).to.deep.equal({ credits: '100.00000000', debits: `${ROUNDS}.00000000` });
    expect(await balanceOf(app.http, bob)).to.deep.equal({ credits: `${ROUNDS}.00000000`, debits: '0.00000000' });
    const list = await app.http.get(`/api/v1/transactions?accountId=${bob.accountId}&limit=50`).set(bob.bearer);
    expect(list.body).to.have.length(ROUNDS);
  });
});
