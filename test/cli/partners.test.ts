import { expect } from 'chai';
import { CliError } from '../../src/cli/context';
import { readEvents } from '../../src/cli/events';
import { createPartner, createPartnerKey, listPartners, revokePartnerKey } from '../../src/cli/partners';
import { listProjections } from '../../src/cli/projections';
import { startTestApp } from '../support/app';
import { sharedCluster } from '../support/postgres';
import { capture, cliConfig, rawSql } from './support';

const field = (lines: string[], name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
const headers = (apiKey: string, apiSecret: string) => ({ 'X-Api-Key': apiKey, 'X-Api-Secret': apiSecret });

describe('tally partners', () => {
  describe('while the server runs on the same Postgres', () => {
    let app: Awaited<ReturnType<typeof startTestApp>>;
    let config: ReturnType<typeof cliConfig>;

    before(async () => {
      app = await startTestApp();
      config = cliConfig({ databaseUrl: app.config.databaseUrl });
    });
    after(async () => {
      await app.close();
    });

    it('creates a partner whose printed key pair authenticates at once; the secret note goes to stderr', async () => {
      const io = capture();
      const created = await createPartner(config, 'Globex', {}, io);
      expect(field(io.lines, 'id')).to.equal(created.id);
      expect(field(io.lines, 'name')).to.equal('Globex');
      const apiKey = field(io.lines, 'apiKey') ?? '';
      const apiSecret = field(io.lines, 'apiSecret') ?? '';
      expect(apiKey).to.match(/^tk_sandbox_/);
      expect(apiSecret).to.match(/^ts_/);
      expect(io.errText()).to.contain('shown only now');
      const res = await app.http.get('/api/v1/partner/users').set(headers(apiKey, apiSecret));
      expect(res.status).to.equal(200);
    });

    it('lists every partner with its id (what the keys commands take) and its active keys', async () => {
      const created = await createPartner(config, 'Listed Ltd', {}, capture());
      await createPartnerKey(config, created.id, capture());
      const io = capture();
      const partners = await listPartners(config, io);
      expect(io.lines[0]).to.match(/^ID\s+NAME\s+SANDBOX\s+ACTIVE KEYS\s+CREATED$/);
      const listed = partners.find((p) => p.id === created.id);
      expect(listed).to.deep.include({ name: 'Listed Ltd', sandbox: true, activeKeys: 2 });
      expect(io.lines.some((l) => l.startsWith(created.id) && l.includes('Listed Ltd'))).to.equal(true);
      await revokePartnerKey(config, created.id, created.apiKey, capture());
      expect((await listPartners(config, capture())).find((p) => p.id === created.id)?.activeKeys).to.equal(1);
    });

    it('records the operator CLI as the actor of its events', async () => {
      const created = await createPartner(config, 'Initech', {}, capture());
      const stream = await readEvents(config, `partner-${created.id}`, {}, capture());
      expect(stream.events.map((e) => e.metadata.actor)).to.deep.equal([
        { kind: 'operator', id: 'cli' },
        { kind: 'operator', id: 'cli' },
      ]);
    });

    it('creates a second key; revoking the first stops it at once and leaves the second working', async () => {
      const created = await createPartner(config, 'Umbrella', {}, capture());
      const io = capture();
      const second = await createPartnerKey(config, created.id, io);
      expect(field(io.lines, 'apiKey')).to.equal(second.apiKey);
      expect(field(io.lines, 'apiSecret')).to.equal(second.apiSecret);
      expect((await app.http.get('/api/v1/partner/users').set(headers(second.apiKey, second.apiSecret))).status).to.equal(200);

      const revoked = capture();
      await revokePartnerKey(config, created.id, created.apiKey, revoked);
      expect(revoked.lines).to.deep.equal([`Revoked ${created.apiKey} of partner ${created.id}`]);
      expect((await app.http.get('/api/v1/partner/users').set(headers(created.apiKey, created.apiSecret))).status).to.equal(401);
      expect((await app.http.get('/api/v1/partner/users').set(headers(second.apiKey, second.apiSecret))).status).to.equal(200);

      const state = await readEvents(config, `partner-${created.id}`, {}, capture());
      expect(state.state).to.deep.include({ activeKeys: [second.apiKey], revokedKeys: [created.apiKey] });
    });

    it('refuses to revoke a key the partner does not hold, and keys of a partner that does not exist', async () => {
      const created = await createPartner(config, 'Hooli', {}, capture());
      const unknownKey = await revokePartnerKey(config, created.id, 'tk_sandbox_nope', capture()).catch((e) => e);
      expect(unknownKey.message).to.equal('API key not found');
      const unknownPartner = await createPartnerKey(config, '00000000-0000-4000-8000-000000000000', capture()).catch((e) => e);
      expect(unknownPartner.message).to.equal('Partner not found');
      const notAnId = await createPartnerKey(config, 'acme', capture()).catch((e) => e);
      expect(notAnId).to.be.instanceOf(CliError);
      expect(notAnId.message).to.contain('Partner not found');
    });
  });

  it('with no server running, leaves the read models caught up with the change before it returns', async () => {
    const databaseUrl = await (await sharedCluster()).freshDatabase();
    const config = cliConfig({ databaseUrl });
    const created = await createPartner(config, 'Soylent', {}, capture());
    const keys = await rawSql<{ api_key: string }>(databaseUrl, 'SELECT api_key FROM rm_partner_keys WHERE partner_id = $1', [created.id]);
    expect(keys.map((k) => k.api_key)).to.deep.equal([created.apiKey]);
    // The read models (the outbox, a reactor, runs with a server and catches up then).
    const status = (await listProjections(config, capture())).filter((s) => s.name !== 'outbox');
    expect(status.map((s) => s.lag)).to.satisfy((lags: number[]) => lags.every((n) => n === 0));
    expect(status.map((s) => s.position)).to.satisfy((positions: string[]) => positions.every((p) => p === status[0]?.headPosition));
  });
});
