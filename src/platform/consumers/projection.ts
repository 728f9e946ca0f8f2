import type { RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';

/** Base table name -> the table to write (the live one, or a rebuild's one beside it). */
export type Tables = Record<string, string>;

/**
 * A read model: the tables it owns and how each event changes them. `apply` must be deterministic
 * (times come from the events, never from now()), so a rebuild yields the very same rows.
 */
export interface Projection {
  name: string;
  /** Bump when tables or apply change: a store built by another version is rebuilt at start. */
  version: number;
  /** Base names of the tables it owns. */
  tables: string[];
  /** Event types it reads; the runner asks the store for these only. */
  eventTypes: string[];
  /**
   * DDL creating its tables under the given names (indexes named after their table). With
   * `bulk`, for a rebuild or a verification: UNLOGGED and without secondary indexes, which
   * `finishBulk` then adds (and makes the tables logged) before the tables go live.
   */
  createTables(t: Tables, options?: { bulk?: boolean }): string;
  finishBulk?(t: Tables): string;
  /** `memory`: given by a rebuild, which alone writes its new tables (see BuildMemory). */
  apply(tx: SqlQueryable, events: RecordedEvent[], t: Tables, memory?: BuildMemory): Promise<void>;
  /**
   * For a rebuild whose memory holds every row: folds the batch without the database and returns
   * its writes, so that the next batch can be folded while these are written. Null when the memory
   * no longer holds every row (then `apply`).
   */
  prepareBulk?(events: RecordedEvent[], t: Tables, memory: BuildMemory): Promise<((tx: SqlQueryable) => Promise<void>) | null>;
}

/**
 * A rebuild writes tables that start empty and that nothing else writes, so every row in them is
 * one it wrote: while it remembers all of them, it never needs to read a row back from the
 * database. Bounded: past `limit` rows it forgets them all and reads rows back as usual.
 */
export class BuildMemory {
  readonly rows = new Map<string, unknown>();
  complete = true;

  constructor(readonly limit: number) {}

  remember(key: string, row: unknown): void {
    if (!this.complete) return;
    this.rows.set(key, row);
    if (this.rows.size > this.limit) {
      this.complete = false;
      this.rows.clear();
    }
  }
}

export const liveTables = (p: Projection): Tables => Object.fromEntries(p.tables.map((name) => [name, name]));

export const suffixedTables = (p: Projection, suffix: string): Tables => Object.fromEntries(p.tables.map((name) => [name, `${name}__${suffix}`]));
