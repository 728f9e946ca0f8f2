import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pino from 'pino';
import supertest from 'supertest';
import { auditVerify } from '../../src/cli/audit';
import { sealLog } from '../../src/cli/seal';
import { keyOwner } from '../../src/platform/sealing/sealer';
import { startServer } from '../../src/server';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { customer, fund } from '../support/ledger';
import { capture, cliConfig, rawSql, sleep } from './support';

type App = Awaited<ReturnType<typeof startTestApp>>;

/** A user as a build before sealing wrote one: registered and profiled in clear, straight to the store underneath. */
async function clearUser(app: App, partner: PartnerCredentials, lastName: string) {
  const userId = randomUUID();
  const email = uniqueEmail(lastName.toLowerCase());
  await app.tally.store.append(
    `user-${userId}`,
    [
      {
        id: randomUUID(),
        type: 'UserRegistered',
        data: { userId, partnerId: partner.id, email, countryCode: 'CO', phoneNumber: '+573012223344', language: 'en' },
      },
    ],
    'no_stream',
  );
  await app.tally.store.append(
    `profile-${userId}`,
    [
      {
        id: randomUUID(),
        type: 'ProfileCreated',
        data: { userId, partnerId: partner.id, fields: { firstName: 'Wilhelmina', lastName, addressLine1: 'Calle Vieja 12' } },
      },
    ],
    'no_stream',
  );
  return { userId, email, lastName };
}

/** What an operator makes with pg_dump --exclude-table-data (docs/personal-data.md): the database copied, its log left out. */
async function copyWithoutLog(databaseUrl: string): Promise<string> {
  const source = new URL(databaseUrl);
  const name = `${source.pathname.slice(1)}_sealed`;
  const server = new URL(databaseUrl);
  server.pathname = '/postgres';
  // The app's connections close as it stops; the template must have none.
  for (let attempt = 0; ; attempt++) {
    try {
      await rawSql(server.toString(), `CREATE DATABASE ${name} TEMPLATE ${source.pathname.slice(1)}`);
      break;
    } catch (error) {
      if (attempt > 50) throw error;
      await sleep(100);
    }
  }
  const target = new URL(databaseUrl);
  target.pathname = `/${name}`;
  await rawSql(target.toString(), 'TRUNCATE es_events, es_streams');
  return target.toString();
}

describe('tally events seal: an old log copied with its personal data sealed', function () {
  this.timeout(240_000);

  it('copies the log in order, seals every personal field (an erased user’s become null), keeps the recorded times, and the app there reads the same; audit verify passes', async () => {
    const app = await startTestApp();
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const partner = await createPartner(app.http, 'Old');
    const old = await clearUser(app, partner, 'Oldfield');
    const gone = await clearUser(app, partner, 'Gonefield');
    const ada = await customer(app.http, partner);
    await fund(app.http, partner, ada, '42.5');
    await app.tally.sealer.keys.destroy(keyOwner.user(gone.userId));
    const checkpoint = await app.http.post('/admin/v1/checkpoints').set(admin);
    expect(checkpoint.status, checkpoint.text).to.equal(201);
    const reads = async (http: supertest.Agent) => ({
      old: (await http.get(`/api/v1/partner/users/${old.userId}`).set(partner.headers)).body,
      oldProfile: (await http.get(`/api/v1/user/profile?userId=${old.userId}`).set(partner.headers)).body,
      ada: (await http.get(`/api/v1/partner/users/${ada.id}`).set(partner.headers)).body,
      accounts: (await http.get('/api/v1/user/accounts').set(ada.bearer)).body,
    });
    let before = await reads(app.http);
    for (let tries = 0; before.old.success !== true && tries < 100; tries++) {
      await sleep(50);
      before = await reads(app.http);
    }
    expect(before.old.data.user).to.include({ email: old.email });
    expect(before.accounts.items[0].credits).to.equal('42.50000000');
    await app.close();

    const target = await copyWithoutLog(app.config.databaseUrl as string);
    const config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
    const io = capture();
    const report = await sealLog(config, { to: target }, io);
    expect(report.to).to.deep.include({ events: report.from.events, streams: report.from.streams, streamsDigest: report.from.streamsDigest });
    expect(report.checkpointEventsLeft, 'the signed checkpoints of the old log').to.be.at.least(1);
    expect(report.consumersMoved).to.be.greaterThan(5);
    expect(io.lines[0]).to.match(/^Sealed: \d+ events in \d+ streams/);

    const stored = await rawSql<{ stream_id: string; type: string; data: Record<string, unknown>; text: string }>(
      target,
      'SELECT stream_id, type, data, data::text AS text FROM es_events',
    );
    const log = stored.map((r) => r.text).join('\n');
    for (const value of [old.email, gone.email, ada.email, 'Wilhelmina', 'Oldfield', 'Gonefield', 'Calle Vieja 12', '+573012223344'])
      expect(log.includes(value), value).to.equal(false);
    const registered = (userId: string) => stored.find((r) => r.stream_id === `user-${userId}`)?.data;
    expect(registered(old.userId)?.email).to.match(/^v2\./);
    expect(registered(gone.userId)).to.include({ email: null, phoneNumber: null, countryCode: 'CO' });
    expect(stored.some((r) => r.stream_id === 'audit-checkpoints')).to.equal(false);

    const moved = await startServer({ ...app.config, databaseUrl: target }, pino({ level: 'silent' }));
    try {
      const http = supertest.agent(moved.url);
      expect(await reads(http), 'the same reads, recorded times included').to.deep.equal(before);
      // Read models rebuilt from the new log: the erased user's personal fields are null there too.
      for (const name of ['users', 'profiles']) expect((await http.post(`/admin/v1/projections/${name}/rebuild`).set(admin)).status).to.equal(200);
      const [row] = await rawSql<{ email: string | null }>(target, 'SELECT email FROM rm_users WHERE user_id = $1', [gone.userId]);
      expect(row?.email).to.equal(null);
      expect((await http.get(`/api/v1/user/profile?userId=${old.userId}`).set(partner.headers)).body).to.deep.equal(before.oldProfile);
      const verified = capture();
      const audit = await auditVerify({ ...config, databaseUrl: target }, verified);
      expect(audit.ok, verified.text()).to.equal(true);
    } finally {
      await moved.close();
    }

    const again = await sealLog(config, { to: target }, capture()).catch((error: Error) => error);
    expect(again).to.be.instanceOf(Error);
    expect((again as Error).message).to.equal('The log of --to is not empty: seal into a copy of this database without its log');
  });
});
