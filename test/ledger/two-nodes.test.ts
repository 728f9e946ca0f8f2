import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createPartner, lastWrittenPosition, startTestApp, type TestApp, uniqueEmail } from '../support/app';
import { sharedCluster } from '../support/postgres';
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
    await app.tally.engine.waitFor(await lastWrittenPosition(app), { names: ['ledger'] });
    expect(await balanceOf(second.http, ada)).to.deep.equal({ credits: '100.00000000', debits: `${ROUNDS}.00000000` });
    expect(await balanceOf(app.http, bob)).to.deep.equal({ credits: `${ROUNDS}.00000000`, debits: '0.00000000' });
    const list = await app.http.get(`/api/v1/transactions?accountId=${bob.accountId}&limit=50`).set(bob.bearer);
    expect(list.body).to.have.length(ROUNDS);
  });
});

/**
 * Two nodes of a new deployment started at the same moment on an empty database: each creates the
 * schema it needs if absent, and PostgreSQL's `IF NOT EXISTS` does not hold against a creation in
 * progress elsewhere (one of them failed at start: "duplicate key value violates unique constraint
 * pg_type_typname_nsp_index"). Under the schema lock both start, on one schema.
 */
describe('two nodes started at once on an empty database', () => {
  it('both start and are ready, three times over', async () => {
    for (let i = 0; i < 3; i++) {
      const databaseUrl = await (await sharedCluster()).freshDatabase();
      const started = await Promise.allSettled([startTestApp({ databaseUrl }), startTestApp({ databaseUrl })]);
      const nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      try {
        expect(started.map((r) => (r.status === 'rejected' ? String(r.reason) : 'started'))).to.deep.equal(['started', 'started']);
        for (const node of nodes) expect((await node.http.get('/readyz')).status).to.equal(200);
        // One schema for both: a partner made on the first registers a user on the second, listed on the first.
        const [first, second] = nodes as [TestApp, TestApp];
        const partner = await createPartner(first.http, `Together ${i}`);
        const email = uniqueEmail('together');
        expect((await second.http.post('/api/v1/partner/users').set(partner.headers).send({ email, countryCode: 'CO' })).status).to.equal(201);
        const listed = await first.http.get('/api/v1/partner/users?limit=10').set(partner.headers);
        expect(listed.body.data.items.map((u: { email: string }) => u.email)).to.deep.equal([email]);
      } finally {
        for (const node of nodes) await node.close();
      }
    }
  });
});
