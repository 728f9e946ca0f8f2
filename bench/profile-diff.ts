import { readFileSync } from 'node:fs';

/**
 * `npx tsx bench/profile-diff.ts <old.cpuprofile> <old operations> <new.cpuprofile> <new operations> [rows]`
 *
 * Two V8 CPU profiles (BENCH_CPU_PROFILE of the ledger bench, one per build, taken back to back) as
 * self time per operation (µs per transfer), by file and by function, largest increase first: where
 * a change made each transfer cost the main thread more. Two heap profiles (BENCH_HEAP_PROFILE,
 * .heapprofile) likewise, as bytes per operation that outlived young collections, by the function
 * that allocated them. Prints figures; asserts nothing.
 */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

type Table = Map<string, number>;

/** Every frame of a profile with its own weight: sampled µs (CPU) or bytes (heap). */
function framesOf(file: string): Array<{ callFrame: HeapNode['callFrame']; weight: number }> {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile | { head: HeapNode };
  if ('head' in parsed) {
    const frames: Array<{ callFrame: HeapNode['callFrame']; weight: number }> = [];
    const walk = (node: HeapNode) => {
      frames.push({ callFrame: node.callFrame, weight: node.selfSize });
      for (const child of node.children) walk(child);
    };
    walk(parsed.head);
    return frames;
  }
  const sampled = new Map<number, number>();
  parsed.samples.forEach((id, i) => {
    sampled.set(id, (sampled.get(id) ?? 0) + (parsed.timeDeltas[i] ?? 0));
  });
  return parsed.nodes.map((node) => ({ callFrame: node.callFrame, weight: sampled.get(node.id) ?? 0 }));
}

function selfTimes(file: string, operations: number): { byFile: Table; byFunction: Table } {
  const byFile: Table = new Map();
  const byFunction: Table = new Map();
  for (const { callFrame, weight } of framesOf(file)) {
    const us = weight / operations;
    const { functionName, url, lineNumber } = callFrame;
    const where = url.replace(/.*\/(src|node_modules|bench)\//, '$1/') || functionName;
    byFile.set(where, (byFile.get(where) ?? 0) + us);
    const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  }
  return { byFile, byFunction };
}

function printDiff(title: string, unit: string, before: Table, after: Table, rows: number): void {
  const names = new Set([...before.keys(), ...after.keys()]);
  const lines = [...names]
    .map((name) => ({ name, old: before.get(name) ?? 0, now: after.get(name) ?? 0 }))
    .sort((a, b) => b.now - b.old - (a.now - a.old))
    .slice(0, rows);
  console.log(`\n${title}: old ${unit}, new ${unit}, difference (per operation)`);
  for (const { name, old, now } of lines)
    console.log(`${old.toFixed(1).padStart(8)} ${now.toFixed(1).padStart(8)} ${(now - old).toFixed(1).padStart(8)}  ${name}`);
}

function main(): number {
  const [oldFile, oldOps, newFile, newOps, rows = '30'] = process.argv.slice(2);
  if (!oldFile || !newFile || !Number(oldOps) || !Number(newOps)) {
    console.error('Usage: npx tsx bench/profile-diff.ts <old.cpuprofile|.heapprofile> <old operations> <new.cpuprofile|.heapprofile> <new operations> [rows]');
    return 1;
  }
  const before = selfTimes(oldFile, Number(oldOps));
  const after = selfTimes(newFile, Number(newOps));
  const unit = oldFile.endsWith('.heapprofile') ? 'bytes' : 'µs';
  printDiff('By file', unit, before.byFile, after.byFile, Number(rows));
  printDiff('By function', unit, before.byFunction, after.byFunction, Number(rows));
  const total = (table: Table) => [...table.values()].reduce((a, b) => a + b, 0);
  console.log(`\nTotal: old ${total(before.byFile).toFixed(1)} ${unit}, new ${total(after.byFile).toFixed(1)} ${unit} per operation`);
  return 0;
}

process.exitCode = main();
