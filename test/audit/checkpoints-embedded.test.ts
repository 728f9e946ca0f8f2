import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { verifyOffline } from '../../src/cli/audit-offline';
import { CliError, EXIT, operatorContext } from '../../src/cli/context';
import { openTally } from '../../src/compose/open';
import type { Tally } from '../../src/compose/tally';
import { chainHash, eventDigest, GENESIS_HASH } from '../../src/eventstore/hash';
import { tempDir } from '../support/temp';
import { capture, cliConfig } from '../cli/support';

/** The whole log as `tally events export` writes it. */
async function exportLog(tally: Tally, file: string): Promise<void> {
  const lines: string[] = [];
  let position: string | undefined;
  for (;;) {
    const page = await tally.store.readAll({ fromPosition: position, maxCount: 1_000 });
    if (page.length === 0) break;
    for (const e of page) lines.push(JSON.stringify(e));
    position = page[page.length - 1]?.position;
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
}

/** Checkpoints on the embedded store (PGlite in DATA_DIR): the same signing, the same offline verification. */
describe('audit checkpoints on the embedded store', function () {
  // Creating a PGlite database on disk takes seconds, more on a loaded machine.
  this.timeout(90_000);

  it('verifies an untouched export, and names the stream rewritten with its chain recomputed', async () => {
    const dataDir = tempDir('tally-embedded-checkpoints-');
    const { tally } = await openTally(cliConfig({ dataDir, databaseUrl: undefined }), pino({ level: 'silent' }));
    try {
      await tally.start({ runProjections: false });
      const partner = await tally.partners.create('Embedded Ltd', { sandbox: true, ctx: operatorContext() });
      const checkpoint = await tally.checkpoints.now();
      await tally.partners.create('Later Ltd', { sandbox: true, ctx: operatorContext() });
      const files = { checkpoint: join(dataDir, 'c.json'), key: join(dataDir, 'k.json'), events: join(dataDir, 'e.ndjson') };
      writeFileSync(files.checkpoint, JSON.stringify(checkpoint));
      writeFileSync(files.key, JSON.stringify({ keys: tally.checkpoints.publicKeys }));
      await exportLog(tally, files.events);
      expect((await verifyOffline(files, capture())).ok).to.equal(true);

      const stream = `partner-${partner.id}`;
      const rows = await tally.sql.query<{ event_id: string; type: string; data: string; metadata: string }>(
        'SELECT event_id::text, type, data::text, metadata::text FROM es_events WHERE stream_id = $1 ORDER BY stream_revision',
        [stream],
      );
      // The first event rewritten, and every hash of the stream recomputed after it.
      let previous = GENESIS_HASH;
      for (const [i, row] of rows.entries()) {
        const data = i === 0 ? { ...JSON.parse(row.data), name: 'Mallory Ltd' } : JSON.parse(row.data);
        const hash = chainHash(previous, eventDigest({ stream, id: row.event_id, type: row.type, data, metadata: JSON.parse(row.metadata) }));
        await tally.sql.query('UPDATE es_events SET data = $2::json, hash = $3 WHERE event_id = $1::uuid', [row.event_id, JSON.stringify(data), hash]);
        previous = hash;
      }
      await exportLog(tally, files.events);
      const io = capture();
      const error = await verifyOffline(files, io).catch((e) => e);
      expect(error).to.be.instanceOf(CliError);
      expect(error.exitCode).to.equal(EXIT.auditFailed);
      expect(io.lines.at(-1)).to.equal(`Verification FAILED: ${stream}.`);
    } finally {
      await tally.close();
    }
  });
});
