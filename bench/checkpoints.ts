import { randomBytes, randomUUID } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { signCheckpoint } from '../src/platform/audit/checkpoint';
import { HeadsTree, leafInput } from '../src/platform/audit/heads-tree';
import { leafHash, merkleRoot } from '../src/platform/audit/merkle';
import { newAuditKey } from '../src/platform/audit/signing';

const STREAMS = Number(process.env.BENCH_CHECKPOINT_STREAMS ?? 1_000_000);
const CHANGED = Number(process.env.BENCH_CHECKPOINT_CHANGED ?? 1_000);
const ROUNDS = 5;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const gc = (globalThis as { gc?: () => void }).gc;

function memory() {
  gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, buffers: m.arrayBuffers };
}

function timed<T>(fn: () => T): { ms: number; value: T } {
  const started = performance.now();
  const value = fn();
  return { ms: performance.now() - started, value };
}

const hash = () => randomBytes(32).toString('hex');
/** Stream names shaped as the service's: a kind and a random UUID, so new streams land anywhere in the order. */
const streamName = (i: number) => `${['account', 'txn', 'user', 'accountin'][i % 4]}-${randomUUID()}`;

/** The median of ROUNDS runs of `round` (each a fresh batch of changes, then the root). */
function median(round: () => number): number {
  const times = Array.from({ length: ROUNDS }, round).sort((a, b) => a - b);
  return times[Math.floor(ROUNDS / 2)] as number;
}

/**
 * `npm run bench -- checkpoints`: what a checkpoint costs the checkpointer's tree with many streams.
 * Synthetic heads are fed to the HeadsTree directly (no store: the log's reading is the store's
 * readAll, as any consumer's); the root is signed as a checkpoint is.
 */
export async function runCheckpointsBench(): Promise<void> {
  console.log(
    `checkpoints: ${STREAMS.toLocaleString('en')} streams, ${CHANGED.toLocaleString('en')} changed per checkpoint, median of ${ROUNDS}${gc ? '' : ' (run node with --expose-gc for exact memory)'}`,
  );
  const before = memory();
  const tree = new HeadsTree();
  const names: string[] = [];
  const build = timed(() => {
    for (let i = 0; i < STREAMS; i++) {
      const stream = streamName(i);
      names.push(stream);
      tree.set({ stream, revision: 0, hash: hash() });
    }
    return tree.rootHex();
  });
  const after = memory();
  console.log(
    `  first checkpoint (every stream new): ${build.ms.toFixed(0)} ms; memory +${mb(after.rss - before.rss)} RSS, +${mb(after.heap - before.heap)} heap, +${mb(after.buffers - before.buffers)} buffers`,
  );

  const scratch = timed(() => merkleRoot([...tree.inOrder()].map((h) => leafHash(leafInput(h)))));
  console.log(
    `  the same root from scratch (every leaf and node hashed): ${scratch.ms.toFixed(0)} ms; equal: ${scratch.value.toString('hex') === build.value}`,
  );

  let revision = 1;
  const updates = median(() => {
    for (let i = 0; i < CHANGED; i++) tree.set({ stream: names[Math.floor(Math.random() * names.length)] as string, revision: revision++, hash: hash() });
    return timed(() => tree.rootHex()).ms;
  });
  console.log(`  ${CHANGED} heads moved: ${updates.toFixed(1)} ms`);

  const inserts = median(() => {
    for (let i = 0; i < CHANGED; i++) tree.set({ stream: streamName(i), revision: 0, hash: hash() });
    return timed(() => tree.rootHex()).ms;
  });
  console.log(`  ${CHANGED} new streams (anywhere in the order): ${inserts.toFixed(1)} ms`);

  const last = [...tree.inOrder()].at(-1)?.stream as string;
  const appended = median(() => {
    for (let i = 0; i < CHANGED; i++) tree.set({ stream: `${last}~${randomUUID()}`, revision: 0, hash: hash() });
    return timed(() => tree.rootHex()).ms;
  });
  console.log(`  ${CHANGED} new streams sorting after every other: ${appended.toFixed(1)} ms`);

  const oneInsert = median(() => {
    tree.set({ stream: '!first', revision: revision++, hash: hash() });
    tree.set({ stream: streamName(0), revision: 0, hash: hash() });
    return timed(() => tree.rootHex()).ms;
  });
  console.log(`  1 new stream at a random place (and one head moved): ${oneInsert.toFixed(1)} ms`);

  // As the checkpointer does it: settle() in slices, the event loop running between them.
  for (let i = 0; i < CHANGED; i++) tree.set({ stream: streamName(i), revision: 0, hash: hash() });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const settleStarted = performance.now();
  await tree.settle();
  const settleMs = performance.now() - settleStarted;
  delay.disable();
  console.log(
    `  ${CHANGED} new streams settled in slices: ${settleMs.toFixed(0)} ms in all, the event loop held at most ${(delay.max / 1e6).toFixed(1)} ms at a time (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`,
  );

  const proof = timed(() => tree.proof(names[12_345 % names.length] as string));
  const key = newAuditKey();
  const sign = timed(() =>
    signCheckpoint({ id: randomUUID(), position: '1', streams: tree.size, root: tree.rootHex(), createdAt: new Date().toISOString(), kid: key.kid }, key),
  );
  console.log(`  a proof: ${proof.ms.toFixed(2)} ms (${proof.value?.path.length} hashes); signing: ${sign.ms.toFixed(2)} ms`);
  const end = memory();
  console.log(`  memory at the end (${tree.size.toLocaleString('en')} streams): ${mb(end.rss)} RSS, ${mb(end.heap)} heap, ${mb(end.buffers)} buffers`);
}
