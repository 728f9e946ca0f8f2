import type { Logger } from 'pino';
import type { SnapshotCodec } from '../decider';
import type { JsonObject } from '../../eventstore/port';
import type { Sql } from '../../eventstore/sql';

/** Derived, like a read model: may be dropped at any time; loads then fold from the start again. */
export const SNAPSHOTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS state_snapshots (
  stream_id  text NOT NULL,
  kind       text NOT NULL,
  revision   bigint NOT NULL,
  state      jsonb NOT NULL,
  taken_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (stream_id, kind)
);`;

/**
 * Folded states of long streams at a revision, so that a load without the state in memory (after a
 * restart, on another node, after eviction) reads only the events after it. A snapshot is the fold
 * of an append-only stream up to its revision, so it never goes stale; a newer one (or a fold at the
 * same revision, which repairs one that could not be decoded) replaces it.
 */
export class SnapshotStore {
  constructor(
    private readonly sql: Sql,
    private readonly log?: Logger,
  ) {}

  /** Undefined when there is none, or when it cannot be read or decoded: the load then folds from the start. */
  async read<State>(stream: string, codec: SnapshotCodec<State>): Promise<{ state: State; revision: number } | undefined> {
    try {
      const [row] = await this.sql.query<{ revision: string; state: JsonObject }>(
        'SELECT revision::text AS revision, state FROM state_snapshots WHERE stream_id = $1 AND kind = $2',
        [stream, codec.kind],
      );
      return row ? { state: codec.decode(row.state), revision: Number(row.revision) } : undefined;
    } catch (error) {
      this.log?.warn({ err: error, stream }, 'reading a state snapshot failed; folding the stream from its start');
      return undefined;
    }
  }

  /** Every snapshot as stored, by stream and kind (the audit compares each with the fold of its stream). */
  async all(): Promise<Array<{ stream_id: string; kind: string; revision: string; state: JsonObject }>> {
    return this.sql.query<{ stream_id: string; kind: string; revision: string; state: JsonObject }>(
      'SELECT stream_id, kind, revision::text AS revision, state FROM state_snapshots ORDER BY stream_id, kind',
    );
  }

  /** In the background: a snapshot lost to an error is only a longer load later. */
  write<State>(stream: string, codec: SnapshotCodec<State>, loaded: { state: State; revision: number }): void {
    this.sql
      .query(
        `INSERT INTO state_snapshots (stream_id, kind, revision, state) VALUES ($1, $2, $3, $4::jsonb)
         ON CONFLICT (stream_id, kind) DO UPDATE SET revision = EXCLUDED.revision, state = EXCLUDED.state, taken_at = now()
          WHERE state_snapshots.revision <= EXCLUDED.revision`,
        [stream, codec.kind, loaded.revision, JSON.stringify(codec.encode(loaded.state))],
      )
      .catch((error) => this.log?.warn({ err: error, stream }, 'writing a state snapshot failed'));
  }
}
