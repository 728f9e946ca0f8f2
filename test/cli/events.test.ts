import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { CliError } from '../../src/cli/context';
import { exportEvents, readEvents, tailEvents } from '../../src/cli/events';
import { buildProgram } from '../../src/cli/index';
import type { RecordedEvent } from '../../src/eventstore/port';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { tempDir } from '../support/temp';
import { capture, cliConfig, eventually, rawSql, registerUser, sleep, suspendUser } from './support';

describe('tally events', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  let config: ReturnType<typeof cliConfig>;

  before(async () => {
    app = await startTestApp();
    config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
    partner = await createPartner(app.http, 'Acme');
  });
  after(async () => {
    await app.close();
  });

  describe('read', () => {
    let userId: string;
    let beforeSuspension: Date;

    before(async () => {
      userId = await registerUser(app.http, partner);
      // Record times have millisecond precision: keep the instant clear of both events.
      await sleep(20);
      beforeSuspension = new Date();
      await sleep(20);
      await suspendUser(app.http, userId);
    });

    it('shows the state at an instant before a later status change', async () => {
      const io = capture();
      const result = await readEvents(config, `user-${userId}`, { at: beforeSuspension.toISOString() }, io);
      expect(result.events.map((e) => e.type)).to.deep.equal(['UserRegistered']);
      expect(result.state).to.include({ exists: true, userId, status: 'pending' });
      expect(io.lines[0]).to.equal(`Stream user-${userId}: 1 event as of ${beforeSuspension.toISOString()}`);
      expect(io.text()).to.contain('"status": "pending"');
      expect(io.text()).not.to.contain('UserStatusChanged');
    });

    it('shows the current state and every event without --at, with who caused each', async () => {
      const io = capture();
      const result = await readEvents(config, `user-${userId}`, {}, io);
      expect(result.events.map((e) => e.type)).to.deep.equal(['UserRegistered', 'UserStatusChanged']);
      expect(result.state).to.include({ status: 'suspended', statusBeforeSuspension: 'pending' });
      expect(io.lines.find((l) => l.includes('UserStatusChanged'))).to.contain('by operator:admin');
      expect(io.text()).to.contain('"status": "suspended"');
    });

    it('goes through the program: `events read <stream> --at <iso> --json` prints one JSON document', async () => {
      const io = capture();
      await buildProgram({ config: () => config, io }).parseAsync([
        'node',
        'tally',
        'events',
        'read',
        `user-${userId}`,
        '--at',
        beforeSuspension.toISOString(),
        '--json',
      ]);
      expect(io.lines).to.have.length(1);
      const doc = JSON.parse(io.lines[0] ?? '');
      expect(doc).to.include({ stream: `user-${userId}`, at: beforeSuspension.toISOString(), aggregate: 'user' });
      expect(doc.state.status).to.equal('pending');
    });

    it('shows the initial state of a stream at an instant before it existed', async () => {
      const io = capture();
      const result = await readEvents(config, `user-${userId}`, { at: '2000-01-01T00:00:00Z' }, io);
      expect(result.events).to.deep.equal([]);
      expect(result.state).to.include({ exists: false, status: null });
    });

    it('shows only events for a stream no aggregate is registered for', async () => {
      const [reservation] = await rawSql<{ stream_id: string }>(
        app.config.databaseUrl!,
        `SELECT stream_id FROM es_events WHERE type = 'UserEmailReserved' LIMIT 1`,
      );
      const io = capture();
      const result = await readEvents(config, reservation?.stream_id ?? '', {}, io);
      expect(result.state).to.equal(undefined);
      expect(io.text()).to.contain('UserEmailReserved');
      expect(io.text()).to.contain('events only');
    });

    it('refuses an unknown stream and an instant without a time zone', async () => {
      const missing = await readEvents(config, 'user-00000000-0000-0000-0000-000000000000', {}, capture()).catch((e) => e);
      expect(missing).to.be.instanceOf(CliError);
      expect(missing.message).to.equal('Stream user-00000000-0000-0000-0000-000000000000 has no events');
      const local = await readEvents(config, `user-${userId}`, { at: '2024-05-01T10:00' }, capture()).catch((e) => e);
      expect(local).to.be.instanceOf(CliError);
      expect(local.message).to.contain('--at must be an ISO 8601 instant with a time zone');
    });
  });

  describe('tail', () => {
    const parse = (lines: string[]) => lines.map((l) => JSON.parse(l) as RecordedEvent);

    it('prints the whole log as NDJSON in position order, or what follows --from', async () => {
      const all = capture();
      const count = await tailEvents(config, {}, all);
      const events = parse(all.lines);
      expect(count).to.equal(events.length);
      const [head] = await rawSql<{ n: string }>(app.config.databaseUrl!, 'SELECT count(*)::text AS n FROM es_events');
      expect(events).to.have.length(Number(head?.n));
      expect(events.map((e) => e.position)).to.deep.equal([...events.map((e) => e.position)].sort());
      const rest = capture();
      await tailEvents(config, { from: events[0]?.position }, rest);
      expect(parse(rest.lines).map((e) => e.id)).to.deep.equal(events.slice(1).map((e) => e.id));
    });

    it('with --follow, prints events appended later until it is interrupted', async () => {
      const stop = new AbortController();
      const io = capture(stop.signal);
      const following = tailEvents(config, { follow: true }, io);
      await eventually(() => io.lines.length > 0);
      const later = await createPartner(app.http, 'Later Ltd');
      await eventually(() => parse(io.lines).some((e) => e.type === 'PartnerCreated' && e.data.partnerId === later.id));
      stop.abort();
      expect(await following).to.equal(io.lines.length);
    });
  });

  describe('export', () => {
    let between: Date;
    let first: PartnerCredentials;
    let second: PartnerCredentials;

    before(async () => {
      first = await createPartner(app.http, 'First window');
      await sleep(20);
      between = new Date();
      await sleep(20);
      second = await createPartner(app.http, 'Second window');
    });

    const partnersIn = (lines: string[]) => lines.map((l) => JSON.parse(l) as RecordedEvent).map((e) => e.data.partnerId);

    it('exports exactly the events recorded in [from, to), so adjacent windows neither overlap nor miss', async () => {
      const early = capture();
      await exportEvents(config, { from: '2000-01-01', to: between.toISOString() }, early);
      const late = capture();
      await exportEvents(config, { from: between.toISOString(), to: '2100-01-01' }, late);
      expect(partnersIn(early.lines)).to.include(first.id).and.not.include(second.id);
      expect(partnersIn(late.lines)).to.include(second.id).and.not.include(first.id);
      const all = capture();
      await tailEvents(config, {}, all);
      expect(early.lines.length + late.lines.length).to.equal(all.lines.length);
    });

    it('writes NDJSON to --out, leaving no partial file behind', async () => {
      const file = join(tempDir('tally-export-'), 'events.ndjson');
      const io = capture();
      const count = await exportEvents(config, { from: between.toISOString(), to: '2100-01-01', out: file }, io);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      expect(lines).to.have.length(count);
      expect(partnersIn(lines)).to.include(second.id);
      expect(io.lines).to.deep.equal([]);
      expect(io.errText()).to.equal(`Exported ${count} events to ${file}\n`);
      expect(existsSync(`${file}.partial`)).to.equal(false);
    });

    it('refuses a window whose start is not before its end', async () => {
      const error = await exportEvents(config, { from: '2024-05-02', to: '2024-05-01' }, capture()).catch((e) => e);
      expect(error).to.be.instanceOf(CliError);
      expect(error.message).to.equal('--from must be before --to');
    });
  });
});
