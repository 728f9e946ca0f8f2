import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import pino from 'pino';
import { CheckpointService } from '../src/app/audit';
import { PostgresEventStore } from '../src/eventstore/postgres';
import { PgSql } from '../src/eventstore/sql';
import { CHECKPOINT_STREAM, CHECKPOINT_SIGNED, signCheckpoint } from '../src/platform/audit/checkpoint';
import { MerkleStream } from '../src/platform/audit/merkle-stream';
import { newAuditKey } from '../src/platform/audit/signing';
import { liveTables } from '../src/platform/consumers/projection';
import { uuidV7 } from '../src/platform/ids';
import { AuditQueries, auditProjection } from '../src/projections/audit';
import { startTestCluster } from '../test/support/postgres';
import { envNumber } from './support';

const STREAMS = envNumber('BENCH_CHECKPOINT_STREAMS', 1_000_000, { integer: true });
const CHANGED = envNumber('BENCH_CHECKPOINT_CHANGED', 1_000, { integer: true });
const ROUNDS = 5;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const gc = (globalThis as { gc?: () => void }).gc;

function heap(): number {
  gc?.();
  return process.memoryUsage().heapUsed;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/**
 * `npm run bench -- checkpoints`: what a checkpoint costs with many streams, as the service takes it.
 * A throwaway Postgres holds the audit read model with BENCH_CHECKPOINT_STREAMS synthetic heads (as if
 * a checkpoint had recorded them) and a log; each round appends BENCH_CHECKPOINT_CHANGED events (half
 * to new streams, which land anywhere in the leaf order, half moving existing heads), takes a
 * checkpoint through the real Checkpointer, and folds it into the read model as the projection does.
 * Printed: the checkpoint's time, the heap it leaves behind and the heads the node holds, a proof's
 * time, and the first checkpoint after a start (the read model's heads checked against its root).
 */
export async function runCheckpointsBench(): Promise<void> {
  console.log(
    `checkpoints: ${STREAMS.toLocaleString('en')} streams in the read model, ${CHANGED.toLocaleString('en')} changed per checkpoint, median of ${ROUNDS}${gc ? '' : ' (run node with --expose-gc for exact memory)'}`,
  );
  const cluster = await startTestCluster({ durable: true });
  process.once('exit', () => cluster.stop());
  const sql = new PgSql(await cluster.freshDatabase(), { max: 4, applicationName: 'tally-bench-checkpoints' });
  try {
    const store = await PostgresEventStore.create(sql);
    await sql.exec(auditProjection.createTables(liveTables(auditProjection)));
    const fill = await timed(() => fillReadModel(sql));
    console.log(`  read model filled with ${STREAMS.toLocaleString('en')} heads in ${(fill.ms / 1_000).toFixed(1)} s`);

    const queries = new AuditQueries(sql);
    const key = newAuditKey();
    await seedCheckpoint(store, queries, key);
    await foldCheckpoints(store, sql);
    const heapBefore = heap();
    const node = new CheckpointService({ store, keys: [key], log: pino({ level: 'silent' }), queries, readYourWrites: async () => {} });
    await appendChanges(store, sql, CHANGED);
    const start = await timed(() => node.checkpointer.checkpointNow());
    await foldCheckpoints(store, sql);
    console.log(`  first checkpoint after a start (the read model's heads checked against its root, then the root): ${start.ms.toFixed(0)} ms`);

    const times: number[] = [];
    const held: number[] = [];
    const delay = monitorEventLoopDelay({ resolution: 1 });
    for (let round = 0; round < ROUNDS; round++) {
      await appendChanges(store, sql, CHANGED);
      delay.enable();
      times.push((await timed(() => node.checkpointer.checkpointNow())).ms);
      delay.disable();
      held.push(node.checkpointer.held);
      await foldCheckpoints(store, sql);
    }
    const heapAfter = heap();
    console.log(
      `  a checkpoint with ${CHANGED.toLocaleString('en')} streams changed: ${median(times).toFixed(0)} ms (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}); the event loop held at most ${(delay.max / 1e6).toFixed(1)} ms at a time (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`,
    );
    console.log(
      `  heads the node holds after a checkpoint: ${Math.max(...held).toLocaleString('en')} at most; heap +${mb(heapAfter - heapBefore)} over the ${ROUNDS + 1} checkpoints (${mb(heapAfter)} in all)`,
    );

    const latest = await queries.latest();
    const [row] = await sql.query<{ stream: string }>(`SELECT stream FROM rm_audit_heads ORDER BY stream OFFSET $1 LIMIT 1`, [Math.floor(STREAMS / 3)]);
    const signer = await timed(() => node.reads.proof(latest?.id as string, row?.stream as string));
    const elsewhere = new CheckpointService({ store, keys: [key], log: pino({ level: 'silent' }), queries, readYourWrites: async () => {} });
    const first = await timed(() => elsewhere.reads.proof(latest?.id as string, row?.stream as string));
    const [other] = await sql.query<{ stream: string }>(`SELECT stream FROM rm_audit_heads ORDER BY stream OFFSET $1 LIMIT 1`, [Math.floor((STREAMS * 2) / 3)]);
    const next = await timed(() => elsewhere.reads.proof(latest?.id as string, other?.stream as string));
    console.log(
      `  proofs (${next.value.path.length} hashes): on the node that signed ${signer.ms.toFixed(1)} ms (one run of 1,024 heads read); on another node the first ${first.ms.toFixed(0)} ms (the tree folded from the history), the next ${next.ms.toFixed(1)} ms`,
    );
  } finally {
    await sql.close();
    cluster.stop();
  }
}

/** STREAMS heads of streams named as the service names them (a kind and a random UUID), recorded by checkpoint 0; their leaf hashes as the projection computes them (the canonical JSON of an ASCII name, written in SQL). */
async function fillReadModel(sql: PgSql): Promise<void> {
  await sql.query(
    `INSERT INTO rm_audit_heads (stream, checkpoint, revision, hash, leaf)
     SELECT stream, 0, revision, hash, sha256('\\x00'::bytea || convert_to('{"hash":"' || hash || '","revision":' || revision || ',"stream":"' || stream || '"}', 'UTF8')) FROM (
       SELECT (ARRAY['account-', 'txn-', 'user-', 'accountin-'])[1 + i % 4] || gen_random_uuid() AS stream, i % 7 AS revision,
              md5(i::text) || md5((-i)::text) AS hash
       FROM generate_series(1, $1::integer) AS i) g`,
    [STREAMS],
  );
  await sql.query('ANALYZE');
}

/** The checkpoint the synthetic heads belong to, signed over their root and appended as the first of the log. */
async function seedCheckpoint(store: PostgresEventStore, queries: AuditQueries, key: ReturnType<typeof newAuditKey>): Promise<void> {
  const tree = new MerkleStream();
  for await (const page of queries.currentLeaves()) for (const { leaf } of page) tree.push(leaf);
  const checkpoint = signCheckpoint(
    { id: uuidV7(), position: '', streams: tree.size, root: tree.root().toString('hex'), createdAt: new Date().toISOString(), kid: key.kid },
    key,
  );
  await store.append(CHECKPOINT_STREAM, [{ id: uuidV7(), type: CHECKPOINT_SIGNED, data: { ...checkpoint } }], 'no_stream');
}

/** Half the changes to new streams, half to streams the read model has. */
async function appendChanges(store: PostgresEventStore, sql: PgSql, count: number): Promise<void> {
  const existing = await sql.query<{ stream: string }>(`SELECT stream FROM rm_audit_heads TABLESAMPLE SYSTEM (1) LIMIT $1`, [Math.ceil(count / 2)]);
  const streams = [...existing.map((r) => r.stream), ...Array.from({ length: count - existing.length }, () => `txn-${randomUUID()}`)];
  for (let i = 0; i < streams.length; i += 100) {
    await store.appendMany(
      streams
        .slice(i, i + 100)
        .map((stream) => ({ stream, events: [{ id: uuidV7(), type: 'BenchChanged', data: { at: i } }], expectedRevision: 'any' as const })),
    );
  }
}

let folded = -1;
/** Folds the checkpoint stream's new events into the read model, as the projection does. */
async function foldCheckpoints(store: PostgresEventStore, sql: PgSql): Promise<void> {
  const events = await store.readStream(CHECKPOINT_STREAM, { fromRevision: folded + 1 });
  if (events.length === 0) return;
  await sql.transaction((tx) => auditProjection.apply(tx, events, liveTables(auditProjection)));
  folded = events.at(-1)?.revision ?? folded;
}
