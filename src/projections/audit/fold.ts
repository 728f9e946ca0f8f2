import type { RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';
import { type Checkpoint, CHECKPOINT_HEADS, CHECKPOINT_SIGNED, type StoredHead } from '../../platform/audit/checkpoint';
import { headLeaf } from '../../platform/audit/merkle-stream';
import type { Projection, Tables } from '../../platform/consumers/projection';

const TABLES = ['rm_audit_checkpoints', 'rm_audit_heads', 'rm_audit_head_history', 'rm_audit_pending_heads'];

/**
 * The checkpoints as the auditor routes and the checkpointer read them, from the checkpoint stream
 * (platform/audit/checkpoint.ts): each signed checkpoint (`rm_audit_checkpoints`, by its revision
 * in that stream); every stream's head at the last one, with the checkpoint that recorded it
 * (`rm_audit_heads`, what the next root is folded from); and each head a later checkpoint replaced
 * (`rm_audit_head_history`). A stream's head at a checkpoint is its current one when recorded at or
 * before it, else the last replaced one recorded at or before it: a new stream (every transfer makes
 * one) costs one row, not two. Heads recorded for a checkpoint not signed yet wait in
 * `rm_audit_pending_heads` (only when its signing falls in a later batch: a batch that holds both
 * writes them once); those of a checkpoint that was never signed (a node that crashed or lost the
 * race) are dropped at the next signed one, as foldCheckpointStream does.
 * Stream names sort in the "C" collation: UTF-8 byte order, the tree's leaf order. Each head keeps
 * its leaf hash, so that folding a root over a million of them hashes no leaf again.
 */
export const auditProjection: Projection = {
  name: 'audit',
  version: 2,
  tables: TABLES,
  eventTypes: [CHECKPOINT_HEADS, CHECKPOINT_SIGNED],
  createTables: (t: Tables) => `
    CREATE TABLE ${t.rm_audit_checkpoints} (
      revision integer PRIMARY KEY, id text NOT NULL UNIQUE, position text NOT NULL, streams integer NOT NULL,
      root text NOT NULL, created_at text NOT NULL, kid text NOT NULL, signature text NOT NULL);
    CREATE TABLE ${t.rm_audit_heads} (
      stream text COLLATE "C" PRIMARY KEY, checkpoint integer NOT NULL, revision integer NOT NULL, hash text NOT NULL, leaf bytea NOT NULL);
    CREATE TABLE ${t.rm_audit_head_history} (
      stream text COLLATE "C" NOT NULL, checkpoint integer NOT NULL, revision integer NOT NULL, hash text NOT NULL, leaf bytea NOT NULL,
      PRIMARY KEY (stream, checkpoint));
    CREATE TABLE ${t.rm_audit_pending_heads} (
      checkpoint_id text NOT NULL, stream text NOT NULL, revision integer NOT NULL, hash text NOT NULL, leaf bytea NOT NULL);`,

  async apply(tx: SqlQueryable, events: RecordedEvent[], t: Tables) {
    // The heads of a checkpoint signed within this batch are written once, at its signing; only
    // those whose checkpoint is not signed yet wait in the pending table (a batch may end between).
    const held = new Map<string, StoredHead[]>(events.filter((e) => e.type === CHECKPOINT_SIGNED).map((e) => [(e.data as unknown as Checkpoint).id, []]));
    for (const e of events) {
      if (e.type === CHECKPOINT_HEADS) {
        const data = e.data as { checkpointId: string; heads: StoredHead[] };
        const heads = held.get(data.checkpointId);
        if (heads) heads.push(...data.heads);
        else await recordHeads(tx, t, data);
      } else if (e.type === CHECKPOINT_SIGNED) {
        const checkpoint = e.data as unknown as Checkpoint;
        await signed(tx, t, e.revision, checkpoint, held.get(checkpoint.id) ?? []);
        held.delete(checkpoint.id);
      }
    }
  },
};

/** Heads as the columns of an unnest: stream, revision, hash and leaf hash (hex). */
function headColumns(heads: StoredHead[]): [string[], number[], string[], string[]] {
  return [
    heads.map((h) => h[0]),
    heads.map((h) => h[1]),
    heads.map((h) => h[2]),
    heads.map(([stream, revision, hash]) => headLeaf({ stream, revision, hash }).toString('hex')),
  ];
}

async function recordHeads(tx: SqlQueryable, t: Tables, data: { checkpointId: string; heads: StoredHead[] }): Promise<void> {
  await tx.query(
    `INSERT INTO ${t.rm_audit_pending_heads} (checkpoint_id, stream, revision, hash, leaf)
     SELECT $1, s, r, h, decode(l, 'hex') FROM unnest($2::text[], $3::integer[], $4::text[], $5::text[]) AS u(s, r, h, l)`,
    [data.checkpointId, ...headColumns(data.heads)],
  );
}

/**
 * The heads recorded for this checkpoint (those pending from earlier batches and `given`, this
 * batch's) become the current ones, in one statement: the heads they replace move to the history
 * (read as the statement began); any others pending were never signed.
 */
async function signed(tx: SqlQueryable, t: Tables, revision: number, c: Checkpoint, given: StoredHead[]): Promise<void> {
  await tx.query(
    `WITH recorded AS (
       SELECT stream, revision, hash, leaf FROM ${t.rm_audit_pending_heads} WHERE checkpoint_id = $1
       UNION ALL
       SELECT s, r, h, decode(l, 'hex') FROM unnest($3::text[], $4::integer[], $5::text[], $6::text[]) AS u(s, r, h, l)),
     replaced AS (
       INSERT INTO ${t.rm_audit_head_history} (stream, checkpoint, revision, hash, leaf)
       SELECT h.stream, h.checkpoint, h.revision, h.hash, h.leaf FROM ${t.rm_audit_heads} h JOIN recorded r ON r.stream = h.stream
       WHERE h.checkpoint < $2 ON CONFLICT DO NOTHING)
     INSERT INTO ${t.rm_audit_heads} (stream, checkpoint, revision, hash, leaf)
     SELECT stream, $2, revision, hash, leaf FROM recorded
     ON CONFLICT (stream) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, revision = EXCLUDED.revision, hash = EXCLUDED.hash, leaf = EXCLUDED.leaf`,
    [c.id, revision, ...headColumns(given)],
  );
  await tx.query(`DELETE FROM ${t.rm_audit_pending_heads}`);
  await tx.query(
    `INSERT INTO ${t.rm_audit_checkpoints} (revision, id, position, streams, root, created_at, kid, signature)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
    [revision, c.id, c.position, c.streams, c.root, c.createdAt, c.kid, c.signature],
  );
}
