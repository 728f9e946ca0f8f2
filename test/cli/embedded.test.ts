import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { openTally } from '../../src/compose/open';
import { CliError, EXIT } from '../../src/cli/context';
import { readEvents } from '../../src/cli/events';
import { createPartner } from '../../src/cli/partners';
import { tempDir } from '../support/temp';
import { capture, cliConfig, runBinary } from './support';

/** The embedded PGlite store in DATA_DIR (no DATABASE_URL): one process at a time. */
describe('tally on the embedded store', function () {
  // Creating a PGlite database on disk takes seconds, more on a loaded machine.
  this.timeout(90_000);
  const freshDataDir = () => tempDir('tally-cli-');
  const inUse = (dataDir: string, pid: number) =>
    `The embedded store in ${dataDir} is in use by the running server (pid ${pid}): stop it first, or point DATABASE_URL at a Postgres server`;

  /** A DATA_DIR holding a store, as the server's first start leaves it. */
  async function storeDataDir(): Promise<string> {
    const dataDir = freshDataDir();
    const { tally } = await openTally(cliConfig({ dataDir, databaseUrl: undefined }), pino({ level: 'silent' }));
    await tally.close();
    return dataDir;
  }

  it('refuses to make a store of its own: it says which DATA_DIR it looked at and how to point elsewhere (was: an empty ./data, and an empty answer)', async () => {
    const dataDir = freshDataDir();
    const result = await runBinary(['projections', 'list'], { DATA_DIR: dataDir, DATABASE_URL: '' });
    expect(result.code).to.equal(1);
    expect(result.stderr.trim()).to.equal(
      `No embedded store in ${dataDir}: run the CLI with the server's DATA_DIR (DATA_DIR=/path/to/data npx tally ...), or set DATABASE_URL to its Postgres`,
    );
    expect(result.stdout).to.equal('');
    expect(readdirSync(dataDir)).to.deep.equal([]);
  });

  it('works on the embedded store and lets go of it when done', async () => {
    const dataDir = await storeDataDir();
    const config = cliConfig({ dataDir, databaseUrl: undefined });
    const created = await createPartner(config, 'Embedded Ltd', {}, capture());
    const stream = await readEvents(config, `partner-${created.id}`, {}, capture());
    expect(stream.state).to.deep.include({ exists: true, activeKeys: [created.apiKey] });
    expect(existsSync(join(dataDir, 'tally.pid'))).to.equal(false);
  });

  it('refuses with exit code 2 while a running process holds the store, and leaves its lock alone', async () => {
    const dataDir = await storeDataDir();
    // The parent of the test process stands in for the server: alive, and not us.
    writeFileSync(join(dataDir, 'tally.pid'), String(process.ppid));
    const error = await createPartner(cliConfig({ dataDir, databaseUrl: undefined }), 'Nope', {}, capture()).catch((e) => e);
    expect(error).to.be.instanceOf(CliError);
    expect(error.exitCode).to.equal(EXIT.storeInUse);
    expect(error.message).to.equal(inUse(dataDir, process.ppid));
    expect(readFileSync(join(dataDir, 'tally.pid'), 'utf8')).to.equal(String(process.ppid));
  });

  it('makes the binary print the reason and exit 2 when the store is in use', async () => {
    const dataDir = await storeDataDir();
    writeFileSync(join(dataDir, 'tally.pid'), String(process.ppid));
    const result = await runBinary(['projections', 'list'], { DATA_DIR: dataDir, DATABASE_URL: '' });
    expect(result.code).to.equal(2);
    expect(result.stderr.trim()).to.equal(inUse(dataDir, process.ppid));
    expect(result.stdout).to.equal('');
  });

  it('ignores a lock left by a process that is gone', async () => {
    const dataDir = await storeDataDir();
    writeFileSync(join(dataDir, 'tally.pid'), '999999999');
    const result = await runBinary(['audit', 'verify'], { DATA_DIR: dataDir, DATABASE_URL: '' });
    expect(result.stderr).to.equal('');
    expect(result.code).to.equal(0);
    expect(result.stdout).to.contain('Audit passed');
  });
});
