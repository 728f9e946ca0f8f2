import { readFileSync } from 'node:fs';

/**
 * `npx tsx bench/profile-diff.ts <old.cpuprofile> <old operations> <new.cpuprofile> <new operations> [rows]`
 *
 * Two V8 CPU profiles (BENCH_CPU_PROFILE of the ledger bench, one per build, taken back to back) as
 * self time per operation (µs per transfer), by file and by function, largest increase first: where
 * a change made each transfer cost the main thread more. Prints figures; asserts nothing.
 */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

type Table = Map<string, number>;

function selfTimes(file: string, operations: number): { byFile: Table; byFunction: Table } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const sampled = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    sampled.set(id, (sampled.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const byFile: Table = new Map();
  const byFunction: Table = new Map();
  for (const node of profile.nodes) {
    const us = (sampled.get(node.id) ?? 0) / operations;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.replace(/.*\/(src|node_modules|bench)\//, '$1/') || functionName;
    byFile.set(where, (byFile.get(where) ?? 0) + us);
    const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  return { byFile, byFunction };
}

function printDiff(title: string, before: Table, after: Table, rows: number): void {
  const names = new Set([...before.keys(), ...after.keys()]);
  const lines = [...names]
    .map((name) => ({ name, old: before.get(name) ?? 0, now: after.get(name) ?? 0 }))
    .sort((a, b) => b.now - b.old - (a.now - a.old))
    .slice(0, rows);
  console.log(`\n${title}: old µs, new µs, difference (per operation)`);
  for (const { name, old, now } of lines)
    console.log(`${old.toFixed(1).padStart(8)} ${now.toFixed(1).padStart(8)} ${(now - old).toFixed(1).padStart(8)}  ${name}`);
}

function main(): number {
  const [oldFile, oldOps, newFile, newOps, rows = '30'] = process.argv.slice(2);
  if (!oldFile || !newFile || !Number(oldOps) || !Number(newOps)) {
    console.error('Usage: npx tsx bench/profile-diff.ts <old.cpuprofile> <old operations> <new.cpuprofile> <new operations> [rows]');
    return 1;
  }
  const before = selfTimes(oldFile, Number(oldOps));
  const after = selfTimes(newFile, Number(newOps));
  printDiff('By file', before.byFile, after.byFile, Number(rows));
  printDiff('By function', before.byFunction, after.byFunction, Number(rows));
  return 0;
}

process.exitCode = main();
