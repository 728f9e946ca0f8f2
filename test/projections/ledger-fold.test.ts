import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { comparePositions } from '../../src/eventstore/port';
import { ledgerProjection } from '../../src/projections/ledger';
import { suffixedTables, type Tables } from '../../src/platform/consumers/projection';
import { splitStatements } from '../../src/platform/consumers/rebuild';
import { createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund, PAYER, PAYOUT_DESTINATION } from '../support/ledger';

/**
 * The ledger read model has one fold (apply, set-based per batch). Over the same log, in one go or in
 * batches of a few events, it must leave the very same rows, the live tables (folded batch by batch
 * as the events came) must equal them, and so must a rebuild and a verification.
 */
describe('ledger projection: one fold, whatever the batches', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Fold');
  });

  after(async () => {
    await app?.close();
  });

  const payout = (who: Customer, transactionId: string) =>
    app.http
      .post('/api/v1/user/payout')
      .set(who.bearer)
      .send({
        transactionId,
        amount: 40000,
        asset: 'COP',
        provider: 'mock',
        source: { metadata: { fundingId: 'f1' } },
        destination: PAYOUT_DESTINATION,
      });

  async function activity(): Promise<void> {
    const [a, b, c] = [await customer(app.http, acme), await customer(app.http, acme), await customer(app.http, acme)];
    if (!a || !b || !c) throw new Error('no customers');
    await fund(app.http, acme, a, '100');
    await fund(app.http, acme, b, '25.5');
    // A deposit that fails, one left pending.
    const failing = await app.http
      .post('/api/v1/transactions/deposit')
      .set(c.bearer)
      .send({ toAccountId: c.accountId, amount: '7', currency: 'USDC', provider: 'mock', description: 'fails', metadata: PAYER });
    expect((await app.http.post(`/sandbox/v1/deposits/${failing.body.transactionId}/fail`).set(acme.headers).send()).status).to.equal(202);
    await app.http
      .post('/api/v1/transactions/deposit')
      .set(c.bearer)
      .send({ toAccountId: c.accountId, amount: '3', currency: 'USDC', provider: 'mock', description: 'pending', metadata: PAYER });
    for (const [from, to, amount] of [
      [a, b, '10'],
      [b, c, '0.5'],
      [a, c, '1.23456789'],
      [c, a, '0.1'],
    ] as const) {
      const res = await app.http
        .post('/api/v1/transactions/transfer')
        .set(from.bearer)
        .send({ fromAccountId: from.accountId, toAccountId: to.accountId, amount, description: `t ${amount}` });
      expect(res.status).to.equal(201);
    }
    // Payouts: one settled, one failed (reversed), one still processing.
    const settled = await payout(a, randomUUID());
    expect((await app.http.post(`/sandbox/v1/payouts/${settled.body.paymentId}/settle`).set(acme.headers).send()).status).to.equal(202);
    const failed = await payout(a, randomUUID());
    await app.http.post(`/sandbox/v1/payouts/${failed.body.paymentId}/fail`).set(acme.headers).send({ reason: 'account_closed' });
    expect((await payout(b, randomUUID())).status).to.equal(200);
  }

  async function createTables(t: Tables): Promise<void> {
    for (const statement of splitStatements(ledgerProjection.createTables(t, { bulk: true }))) await app.tally.sql.query(statement);
  }

  async function differences(left: string, right: string): Promise<number> {
    const [row] = await app.tally.sql.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM ((SELECT * FROM ${left} EXCEPT ALL SELECT * FROM ${right}) UNION ALL (SELECT * FROM ${right} EXCEPT ALL SELECT * FROM ${left})) d`,
    );
    return Number(row?.n);
  }

  it('leaves the same accounts and transactions, in one go, in batches of three, and live', async () => {
    await activity();
    const head = await lastWrittenPosition(app);
    // The live tables up to the head (they are folded by the database here).
    expect(await app.tally.engine.waitFor(head, { names: ['ledger'] })).to.equal(true);

    const whole = suffixedTables(ledgerProjection, `one${Date.now().toString(36)}`);
    const batched = suffixedTables(ledgerProjection, `three${Date.now().toString(36)}`);
    for (const t of [whole, batched]) await createTables(t);

    const events = (await app.tally.store.readAll({ filter: { eventTypes: ledgerProjection.eventTypes }, projectionOnly: true })).filter(
      (e) => comparePositions(e.position, head) <= 0,
    );
    expect(events.map((e) => e.type)).to.include.members([
      'AccountOpened',
      'FundsCredited',
      'FundsDebited',
      'HoldPosted',
      'TransactionStatusChanged',
      'PayoutAccepted',
    ]);
    await app.tally.sql.transaction((tx) => ledgerProjection.apply(tx, events, whole));
    for (let i = 0; i < events.length; i += 3) await app.tally.sql.transaction((tx) => ledgerProjection.apply(tx, events.slice(i, i + 3), batched));

    for (const table of ledgerProjection.tables) {
      const [count] = await app.tally.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${whole[table]}`);
      expect(Number(count?.n), table).to.be.greaterThan(2);
      expect(await differences(whole[table] as string, batched[table] as string), `${table}: in one go vs in batches of three`).to.equal(0);
      expect(await differences(table, whole[table] as string), `${table}: live vs in one go`).to.equal(0);
    }

    // A verification finds nothing, and a rebuild leaves the same rows.
    expect(await app.tally.engine.verify('ledger')).to.deep.equal([]);
    const rebuilt = await app.tally.engine.rebuild('ledger');
    expect(rebuilt.events).to.equal(events.length);
    expect(comparePositions(rebuilt.position, head)).to.be.at.least(0);
    for (const table of ledgerProjection.tables) {
      expect(await differences(table, whole[table] as string), `${table}: rebuilt vs in one go`).to.equal(0);
    }
    expect(await app.tally.engine.verify('ledger')).to.deep.equal([]);
  });
});
