import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PgSql } from '../src/eventstore/sql';
import { findPgBin } from '../test/support/postgres';
import { fmtInt, localPostmaster, parseProcStat, printTable, procStat } from './support';

/**
 * The machine's own price of light load, measured beside the service's: pgbench (PostgreSQL's C
 * client; its built-in "simple-update" script, a transaction of an UPDATE, a SELECT and an INSERT,
 * the shape of a ledger posting in bare SQL) in a closed loop of 64 clients, then at a fixed rate of a
 * fraction of what that loop reached (`-R`, which pgbench schedules as an open loop: latency counts
 * from each transaction's due time). CPU per transaction of pgbench and of postgres in each.
 *
 * Why: on this kind of machine (a virtual one) a process that sleeps between messages pays to wake up
 * on every one, so a request costs more CPU at a low rate than in a loop that keeps every process
 * busy, whatever the software. The service's targets at 25% of capacity are read beside this ratio.
 */

export interface PeerRun {
  label: string;
  tps: number;
  /** pgbench's mean latency (with -R, from each transaction's due time). */
  meanMs: number;
  pgbenchUs: number;
  postgresUs: number;
}

/** pgbench beside the programs the throwaway cluster runs from; null when they do not ship it. */
function findPgbench(): string | null {
  const bin = join(findPgBin(), 'pgbench');
  return existsSync(bin) ? bin : null;
}

/**
 * CPU ms of a postgres cluster so far: the postmaster's own and that of the children it has reaped
 * (pgbench's backends end with its run), plus its children still running.
 */
function clusterCpuMs(postmaster: string): number {
  const own = procStat(postmaster);
  let ms = own ? own.cpuMs + own.childrenCpuMs : 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || pid === postmaster) continue;
    const stat = procStat(pid);
    if (stat?.ppid === postmaster) ms += stat.cpuMs;
  }
  return ms;
}

/**
 * One pgbench run through a shell that prints its own stat when pgbench has ended: the shell's
 * cutime/cstime are pgbench's CPU.
 */
function pgbench(bin: string, url: string, args: string[]): { output: string; cpuMs: number } {
  const script = `"$0" "$@" 2>&1; echo; echo "STAT $(cat /proc/$$/stat)"`;
  const out = execFileSync('sh', ['-c', script, bin, ...args, url], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const statLine = out.split('\n').find((l) => l.startsWith('STAT ')) ?? '';
  return { output: out, cpuMs: parseProcStat(statLine.slice('STAT '.length)).childrenCpuMs };
}

function parseRun(label: string, output: string, pgbenchMs: number, postgresMs: number): PeerRun {
  const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1] ?? Number.NaN);
  const count = Number(/number of transactions actually processed: (\d+)/.exec(output)?.[1] ?? Number.NaN);
  const mean = /latency average = ([\d.]+) ms/.exec(output)?.[1];
  return { label, tps, meanMs: Number(mean ?? Number.NaN), pgbenchUs: (pgbenchMs * 1_000) / count, postgresUs: (postgresMs * 1_000) / count };
}

/**
 * pgbench -N on a fresh database of `url`'s cluster: a closed loop, then `fraction` of its rate.
 * Prints a table; returns the runs (empty when pgbench or the cluster's processes are not here).
 */
export async function pgbenchPeer(url: string, seconds: number, fraction: number): Promise<PeerRun[]> {
  const bin = findPgbench();
  const sql = new PgSql(url, { max: 1 });
  const postmaster = await localPostmaster(sql).finally(() => sql.close());
  if (!bin || !postmaster) {
    console.log(`  skipped: ${bin ? 'the cluster is not on this machine' : 'no pgbench beside the cluster’s programs'}`);
    return [];
  }
  execFileSync(bin, ['-i', '-q', '-s', '10', url], { stdio: 'pipe' });
  const runs: PeerRun[] = [];
  const measured = (label: string, extra: string[]) => {
    const before = clusterCpuMs(postmaster);
    const { output, cpuMs } = pgbench(bin, url, ['-n', '-N', '-j', '2', '-T', String(seconds), ...extra]);
    runs.push(parseRun(label, output, cpuMs, clusterCpuMs(postmaster) - before));
  };
  // Warm-up, not counted: the tables into the cache.
  pgbench(bin, url, ['-n', '-N', '-c', '16', '-j', '2', '-T', '2']);
  measured('closed loop, 64 clients', ['-c', '64']);
  const rate = Math.max(1, Math.round((runs[0]?.tps ?? 0) * fraction));
  measured(`${rate}/s (${Math.round(fraction * 100)}%), 64 clients`, ['-c', '64', '-R', String(rate)]);
  printTable(
    ['pgbench -N', 'tps', 'mean ms', 'pgbench us/txn', 'postgres us/txn'],
    runs.map((r) => [r.label, fmtInt(r.tps), Number.isFinite(r.meanMs) ? r.meanMs.toFixed(2) : '-', fmtInt(r.pgbenchUs), fmtInt(r.postgresUs)]),
  );
  const [closed, low] = runs;
  if (closed && low)
    console.log(
      `  at ${Math.round(fraction * 100)}% / closed loop, CPU per transaction: pgbench ${(low.pgbenchUs / closed.pgbenchUs).toFixed(2)}x, postgres ${(low.postgresUs / closed.postgresUs).toFixed(2)}x`,
    );
  return runs;
}
