import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { load } from '../../src/platform/commands/commands';
import { auditVerify } from '../../src/cli/audit';
import { accountDecider, accountStream } from '../../src/domain/ledger/account';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund, PAYOUT_DESTINATION } from '../support/ledger';
import { capture, cliConfig, rawSql } from './support';

describe('tally audit verify: the ledger’s books', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  let alice: Customer;
  let config: ReturnType<typeof cliConfig>;

  beforeEach(async () => {
    app = await startTestApp();
    config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
    partner = await createPartner(app.http);
    alice = await customer(app.http, partner);
    const bob = await customer(app.http, partner);
    await fund(app.http, partner, alice, '100');
    await app.http.post('/api/v1/transactions/transfer').set(alice.bearer).send({ toAccountId: bob.accountId, amount: '12.34', description: 'x' });
    const settled = await app.http
      .post('/api/v1/user/payout')
      .set(alice.bearer)
      .send({ transactionId: randomUUID(), amount: 4000, asset: 'COP', provider: 'mock', source: { metadata: {} }, destination: PAYOUT_DESTINATION });
    await app.http.post(`/sandbox/v1/payouts/${settled.body.paymentId}/settle`).set(partner.headers).send();
    const failed = await app.http
      .post('/api/v1/user/payout')
      .set(alice.bearer)
      .send({ transactionId: randomUUID(), amount: 8000, asset: 'COP', provider: 'mock', source: { metadata: {} }, destination: PAYOUT_DESTINATION });
    await app.http.post(`/sandbox/v1/payouts/${failed.body.paymentId}/fail`).set(partner.headers).send();
    // One still held.
    await app.http
      .post('/api/v1/user/payout')
      .set(alice.bearer)
      .send({ transactionId: randomUUID(), amount: 2000, asset: 'COP', provider: 'mock', source: { metadata: {} }, destination: PAYOUT_DESTINATION });
  });
  afterEach(async () => {
    await app.close();
  });

  it('finds the books balanced: balances = completed deposits - payouts that left', async () => {
    const io = capture();
    const report = await auditVerify(config, io);
    expect(report.ok, io.text()).to.equal(true);
    // 100 deposited; 1 + 0.5 paid out (settled and held); the failed 2 came back.
    expect(io.lines).to.include('OK   ledger: 2 accounts, 6 transactions; balances 98.50000000 = deposits 100.00000000 - payouts 1.50000000 checked');
  });

  it('reports an account balance altered in the read model', async () => {
    await rawSql(app.config.databaseUrl!, 'UPDATE rm_accounts SET credits = credits + 1 WHERE account_id = $1', [alice.accountId]);
    const report = await auditVerify(config, capture());
    const ledger = report.checks.find((c) => c.name === 'ledger');
    expect(ledger?.findings.map((f) => f.subject)).to.deep.equal([`account ${alice.accountId}`]);
  });

  it('reports money created in the log out of nothing', async () => {
    await rawSql(
      app.config.databaseUrl!,
      `UPDATE es_events SET data = jsonb_set(data::jsonb, '{amount}', '"200.00000000"') WHERE type = 'FundsCredited' AND data->>'reason' = 'deposit'`,
    );
    const report = await auditVerify(config, capture());
    expect(report.ok).to.equal(false);
    const ledger = report.checks.find((c) => c.name === 'ledger');
    expect(ledger?.findings.map((f) => f.subject)).to.include('conservation');
    expect(report.checks.find((c) => c.name === 'hash chains')?.findings).to.have.length(1);
  });

  it('checks each state snapshot against the fold of its stream', async () => {
    const stream = accountStream(alice.accountId);
    const loaded = await load(app.tally.store, stream, accountDecider);
    const codec = accountDecider.snapshot as NonNullable<typeof accountDecider.snapshot>;
    app.tally.stateCache.snapshots?.write(stream, codec, loaded);
    for (let waited = 0; waited < 5_000; waited += 20) {
      const [row] = await app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM state_snapshots WHERE stream_id = $1', [stream]);
      if (row?.n === '1') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const io = capture();
    expect((await auditVerify(config, io)).ok, io.text()).to.equal(true);
    expect(io.lines, io.text()).to.include('OK   state snapshots: 1 snapshots checked');
    await rawSql(app.config.databaseUrl!, `UPDATE state_snapshots SET state = jsonb_set(state, '{creditsPosted}', '"1000"') WHERE stream_id = $1`, [stream]);
    const report = await auditVerify(config, capture());
    expect(report.ok).to.equal(false);
    const snapshots = report.checks.find((c) => c.name === 'state snapshots');
    expect(snapshots?.findings.map((f) => f.subject)).to.deep.equal([`snapshot of ${stream} at revision ${loaded.revision}`]);
  });
});
