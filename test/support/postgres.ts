import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A throwaway PostgreSQL cluster for the tests: `DATABASE_URL` when set, otherwise one started from
 * the machine's initdb/pg_ctl (as the `postgres` user when we run as root, since PostgreSQL refuses
 * root). Each test file asks for a fresh database with `freshDatabase()`.
 */
export interface TestCluster {
  /** Connection string of a new, empty database. */
  freshDatabase(): Promise<string>;
  stop(): void;
}

function findPgBin(): string {
  const candidates = ['/usr/lib/postgresql'];
  for (const base of candidates) {
    if (!existsSync(base)) continue;
    const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) {
      const bin = join(base, v, 'bin');
      if (existsSync(join(bin, 'pg_ctl'))) return bin;
    }
  }
  const which = spawnSync('sh', ['-c', 'dirname "$(command -v pg_ctl)"'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim() && which.stdout.trim() !== '.') return which.stdout.trim();
  throw new Error('PostgreSQL binaries (initdb, pg_ctl) not found: install postgresql or set DATABASE_URL');
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

async function startLocalCluster(bin: string, options: { durable?: boolean; settings?: string[]; unixSocket?: boolean }): Promise<ControlledCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'tally-pg-'));
  chmodSync(dir, 0o777);
  const dataDir = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) => {
    const full = join(bin, cmd);
    if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', full, ...args], { stdio: 'pipe' });
    else execFileSync(full, args, { stdio: 'pipe' });
  };
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
    stop() {
      try {
        // Already stopped (an outage test that failed half-way) is fine.
        run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // not running
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

let shared: Promise<TestCluster> | undefined;

/** One cluster for the whole mocha run, stopped in the root `after` hook (test/support/hooks.ts). */
export function sharedCluster(): Promise<TestCluster> {
  shared ??= startTestCluster();
  return shared;
}

export async function stopSharedCluster(): Promise<void> {
  if (!shared) return;
  const cluster = await shared;
  shared = undefined;
  cluster.stop();
}
