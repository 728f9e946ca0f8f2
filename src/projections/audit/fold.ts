import type { RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';
import { type Checkpoint, CHECKPOINT_HEADS, CHECKPOINT_SIGNED, type StoredHead } from '../../platform/audit/checkpoint';
import { headLeaf } from '../../platform/audit/merkle-stream';
import type { Projection, Tables } from '../../platform/consumers/projection';

const TABLES = ['rm_audit_checkpoints', 'rm_audit_heads', 'rm_audit_head_history', 'rm_audit_pending_heads'];

/**
 * The checkpoints as the auditor routes and the checkpointer read them, from the checkpoint stream
 * (platform/audit/checkpoint.ts): each signed checkpoint (`rm_audit_checkpoints`, by its revision
 * in that stream); every stream's head at the last one (`rm_audit_heads`, what the next root is
 * folded from); and each head as each checkpoint recorded it (`rm_audit_head_history`: the heads at
 * an older checkpoint are, per stream, the last recorded at or before it). Heads recorded for a
 * checkpoint that was never signed (a node that crashed or lost the race) wait in
 * `rm_audit_pending_heads` and are dropped at the next signed one, as foldCheckpointStream does.
 * Stream names sort in the "C" collation: UTF-8 byte order, the tree's leaf order. Each head keeps
 * its leaf hash, so that folding a root over a million of them hashes no leaf again.
 */
export const auditProjection: Projection = {
  name: 'audit',
  version: 1,
  tables: TABLES,
  eventTypes: [CHECKPOINT_HEADS, CHECKPOINT_SIGNED],
  createTables: (t: Tables) => `
    CREATE TABLE ${t.rm_audit_checkpoints} (
      revision integer PRIMARY KEY, id text NOT NULL UNIQUE, position text NOT NULL, streams integer NOT NULL,
      root text NOT NULL, created_at text NOT NULL, kid text NOT NULL, signature text NOT NULL);
    CREATE TABLE ${t.rm_audit_heads} (stream text COLLATE "C" PRIMARY KEY, revision integer NOT NULL, hash text NOT NULL, leaf bytea NOT NULL);
    CREATE TABLE ${t.rm_audit_head_history} (
      stream text COLLATE "C" NOT NULL, checkpoint integer NOT NULL, revision integer NOT NULL, hash text NOT NULL, leaf bytea NOT NULL,
      PRIMARY KEY (stream, checkpoint));
    CREATE TABLE ${t.rm_audit_pending_heads} (
      checkpoint_id text NOT NULL, stream text NOT NULL, revision integer NOT NULL, hash text NOT NULL, leaf bytea NOT NULL);`,

  async apply(tx: SqlQueryable, events: RecordedEvent[], t: Tables) {
    for (const e of events) {
      if (e.type === CHECKPOINT_HEADS) await recordHeads(tx, t, e.data as { checkpointId: string; heads: StoredHead[] });
      else if (e.type === CHECKPOINT_SIGNED) await signed(tx, t, e.revision, e.data as unknown as Checkpoint);
    }
  },
};

async function recordHeads(tx: SqlQueryable, t: Tables, data: { checkpointId: string; heads: StoredHead[] }): Promise<void> {
  await tx.query(
    `INSERT INTO ${t.rm_audit_pending_heads} (checkpoint_id, stream, revision, hash, leaf)
     SELECT $1, s, r, h, decode(l, 'hex') FROM unnest($2::text[], $3::integer[], $4::text[], $5::text[]) AS u(s, r, h, l)`,
    [
      data.checkpointId,
      data.heads.map((h) => h[0]),
      data.heads.map((h) => h[1]),
      data.heads.map((h) => h[2]),
      data.heads.map(([stream, revision, hash]) => headLeaf({ stream, revision, hash }).toString('hex')),
    ],
  );
}

/** The heads recorded for this checkpoint become its own and the current ones; any others pending were never signed. */
async function signed(tx: SqlQueryable, t: Tables, revision: number, c: Checkpoint): Promise<void> {
  await tx.query(
    `INSERT INTO ${t.rm_audit_head_history} (stream, checkpoint, revision, hash, leaf)
     SELECT stream, $2, revision, hash, leaf FROM ${t.rm_audit_pending_heads} WHERE checkpoint_id = $1 ON CONFLICT DO NOTHING`,
    [c.id, revision],
  );
  await tx.query(
    `INSERT INTO ${t.rm_audit_heads} (stream, revision, hash, leaf)
     SELECT stream, revision, hash, leaf FROM ${t.rm_audit_pending_heads} WHERE checkpoint_id = $1
     ON CONFLICT (stream) DO UPDATE SET revision = EXCLUDED.revision, hash = EXCLUDED.hash, leaf = EXCLUDED.leaf`,
    [c.id],
  );
  await tx.query(`DELETE FROM ${t.rm_audit_pending_heads}`);
  await tx.query(
    `INSERT INTO ${t.rm_audit_checkpoints} (revision, id, position, streams, root, created_at, kid, signature)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
    [revision, c.id, c.position, c.streams, c.root, c.createdAt, c.kid, c.signature],
  );
}
