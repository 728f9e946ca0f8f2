import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { verifyOffline } from '../../src/cli/audit-offline';
import { CliError, EXIT } from '../../src/cli/context';
import { exportEvents } from '../../src/cli/events';
import { chainHash, eventDigest, GENESIS_HASH } from '../../src/eventstore/hash';
import { type Checkpoint, signCheckpoint } from '../../src/platform/audit/checkpoint';
import { type PublicJwk, newAuditKey, publicJwkOf } from '../../src/platform/audit/signing';
import { ADMIN_TOKEN, createPartner, startTestApp } from '../support/app';
import { tempDir } from '../support/temp';
import { capture, cliConfig, rawSql, registerUser, suspendUser } from '../cli/support';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

/** Recomputes a stream's revisions and hashes from its events as they now are: what a careful forger does after an edit. */
async function forgeChain(databaseUrl: string, stream: string): Promise<void> {
  const rows = await rawSql<{ event_id: string; type: string; data: string; metadata: string; stream_revision: string }>(
    databaseUrl,
    'SELECT event_id::text, type, data::text, metadata::text, stream_revision::text FROM es_events WHERE stream_id = $1 ORDER BY stream_revision',
    [stream],
  );
  let previous = GENESIS_HASH;
  for (const [revision, row] of rows.entries()) {
    const hash = chainHash(previous, eventDigest({ stream, id: row.event_id, type: row.type, data: JSON.parse(row.data), metadata: JSON.parse(row.metadata) }));
    await rawSql(databaseUrl, 'UPDATE es_events SET stream_revision = $2, hash = $3 WHERE event_id = $1', [row.event_id, revision, hash]);
    previous = hash;
  }
}

/** Signed checkpoints verified offline against exports of a log an operator tampered with (docs/decisions.md, "Auditors"). */
describe('audit checkpoints: offline verification of a tampered log', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let dir: string;
  let partnerId: string;
  let userId: string;
  let checkpoint: Checkpoint;
  let files: { checkpoint: string; key: string };

  beforeEach(async () => {
    app = await startTestApp();
    dir = tempDir('tally-checkpoints-');
    const partner = await createPartner(app.http, 'Acme');
    partnerId = partner.id;
    userId = await registerUser(app.http, partner);
    await suspendUser(app.http, userId);
    const res = await app.http.post('/admin/v1/checkpoints').set(admin);
    expect(res.status, res.text).to.equal(201);
    checkpoint = res.body.data;
    // Events after the checkpoint: the export goes on past it, and verification stops at its position.
    await registerUser(app.http, partner);
    const keys = await app.http.get('/audit/v1/keys');
    files = { checkpoint: join(dir, 'checkpoint.json'), key: join(dir, 'auditor-keys.json') };
    writeFileSync(files.checkpoint, JSON.stringify(res.body));
    writeFileSync(files.key, JSON.stringify(keys.body));
  });
  afterEach(() => app.close());

  async function exported(): Promise<string> {
    const out = join(dir, `events-${Date.now()}.ndjson`);
    await exportEvents(cliConfig({ databaseUrl: app.config.databaseUrl }), { from: '2000-01-01', to: '2100-01-01', out }, capture());
    return out;
  }

  async function verify(events: string, checkpointFile = files.checkpoint, key = files.key) {
    const io = capture();
    try {
      await verifyOffline({ checkpoint: checkpointFile, events, key }, io);
      return { code: EXIT.ok as number, lines: io.lines };
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      return { code: error.exitCode, lines: io.lines };
    }
  }

  it('verifies an untouched log: signature, every chain, the root', async () => {
    const result = await verify(await exported());
    expect(result.code, result.lines.join('\n')).to.equal(0);
    expect(result.lines).to.include(`OK   signature: Ed25519 by key ${checkpoint.kid}`);
    expect(result.lines.at(-1)).to.equal('Verified: the export reproduces every stream head the checkpoint signed.');
  });

  it('verifies the export an auditor streams from GET /audit/v1/events', async () => {
    const made = await app.http
      .post('/admin/v1/auditors')
      .set(admin)
      .send({ name: 'Ledger & Co.', expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    const res = await fetch(`${app.url}/audit/v1/events?from=2000-01-01`, { headers: { Authorization: `Bearer ${made.body.data.token}` } });
    expect(res.status).to.equal(200);
    const events = join(dir, 'audit-events.ndjson');
    writeFileSync(events, await res.text());
    const result = await verify(events);
    expect(result.code, result.lines.join('\n')).to.equal(0);
  });

  it('fails, naming the stream, when an event was rewritten and every later hash recomputed', async () => {
    const stream = `partner-${partnerId}`;
    await rawSql(
      app.config.databaseUrl as string,
      `UPDATE es_events SET data = jsonb_set(data::jsonb, '{name}', '"Mallory"') WHERE stream_id = $1 AND stream_revision = 0`,
      [stream],
    );
    await forgeChain(app.config.databaseUrl as string, stream);
    const result = await verify(await exported());
    expect(result.code).to.equal(EXIT.auditFailed);
    expect(result.lines.find((l) => l.startsWith(`FAIL stream ${stream}: signed at revision`))).to.be.a('string');
    expect(result.lines.at(-1)).to.equal(`Verification FAILED: ${stream}.`);
  });

  it('fails, naming the stream, when an event was removed and the later ones renumbered and rehashed', async () => {
    const stream = `user-${userId}`;
    await rawSql(app.config.databaseUrl as string, 'DELETE FROM es_events WHERE stream_id = $1 AND stream_revision = 0', [stream]);
    await forgeChain(app.config.databaseUrl as string, stream);
    const result = await verify(await exported());
    expect(result.code).to.equal(EXIT.auditFailed);
    expect(result.lines.at(-1)).to.equal(`Verification FAILED: ${stream}.`);
  });

  it('refuses a checkpoint signed by another key, whatever kid it names', async () => {
    const events = await exported();
    const mallory = newAuditKey();
    const forged = signCheckpoint({ ...checkpoint, root: '0'.repeat(64), kid: checkpoint.kid }, { ...mallory, kid: checkpoint.kid });
    const forgedFile = join(dir, 'forged.json');
    writeFileSync(forgedFile, JSON.stringify(forged));
    const result = await verify(events, forgedFile);
    expect(result.code).to.equal(EXIT.auditFailed);
    expect(result.lines).to.include(`FAIL signature: the checkpoint is not signed by the key given (it names key ${checkpoint.kid}): refused`);
    // The genuine checkpoint against a key that is not the service's: refused too.
    const otherKey = join(dir, 'other.json');
    writeFileSync(otherKey, JSON.stringify(publicJwkOf(mallory) satisfies PublicJwk));
    expect((await verify(events, files.checkpoint, otherKey)).code).to.equal(EXIT.auditFailed);
  });

  it('runs in a process with no database in its environment, from an export and the public key only', async () => {
    const events = await exported();
    const bin = join(__dirname, '..', '..', 'bin', 'tally.js');
    const env = { PATH: process.env.PATH ?? '', DATA_DIR: join(dir, 'no-data-here') };
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) => {
        execFile(process.execPath, [bin, 'audit', 'verify', ...args], { env, timeout: 60_000 }, (error, stdout) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout }),
        );
      });
    const clean = await run(['--checkpoint', files.checkpoint, '--events', events, '--key', files.key]);
    expect(clean.code, clean.stdout).to.equal(0);
    const stream = `partner-${partnerId}`;
    await rawSql(app.config.databaseUrl as string, `UPDATE es_events SET data = jsonb_set(data::jsonb, '{name}', '"Mallory"') WHERE stream_id = $1`, [stream]);
    await forgeChain(app.config.databaseUrl as string, stream);
    const tampered = await run(['--checkpoint', files.checkpoint, '--events', await exported(), '--key', files.key]);
    expect(tampered.code).to.equal(EXIT.auditFailed);
    expect(tampered.stdout).to.contain(`Verification FAILED: ${stream}.`);
  });
});
