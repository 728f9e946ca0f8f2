import type { Logger } from 'pino';
import { comparePositions } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';

/** What a node knows of its projections, for waitForPositions. */
export interface Known {
  sql: SqlQueryable;
  /** Moved forward only. */
  positions: Map<string, string>;
  owns(name: string): boolean;
  stopped(name: string): boolean;
  /** Waits `ms` or until the projections move, telling the loop that a reader waits for `position`. */
  pause(ms: number, position: string): Promise<void>;
}

/**
 * True once every one of `names` has passed `position`, false when one is stopped on an event or
 * `timeoutMs` ran out first. The positions of projections another node owns are read from their
 * checkpoint rows. Projections wait so wherever they run (ProjectionEngine, ProjectionThread).
 */
export async function waitForPositions(position: string, names: string[], timeoutMs: number, known: Known): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const behind = names.filter((n) => comparePositions(known.positions.get(n) ?? '', position) < 0);
    if (behind.length === 0) return true;
    // One stopped on an event will not get there by waiting: say so now rather than at the timeout.
    if (behind.some((n) => known.stopped(n))) return false;
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    // Another node may own the projection: then its checkpoint row is the truth.
    const notOwned = behind.filter((n) => !known.owns(n));
    if (notOwned.length > 0) {
      const rows = await known.sql.query<{ name: string; position: string }>(`SELECT name, position FROM projection_checkpoints WHERE name = ANY($1::text[])`, [
        notOwned,
      ]);
      for (const r of rows) if (comparePositions(r.position, known.positions.get(r.name) ?? '') > 0) known.positions.set(r.name, r.position);
    }
    await known.pause(Math.min(remaining, notOwned.length > 0 ? 25 : 1_000), position);
  }
}

/** Waits (bounded) until the named projections have passed a position this request appended. */
export type WaitForReadModels = (position: string | undefined, names: string[]) => Promise<void>;

/** Notes a write answered without waiting for the read models, under a scope (see writeScope). */
export type NoteWrite = (scope: string, position: string | undefined) => void;

/**
 * A partner's writes to a read model that were answered without waiting for it (noteWrite): the
 * partner's next read of that model waits for them.
 */
export const writeScope = (model: string, partnerId: string) => `${model}:${partnerId}`;

/** What read-your-writes asks of the projections (Projections, wherever they run). */
export interface ReadModels {
  waitFor(position: string, options?: { names?: string[]; timeoutMs?: number }): Promise<boolean>;
  isStopped(name: string): boolean;
  passed(position: string, names: string[]): boolean;
}

/**
 * Read-your-writes, the one mechanism: a request that wrote waits for the projections it reads to pass
 * its position (waitFor). Writes whose route answers from its own events (a transfer) do not wait;
 * they note their position under a scope (a partner's ledger, noteWrite), and the scope's next read
 * waits for it instead (readAfterWrites): a partner that moved money and then reads sees the
 * movement on this node, while the write path never waits for a projection.
 */
export class ReadYourWrites {
  /** Per scope, the last position appended without waiting for the projections. */
  private readonly lastWrites = new Map<string, string>();

  constructor(
    private readonly engine: ReadModels,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {}

  readonly noteWrite: NoteWrite = (scope, position) => {
    if (!position) return;
    const known = this.lastWrites.get(scope);
    if (!known || comparePositions(known, position) < 0) this.lastWrites.set(scope, position);
  };

  /** Waits (bounded) until the named projections have passed the scope's last noted write. */
  readonly readAfterWrites = async (scope: string, names: string[]): Promise<void> => {
    const position = this.lastWrites.get(scope);
    if (!position) return;
    await this.waitFor(position, names);
    if (this.lastWrites.get(scope) === position && this.engine.passed(position, names)) this.lastWrites.delete(scope);
  };

  readonly waitFor: WaitForReadModels = async (position, names) => {
    if (!position) return;
    const caughtUp = await this.engine.waitFor(position, { names, timeoutMs: this.timeoutMs });
    // A projection stopped on an event has already said so (once per attempt); each request need not.
    if (!caughtUp && !names.some((n) => this.engine.isStopped(n)))
      this.log.warn({ position, names }, 'read-your-writes wait timed out; answering from a lagging read model');
  };
}
