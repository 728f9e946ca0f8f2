import { expect } from 'chai';
import { auditVerify } from '../../src/cli/audit';
import { CliError } from '../../src/cli/context';
import { listProjections, rebuildProjection } from '../../src/cli/projections';
import { allProjections } from '../../src/projections';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { capture, cliConfig, rawSql, registerUser, suspendUser } from './support';

describe('tally projections', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  let config: ReturnType<typeof cliConfig>;
  let userIds: string[];

  before(async () => {
    app = await startTestApp();
    config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
    partner = await createPartner(app.http, 'Acme');
    userIds = [];
    for (let i = 0; i < 3; i++) userIds.push(await registerUser(app.http, partner));
    await suspendUser(app.http, userIds[0] ?? '');
  });
  after(async () => {
    await app.close();
  });

  /** Every read the partner and the operator can make of what was written. */
  async function reads() {
    const list = await app.http.get('/api/v1/partner/users?limit=100').set(partner.headers);
    const users = await Promise.all(userIds.map((id) => app.http.get(`/api/v1/partner/users/${id}`).set(partner.headers)));
    const suspended = await app.http.get('/api/v1/partner/users?status=suspended').set(partner.headers);
    return { list: [list.status, list.body], users: users.map((r) => [r.status, r.body]), suspended: [suspended.status, suspended.body] };
  }

  it('lists every projection with its checkpoint and lag', async () => {
    const io = capture();
    const status = await listProjections(config, io);
    // The projections, then the reactors (the notifications' outbox).
    expect(status.map((s) => s.name)).to.deep.equal([...allProjections.map((p) => p.name), 'outbox']);
    expect(io.lines[0]).to.match(/^NAME\s+POSITION\s+LAG\s+STATE$/);
    for (const s of status) {
      const row = new RegExp(`^${s.name}\\s+${s.position || '\\(start\\)'}\\s+${s.lag}\\s+live$`);
      expect(
        io.lines.some((l) => row.test(l)),
        `a row for ${s.name}`,
      ).to.equal(true);
    }
    expect(io.lines.at(-1)).to.equal(`Head of the log: ${status[0]?.headPosition}`);
  });

  it('rebuilds every projection while the server runs, leaving every read identical', async () => {
    const before = await reads();
    for (const p of allProjections) {
      const io = capture();
      const result = await rebuildProjection(config, p.name, io);
      const [count] = await rawSql<{ n: string }>(app.config.databaseUrl!, 'SELECT count(*)::text AS n FROM es_events WHERE type = ANY($1::text[])', [
        p.eventTypes,
      ]);
      expect(result.events).to.equal(Number(count?.n));
      expect(io.lines).to.deep.equal([`Rebuilt ${p.name}: ${result.events} events applied, checkpoint at ${result.position || '(start)'}`]);
      // Not a terminal: one progress line per batch, ending at the total.
      expect(io.errText()).to.contain(`${result.events}/${result.events} events`);
    }
    expect(await reads()).to.deep.equal(before);
    expect((await auditVerify(config, capture())).ok).to.equal(true);
  });

  it('keeps projecting live after a rebuild: a later write is readable at once', async () => {
    await rebuildProjection(config, 'users', capture());
    const userId = await registerUser(app.http, partner);
    userIds.push(userId);
    const res = await app.http.get(`/api/v1/partner/users/${userId}`).set(partner.headers);
    expect(res.status).to.equal(200);
    const suspended = await app.http.post(`/admin/v1/users/${userId}/suspend`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({});
    expect(suspended.body.data.user.status).to.equal('suspended');
  });

  it('refuses an unknown projection, naming the known ones', async () => {
    const error = await rebuildProjection(config, 'nope', capture()).catch((e) => e);
    expect(error).to.be.instanceOf(CliError);
    expect(error.message).to.equal(`Unknown projection nope (known: ${allProjections.map((p) => p.name).join(', ')})`);
  });
});
