import type { EventStore } from '../../eventstore/port';
import type { Sql, SqlQueryable } from '../../eventstore/sql';

/**
 * One row per consumer of the log (every projection, every reactor): its position, its lease, and
 * the failure it is stopped on, if any. A consumer's checkpoint moves in the transaction of its
 * writes, compare-and-set, so its effects are made once per event even if two nodes raced.
 */
export const CHECKPOINTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS projection_checkpoints (
  name         text PRIMARY KEY,
  position     text NOT NULL DEFAULT '',
  version      integer NOT NULL DEFAULT 1,
  owner        text,
  lease_until  timestamptz,
  updated_at   timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS version integer NOT NULL DEFAULT 1;
ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS failure jsonb;
CREATE TABLE IF NOT EXISTS projection_checkpoints_log (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  log_kind  text NOT NULL
);`;

/**
 * The kind of log the checkpoints are positions in. Postgres and PGlite write positions alike (and
 * keep their log beside their read models), KurrentDB another log with positions of the same shape:
 * read models built from one and then run on the other would compare positions of different logs
 * and, past the other's head, wait forever without a word.
 */
export const checkpointsLogKind = (store: Pick<EventStore, 'kind'>): string => (store.kind === 'kurrentdb' ? 'kurrentdb' : 'postgres');

export class CheckpointsOfAnotherLogError extends Error {
  constructor(recorded: string, current: string) {
    super(
      `The read models' checkpoints are positions in a ${recorded} event log, and this node's log is ${current}: ` +
        `point the node at the log they were built from, or drop projection_checkpoints_log and projection_checkpoints so that every read model is rebuilt from this log`,
    );
    this.name = 'CheckpointsOfAnotherLogError';
  }
}

/**
 * A consumer (a projection, a reactor) stopped on an event it cannot handle. Only it stops: the
 * others go on, and it retries the event with backoff until the cause is fixed (or, a projection, it
 * is rebuilt). Kept in its checkpoint row, so every node, the operator API and the CLI see it.
 */
export interface ProjectionFailure {
  /** When it first failed on this event (ISO 8601). */
  since: string;
  /** Its checkpoint: every event of its types before `event` is handled. */
  position: string;
  event: { position: string; id: string; stream: string; type: string };
  error: string;
  attempts: number;
  nextRetryAt: string;
}

export interface CheckpointRow {
  name: string;
  position: string;
  owner: string | null;
  failure: ProjectionFailure | null;
}

/** The checkpoint rows of one node's consumers: every statement a consumer makes about its checkpoints. */
export class Checkpoints {
  constructor(
    private readonly sql: Sql,
    private readonly nodeId: string,
  ) {}

  /** Creates the table (if absent) and checks that its positions are in this node's log. */
  async prepare(store: Pick<EventStore, 'kind'>): Promise<void> {
    await this.sql.exec(CHECKPOINTS_SCHEMA);
    // Checkpoints kept before the log's kind was recorded are taken to be this log's, as they were.
    const kind = checkpointsLogKind(store);
    await this.sql.query(`INSERT INTO projection_checkpoints_log (log_kind) VALUES ($1) ON CONFLICT (only_row) DO NOTHING`, [kind]);
    const [recorded] = await this.sql.query<{ log_kind: string }>(`SELECT log_kind FROM projection_checkpoints_log`);
    if (recorded && recorded.log_kind !== kind) throw new CheckpointsOfAnotherLogError(recorded.log_kind, kind);
  }

  async exists(name: string, tx: SqlQueryable = this.sql): Promise<boolean> {
    const [row] = await tx.query<{ n: string }>(`SELECT count(*)::text AS n FROM projection_checkpoints WHERE name = $1`, [name]);
    return row?.n !== '0';
  }

  async create(tx: SqlQueryable, name: string, position: string, version: number): Promise<void> {
    await tx.query(`INSERT INTO projection_checkpoints (name, position, version) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`, [name, position, version]);
  }

  async read(name: string): Promise<{ position: string; version: number } | undefined> {
    const [row] = await this.sql.query<{ position: string; version: number }>(`SELECT position, version FROM projection_checkpoints WHERE name = $1`, [name]);
    return row;
  }

  async rows(names: string[]): Promise<CheckpointRow[]> {
    return this.sql.query<CheckpointRow>(`SELECT name, position, owner, failure FROM projection_checkpoints WHERE name = ANY($1::text[])`, [names]);
  }

  /**
   * Moves every named checkpoint from its `from` to `to`, compare-and-set, while this node holds
   * its lease. False when one had moved (a rebuild's swap, another node): nothing may be written.
   */
  async move(tx: SqlQueryable, names: string[], from: string[], to: string): Promise<boolean> {
    const rows = await tx.query<{ name: string }>(
      `UPDATE projection_checkpoints c SET position = $3, updated_at = now()
       FROM unnest($1::text[], $2::text[]) AS x(name, position)
      WHERE c.name = x.name AND c.position = x.position AND c.owner = $4 RETURNING c.name`,
      [names, from, to, this.nodeId],
      // Prepared: every consumer batch commits with it.
      'tally_checkpoints_move',
    );
    return rows.length === names.length;
  }

  /** Takes or renews, in one statement, the lease of every named consumer no one else holds; the rows held. */
  async hold(names: string[], leaseSeconds: number): Promise<Array<Omit<CheckpointRow, 'owner'>>> {
    return this.sql.query<Omit<CheckpointRow, 'owner'>>(
      `UPDATE projection_checkpoints SET owner = $2, lease_until = now() + make_interval(secs => $3)
        WHERE name = ANY($1::text[]) AND (owner IS NULL OR owner = $2 OR lease_until < now()) RETURNING name, position, failure`,
      [names, this.nodeId, leaseSeconds],
    );
  }

  /** The named consumers stopped on an event (those held elsewhere: their owner retries them). */
  async stopped(names: string[]): Promise<Array<{ name: string; failure: ProjectionFailure }>> {
    return this.sql.query<{ name: string; failure: ProjectionFailure }>(
      `SELECT name, failure FROM projection_checkpoints WHERE failure IS NOT NULL AND name = ANY($1::text[])`,
      [names],
    );
  }

  /** Whether some node holds a live lease on `name`: it is running (a batch of it may be in flight). */
  async leased(name: string): Promise<boolean> {
    const rows = await this.sql.query<{ live: boolean }>(
      'SELECT owner IS NOT NULL AND lease_until > now() AS live FROM projection_checkpoints WHERE name = $1',
      [name],
    );
    return rows[0]?.live === true;
  }

  async release(name: string): Promise<void> {
    await this.sql.query(`UPDATE projection_checkpoints SET owner = NULL, lease_until = NULL WHERE name = $1 AND owner = $2`, [name, this.nodeId]);
  }

  async setFailure(name: string, failure: ProjectionFailure | null): Promise<void> {
    if (failure)
      await this.sql.query(`UPDATE projection_checkpoints SET failure = $2::jsonb WHERE name = $1 AND owner = $3`, [
        name,
        JSON.stringify(failure),
        this.nodeId,
      ]);
    else await this.sql.query(`UPDATE projection_checkpoints SET failure = NULL WHERE name = $1 AND owner = $2`, [name, this.nodeId]);
  }
}
