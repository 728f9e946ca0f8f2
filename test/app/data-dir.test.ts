import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { openTally } from '../../src/app/open';
import { type Config, loadConfig } from '../../src/config';
import { sharedCluster } from '../support/postgres';

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** A directory whose parent anyone may enter, as a real DATA_DIR's usually is. */
function dataDirPath(): string {
  const parent = mkdtempSync(join(tmpdir(), 'tally-data-'));
  chmodSync(parent, 0o755);
  return join(parent, 'data');
}

/**
 * Whether the user `nobody` can read the file: only when the tests run as root (they can then
 * act as another user); null otherwise.
 */
function nobodyCanRead(file: string): boolean | null {
  if (process.getuid?.() !== 0) return null;
  const run = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'cat', file], { stdio: 'ignore' });
  if (run.error) return null;
  return run.status === 0;
}

/** Runs with the usual umask (022), whatever the test process was started with. */
async function underUsualUmask<T>(run: () => Promise<T>): Promise<T> {
  const before = process.umask(0o022);
  try {
    return await run();
  } finally {
    process.umask(before);
  }
}

async function openAndClose(config: Config): Promise<void> {
  const { tally } = await openTally(config, pino({ level: 'silent' }));
  try {
    await tally.start({ runProjections: false });
  } finally {
    await tally.close();
  }
}

describe('DATA_DIR', function () {
  // Creating a PGlite database on disk takes seconds, more on a loaded machine.
  this.timeout(90_000);

  it('is created 0700 for the embedded store: its files and keys are out of other users’ reach', async () => {
    const dataDir = dataDirPath();
    await underUsualUmask(() => openAndClose({ ...loadConfig({}), dataDir, databaseUrl: undefined, sandbox: true }));
    // PGlite writes its files 0666 whatever the umask: the directory is what keeps others out.
    const storeFile = join(dataDir, 'pglite', 'PG_VERSION');
    expect(existsSync(storeFile)).to.equal(true);
    expect(nobodyCanRead(storeFile), 'another user reads a file of the store').to.not.equal(true);
    expect(nobodyCanRead(join(dataDir, 'keys.json'))).to.not.equal(true);
    expect(modeOf(dataDir).toString(8)).to.equal('700');
    expect(modeOf(join(dataDir, 'keys.json')).toString(8)).to.equal('600');
  });

  it('is closed to other users when it already exists open (as earlier versions made it)', async () => {
    const dataDir = dataDirPath();
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    writeFileSync(join(dataDir, 'left-over'), 'x', { mode: 0o666 });
    const databaseUrl = await (await sharedCluster()).freshDatabase();
    await underUsualUmask(() => openAndClose({ ...loadConfig({}), dataDir, databaseUrl, sandbox: true }));
    expect(modeOf(dataDir).toString(8)).to.equal('700');
    expect(modeOf(join(dataDir, 'keys.json')).toString(8)).to.equal('600');
    expect(nobodyCanRead(join(dataDir, 'left-over'))).to.not.equal(true);
  });
});
