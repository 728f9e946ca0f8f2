import { expect } from 'chai';
import { type AuditCheck, auditChecks } from '../../src/cli/audit-checks';
import { auditVerify } from '../../src/cli/audit';
import { allProjections } from '../../src/projections';
import { createPartner, startTestApp } from '../support/app';
import { capture, cliConfig, rawSql, registerUser, runBinary, suspendUser } from './support';

describe('tally audit verify', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partnerId: string;
  let userId: string;
  let config: ReturnType<typeof cliConfig>;

  // A fresh database per test: each one tampers with it in its own way.
  beforeEach(async () => {
    app = await startTestApp();
    config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
    const partner = await createPartner(app.http, 'Acme');
    partnerId = partner.id;
    userId = await registerUser(app.http, partner);
    await suspendUser(app.http, userId);
  });
  afterEach(async () => {
    await app.close();
  });

  it('passes on a clean log, saying how much it checked', async () => {
    const io = capture();
    const report = await auditVerify(config, io);
    expect(report.ok).to.equal(true);
    const [log] = await rawSql<{ streams: string; events: string }>(
      app.config.databaseUrl!,
      'SELECT count(DISTINCT stream_id)::text AS streams, count(*)::text AS events FROM es_events',
    );
    expect(io.lines).to.include(`OK   hash chains: ${log?.streams} streams, ${log?.events} events checked`);
    const tables = allProjections.reduce((n, p) => n + p.tables.length, 0);
    expect(io.lines).to.include(`OK   read models: ${allProjections.length} projections, ${tables} tables checked`);
    expect(io.lines.at(-1)).to.equal(`Audit passed: ${auditChecks.length} checks, no findings.`);
  });

  it('reports a read-model row altered in the database, naming the table, with a clean log', async () => {
    await rawSql(app.config.databaseUrl!, `UPDATE rm_users SET email = 'mallory@example.com' WHERE user_id = $1`, [userId]);
    const io = capture();
    const report = await auditVerify(config, io);
    expect(report.ok).to.equal(false);
    const chains = report.checks.find((c) => c.name === 'hash chains');
    expect(chains?.findings).to.deep.equal([]);
    const models = report.checks.find((c) => c.name === 'read models');
    expect(models?.findings.map((f) => f.subject)).to.deep.equal(['table rm_users (projection users)']);
    expect(io.text()).to.match(/FAIL read models: .*1 finding/);
    expect(io.lines.at(-1)).to.equal('Audit FAILED: 1 finding(s).');
  });

  it('reports an event edited in es_events as a chain break with its stream, revision and event id', async () => {
    await rawSql(app.config.databaseUrl!, `UPDATE es_events SET data = jsonb_set(data::jsonb, '{name}', '"Mallory"') WHERE type = 'PartnerCreated'`);
    const [edited] = await rawSql<{ event_id: string }>(app.config.databaseUrl!, `SELECT event_id::text FROM es_events WHERE type = 'PartnerCreated'`);
    const io = capture();
    const report = await auditVerify(config, io);
    expect(report.ok).to.equal(false);
    const chains = report.checks.find((c) => c.name === 'hash chains');
    expect(chains?.findings).to.deep.equal([
      {
        subject: `stream partner-${partnerId} revision 0 event ${edited?.event_id}`,
        reason: 'hash does not match the content and chain',
        details: { stream: `partner-${partnerId}`, revision: 0, eventId: edited?.event_id ?? '' },
      },
    ]);
    expect(io.lines).to.include(`       stream partner-${partnerId} revision 0 event ${edited?.event_id}: hash does not match the content and chain`);
    // The read model kept the true name, so it no longer equals the fold of the (edited) log either.
    const models = report.checks.find((c) => c.name === 'read models');
    expect(models?.findings.map((f) => f.subject)).to.include('table rm_partners (projection partners)');
  });

  it('reports an event removed from the middle of a stream as a missing revision', async () => {
    await rawSql(app.config.databaseUrl!, `DELETE FROM es_events WHERE stream_id = $1 AND stream_revision = 0`, [`user-${userId}`]);
    const io = capture();
    const report = await auditVerify(config, io);
    const reasons = report.checks.find((c) => c.name === 'hash chains')?.findings.filter((f) => f.subject.startsWith(`stream user-${userId} `));
    expect(reasons?.map((f) => f.reason)).to.deep.equal(['revision 0 is missing', 'hash does not match the content and chain']);
  });

  it('exits with code 3 from the binary when it finds differences, with the report on stdout', async () => {
    await rawSql(app.config.databaseUrl!, `UPDATE es_events SET data = jsonb_set(data::jsonb, '{name}', '"Mallory"') WHERE type = 'PartnerCreated'`);
    const result = await runBinary(['audit', 'verify'], { DATABASE_URL: app.config.databaseUrl });
    expect(result.code).to.equal(3);
    expect(result.stdout).to.contain('FAIL hash chains');
    expect(result.stdout).to.contain('Audit FAILED');
  });

  it('runs added checks, and fails the audit when a check cannot complete while still running the others', async () => {
    const broken: AuditCheck = {
      name: 'ledger conservation',
      async run() {
        throw new Error('ledger unreachable');
      },
    };
    const fine: AuditCheck = { name: 'always fine', run: async () => ({ checked: '1 thing', findings: [] }) };
    const io = capture();
    const report = await auditVerify(config, io, [broken, fine]);
    expect(report.ok).to.equal(false);
    expect(io.lines).to.deep.equal([
      'FAIL ledger conservation: could not complete: ledger unreachable',
      'OK   always fine: 1 thing checked',
      'Audit FAILED: 0 finding(s), 1 check(s) could not complete.',
    ]);
  });
});
