import type { SqlQueryable } from '../../eventstore/sql';
import type { Checkpoint } from '../../platform/audit/checkpoint';
import type { Head } from '../../platform/audit/merkle-stream';

/** A head with its leaf hash (SHA-256 of 0x00 and its leaf input), as the read model keeps it. */
export type HeadWithLeaf = Head & { leaf: Buffer };

/** A stream's leaf hash, and the stream (the leaf order). */
export interface Leaf {
  stream: string;
  leaf: Buffer;
}

type HeadRow = Head & { leaf: Uint8Array };

/** A signed checkpoint with its revision in the checkpoint stream (the order, and the cursor). */
export type StoredCheckpoint = Checkpoint & { revision: number };

/** Heads read at once while a tree is folded: a page's memory, whatever the number of streams. */
const HEADS_PAGE = 2_000;

interface CheckpointRow {
  revision: number;
  id: string;
  position: string;
  streams: number;
  root: string;
  created_at: string;
  kid: string;
  signature: string;
}

const checkpointOf = (r: CheckpointRow): StoredCheckpoint => ({
  revision: Number(r.revision),
  id: r.id,
  position: r.position,
  streams: Number(r.streams),
  root: r.root,
  createdAt: r.created_at,
  kid: r.kid,
  signature: r.signature,
});

const COLUMNS = 'revision, id, position, streams, root, created_at, kid, signature';

/** The audit read model's reads (fold.ts). Heads come in leaf order, a page at a time. */
export class AuditQueries {
  constructor(private readonly sql: SqlQueryable) {}

  async latest(): Promise<StoredCheckpoint | null> {
    const rows = await this.sql.query<CheckpointRow>(`SELECT ${COLUMNS} FROM rm_audit_checkpoints ORDER BY revision DESC LIMIT 1`);
    return rows[0] ? checkpointOf(rows[0]) : null;
  }

  /** Newest first, below `beforeRevision` when given; `limit` + 1 rows tell whether a next page exists. */
  async list(limit: number, beforeRevision?: number): Promise<StoredCheckpoint[]> {
    const rows = await this.sql.query<CheckpointRow>(`SELECT ${COLUMNS} FROM rm_audit_checkpoints WHERE revision < $1 ORDER BY revision DESC LIMIT $2`, [
      beforeRevision ?? 2 ** 31 - 1,
      limit,
    ]);
    return rows.map(checkpointOf);
  }

  async byId(id: string): Promise<StoredCheckpoint | null> {
    const rows = await this.sql.query<CheckpointRow>(`SELECT ${COLUMNS} FROM rm_audit_checkpoints WHERE id = $1`, [id]);
    return rows[0] ? checkpointOf(rows[0]) : null;
  }

  /**
   * Every stream's leaf hash as the last checkpoint folded here recorded it (it moves on as
   * checkpoints are folded), a page at a time: what a root is folded from, and no more.
   */
  currentLeaves(): AsyncIterable<Leaf[]> {
    return this.pages(async (after) => {
      const rows = await this.sql.query<{ stream: string; leaf: Uint8Array }>(
        `SELECT stream, leaf FROM rm_audit_heads WHERE stream > $1 ORDER BY stream LIMIT $2`,
        [after, HEADS_PAGE],
        'audit-current-leaves',
      );
      return rows.map((r) => ({ stream: r.stream, leaf: Buffer.from(r.leaf) }));
    });
  }

  /** Every stream's head at the checkpoint of `revision` (per stream, the last recorded at or before it), a page at a time. */
  headsAt(revision: number): AsyncIterable<HeadWithLeaf[]> {
    return this.pages((after) => this.headsAtAfter(revision, after, false, HEADS_PAGE));
  }

  /** `count` heads at the checkpoint of `revision` from the stream `first` on (one run of a BlockedTree). */
  headsAtFrom(revision: number, first: string, count: number): Promise<HeadWithLeaf[]> {
    return this.headsAtAfter(revision, first, true, count);
  }

  private async headsAtAfter(revision: number, from: string, inclusive: boolean, limit: number): Promise<HeadWithLeaf[]> {
    // A stream's current head when its checkpoint is at or before `revision`, else the last it replaced there.
    const rows = await this.sql.query<HeadRow>(
      `SELECT s.stream, coalesce(h.revision, s.revision) AS revision, coalesce(h.hash, s.hash) AS hash, coalesce(h.leaf, s.leaf) AS leaf
       FROM rm_audit_heads s
       LEFT JOIN LATERAL (SELECT revision, hash, leaf FROM rm_audit_head_history
         WHERE stream = s.stream AND checkpoint <= $2 ORDER BY checkpoint DESC LIMIT 1) h ON s.checkpoint > $2
       WHERE s.stream ${inclusive ? '>=' : '>'} $1 AND (s.checkpoint <= $2 OR h.revision IS NOT NULL)
       ORDER BY s.stream LIMIT $3`,
      [from, revision, limit],
    );
    return rows.map((r) => ({ stream: r.stream, revision: Number(r.revision), hash: r.hash, leaf: Buffer.from(r.leaf) }));
  }

  /** Whether the stream has a head at the checkpoint of `revision`. */
  async hasHeadAt(revision: number, stream: string): Promise<boolean> {
    const rows = await this.sql.query(
      `SELECT 1 FROM rm_audit_heads WHERE stream = $1 AND checkpoint <= $2
       UNION ALL SELECT 1 FROM rm_audit_head_history WHERE stream = $1 AND checkpoint <= $2 LIMIT 1`,
      [stream, revision],
    );
    return rows.length > 0;
  }

  /** Keyset pages by stream name; "" sorts before every name. Pages, not rows: a million streams are not a million awaits. */
  private async *pages<T extends { stream: string }>(page: (after: string) => Promise<T[]>): AsyncIterable<T[]> {
    let after = '';
    for (;;) {
      const rows = await page(after);
      if (rows.length > 0) yield rows;
      const last = rows.at(-1);
      if (!last || rows.length < HEADS_PAGE) return;
      after = last.stream;
    }
  }
}
