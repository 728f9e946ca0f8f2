import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { alive, removeOrphanClusters } from './postgres';

/**
 * The throwaway cluster does not outlive the test process: SIGINT (Ctrl-C) or SIGTERM stops it and
 * removes its folder before the process ends, and the cluster of a process killed with SIGKILL is
 * stopped and removed by the next start (here: the orphan sweep that every start runs first).
 */
describe('test cluster cleanup', function () {
  this.timeout(30_000);

  before(function () {
    if (process.env.DATABASE_URL) this.skip(); // no local cluster to leave behind
  });

  /** Starts cluster-child.ts; resolves once its cluster runs, with its folder and postmaster's pid. */
  async function startChild(): Promise<{ child: ChildProcess; dir: string; postmaster: number }> {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'cluster-child.ts')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (chunk) => {
        if (String(chunk).includes('ready')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`child ended (${code}) before its cluster ran: ${stderr}`)));
    });
    const dirs = readdirSync(tmpdir()).filter((name) => name.startsWith(`tally-pg-${child.pid}-`));
    expect(dirs).to.have.length(1);
    const dir = join(tmpdir(), dirs[0] ?? '');
    const postmaster = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(alive(postmaster)).to.equal(true);
    return { child, dir, postmaster };
  }

  function ended(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`stops the cluster and removes its folder when the test process gets ${signal}, then ends by that signal`, async () => {
      const { child, dir, postmaster } = await startChild();
      const end = ended(child);
      child.kill(signal);
      expect(await end).to.deep.equal({ code: null, signal });
      expect(alive(postmaster), 'postmaster still running').to.equal(false);
      expect(existsSync(dir), 'cluster folder still there').to.equal(false);
    });
  }

  it("stops and removes the cluster of a process killed with SIGKILL at the next start's sweep", async () => {
    const { child, dir, postmaster } = await startChild();
    const end = ended(child);
    child.kill('SIGKILL');
    await end;
    // SIGKILL cannot be caught: the cluster is orphaned until a start sweeps it (another test run's
    // start may get there first, so this does not assert that it still runs here).
    removeOrphanClusters();
    expect(alive(postmaster), 'postmaster still running').to.equal(false);
    expect(existsSync(dir), 'cluster folder still there').to.equal(false);
  });
});
