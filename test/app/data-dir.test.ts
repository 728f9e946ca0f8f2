import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import ts from 'typescript';
import { openDataDir } from '../../src/platform/data-dir';
import { openTally } from '../../src/compose/open';
import { type Config, loadConfig } from '../../src/config';
import { sharedCluster } from '../support/postgres';
import { tempDir } from '../support/temp';

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** A directory whose parent anyone may enter, as a real DATA_DIR's usually is. */
function dataDirPath(): string {
  const parent = tempDir('tally-data-');
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

const asNobody = ['--reuid=65534', '--regid=65534', '--clear-groups'];

/**
 * What `nobody` runs, staged where it can read it: the checkout may sit where other users cannot
 * enter (under root's home, a `mktemp -d` folder), so data-dir.ts (it imports node's modules only)
 * is compiled into a 0755 folder of the temp dir, as plain JavaScript that node runs without tsx (test/support/postgres.ts stages the
 * PostgreSQL binaries for the `postgres` user the same way). Made once per run.
 */
let staged: string | undefined;
function stagedDataDirModule(): string {
  if (staged) return staged;
  const dir = tempDir('tally-as-nobody-');
  chmodSync(dir, 0o755);
  const outfile = join(dir, 'data-dir.js');
  const source = readFileSync(resolve(__dirname, '../../src/platform/data-dir.ts'), 'utf8');
  const compiled = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  writeFileSync(outfile, compiled.outputText, { mode: 0o644 });
  staged = outfile;
  return outfile;
}

/**
 * Opens `dir` as the user `nobody`, in a process of its own: only when the tests run as root (they
 * can then act as another user) and `nobody` can run this node (not one installed under root's
 * home, as `npx node@26` is); null otherwise.
 */
function openAsNobody(dir: string): { status: number | null; stderr: string } | null {
  if (process.getuid?.() !== 0) return null;
  const probe = spawnSync('setpriv', [...asNobody, process.execPath, '--version'], { stdio: 'ignore', cwd: '/' });
  if (probe.error || probe.status !== 0) return null;
  const module = stagedDataDirModule();
  const script = `require(${JSON.stringify(module)}).openDataDir(process.argv[1])`;
  const run = spawnSync('setpriv', [...asNobody, process.execPath, '-e', script, dir], { cwd: dirname(module), encoding: 'utf8' });
  if (run.error) return null;
  return { status: run.status, stderr: run.stderr };
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

  describe('owned by another user (chmod answers EPERM)', () => {
    const eperm = () => {
      throw Object.assign(new Error('EPERM: operation not permitted, chmod'), { code: 'EPERM' });
    };

    it('starts when the directory is already closed to group and others', () => {
      const dataDir = dataDirPath();
      mkdirSync(dataDir, { mode: 0o700 });
      chmodSync(dataDir, 0o700);
      expect(() => openDataDir(dataDir, eperm)).to.not.throw();
    });

    it('refuses to start, naming DATA_DIR and its mode, when group or others may enter it', () => {
      for (const mode of [0o750, 0o705, 0o701, 0o770]) {
        const dataDir = dataDirPath();
        mkdirSync(dataDir);
        chmodSync(dataDir, mode);
        expect(() => openDataDir(dataDir, eperm)).to.throw(`DATA_DIR ${dataDir} is mode 0${mode.toString(8)}`);
      }
    });

    it('as a real other user: a root-owned 0700 DATA_DIR does not stop the service, a 0755 one does', function () {
      const closed = dataDirPath();
      mkdirSync(closed, { mode: 0o700 });
      chmodSync(closed, 0o700);
      const started = openAsNobody(closed);
      if (!started) this.skip();
      expect(started.stderr).to.equal('');
      expect(started.status).to.equal(0);
      const open = dataDirPath();
      mkdirSync(open);
      chmodSync(open, 0o755);
      const refused = openAsNobody(open);
      expect(refused?.status).to.not.equal(0);
      expect(refused?.stderr).to.contain(`DATA_DIR ${open} is mode 0755`);
      expect(modeOf(open).toString(8)).to.equal('755');
    });
  });
});
