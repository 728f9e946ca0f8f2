import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PgSql } from '../src/eventstore/sql';
import { fmtInt, localPostmaster, printTable } from './support';

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

/** pgbench of this machine's PostgreSQL (the newest under /usr/lib/postgresql, or on PATH); null when there is none. */
function findPgbench(): string | null {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    for (const v of readdirSync(base).sort((a, b) => Number(b) - Number(a))) {
      const bin = join(base, v, 'bin', 'pgbench');
      if (existsSync(bin)) return bin;
    }
  }
  const found = spawnSync('sh', ['-c', 'command -v pgbench'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : null;
}

let clockTicks: number | undefined;
const ticksToMs = (ticks: number) => {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return (ticks * 1_000) / clockTicks;
};

/** proc(5) stat fields after the command name: [state, ppid, ...]; utime, stime, cutime, cstime are 11-14. */
function statFields(pid: string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * CPU ms of a postgres cluster so far: the postmaster's own and that of the children it has reaped
 * (pgbench's backends end with its run), plus its children still running.
 */
function clusterCpuMs(postmaster: string): number {
  let ms = 0;
  const own = statFields(postmaster);
  if (own) ms += ticksToMs(Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]));
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || pid === postmaster) continue;
    const fields = statFields(pid);
    if (fields?.[1] === postmaster) ms += ticksToMs(Number(fields[11]) + Number(fields[12]));
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
  const fields = statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
  return { output: out, cpuMs: ticksToMs(Number(fields[13]) + Number(fields[14])) };
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
    console.log(`  skipped: ${bin ? 'the cluster is not on this machine' : 'no pgbench on this machine'}`);
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
