import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { comparePositions, type EventStore, type RecordedEvent } from '../../eventstore/port';
import type { Sql, SqlQueryable } from '../../eventstore/sql';
import { BuildMemory, type Projection, suffixedTables, type Tables } from './projection';
import { LIMITS } from '../limits';

const REBUILD_BATCH = LIMITS.consumers.rebuildBatch;
const VERIFY_BATCH = LIMITS.consumers.verifyBatch;

/** What a rebuild or a verification works with. */
export interface BuildContext {
  store: EventStore;
  sql: Sql;
  log?: Logger;
  /** Rows it remembers instead of reading them back (BuildMemory). */
  buildMemoryRows: number;
}

export function splitStatements(ddl: string): string[] {
  return ddl
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** New tables beside the live ones (`r` a rebuild's, `v` a verification's), empty, UNLOGGED, without secondary indexes. */
async function scratchTables(ctx: BuildContext, p: Projection, kind: 'r' | 'v'): Promise<Tables> {
  const tables = suffixedTables(p, `${kind}${Date.now().toString(36)}${randomUUID().slice(0, 4)}`);
  await ctx.sql.transaction(async (tx) => {
    for (const statement of splitStatements(p.createTables(tables, { bulk: true }))) await tx.query(statement);
  });
  return tables;
}

/**
 * Rebuilds a projection from the start of the log into new tables beside the live ones, then
 * swaps them in one transaction: reads see the old model until the swap and the new one after,
 * never a half-built one. The checkpoint moves to where the rebuild stopped; the live loop (its
 * compare-and-set fails once) continues from there.
 */
export async function rebuildProjection(
  ctx: BuildContext,
  p: Projection,
  onProgress?: (applied: number, position: string) => void,
): Promise<{ events: number; position: string }> {
  const tables = await scratchTables(ctx, p, 'r');
  try {
    const built = await foldLog(ctx, p, tables, onProgress);
    if (p.finishBulk) {
      const finish = p.finishBulk;
      await ctx.sql.transaction(async (tx) => {
        for (const statement of splitStatements(finish(tables))) await tx.query(statement);
      });
    }
    await swapIn(ctx.sql, p, tables, built.position);
    return built;
  } catch (error) {
    await dropScratchTables(ctx, p.name, tables);
    throw error;
  }
}

/**
 * Folds the whole log into `tables`. Three stages overlap: the next batch is read (another
 * connection on a server) and folded (from memory) while the previous one is written; writes stay in
 * batch order. Tables nobody reads yet, UNLOGGED until finished: a crash here only loses the rebuild.
 */
async function foldLog(
  ctx: BuildContext,
  p: Projection,
  tables: Tables,
  onProgress?: (applied: number, position: string) => void,
): Promise<{ events: number; position: string }> {
  const memory = new BuildMemory(ctx.buildMemoryRows);
  const read = (from: string) =>
    ctx.store.readAll({ fromPosition: from || undefined, filter: { eventTypes: p.eventTypes }, maxCount: REBUILD_BATCH, projectionOnly: true });
  const inTransaction = (fn: (tx: SqlQueryable) => Promise<void>) => ctx.sql.transaction(fn, { asynchronousCommit: true });
  // The read ahead and the write behind are awaited later, where their errors are thrown to the
  // rebuild's caller; handled now too, so that one failing while this awaits something else is not
  // an unhandled rejection. Logged at debug only: an error that is not thrown where awaited follows
  // another one that ended the rebuild first, and that one is thrown.
  const quiet = (what: string) => (error: unknown) => ctx.log?.debug({ err: error, projection: p.name }, `rebuild ${what} failed`);
  let position = '';
  let applied = 0;
  let writing: Promise<void> = Promise.resolve();
  let next: Promise<RecordedEvent[]> = read(position);
  while (true) {
    const events = await next;
    if (events.length === 0) break;
    next = read(events[events.length - 1]?.position ?? position);
    next.catch(quiet('read ahead'));
    const writes = p.prepareBulk ? await p.prepareBulk(events, tables, memory) : null;
    await writing;
    writing = writes ? inTransaction(writes) : inTransaction((tx) => p.apply(tx, events, tables, memory));
    writing.catch(quiet('write behind'));
    // Without prepared writes, the next batch reads rows back: it must see this one's.
    if (!writes) await writing;
    position = events[events.length - 1]?.position ?? position;
    applied += events.length;
    onProgress?.(applied, position);
  }
  await writing;
  return { events: applied, position };
}

/** The rebuilt tables replace the live ones, and the checkpoint moves to where the rebuild stopped. */
async function swapIn(sql: Sql, p: Projection, tables: Tables, position: string): Promise<void> {
  await sql.transaction(async (tx) => {
    await tx.query(`SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, [p.name]);
    for (const table of p.tables) {
      await tx.query(`DROP TABLE IF EXISTS ${table}`);
      await tx.query(`ALTER TABLE ${tables[table]} RENAME TO ${table}`);
    }
    await tx.query(`UPDATE projection_checkpoints SET position = $2, version = $3, failure = NULL, updated_at = now() WHERE name = $1`, [
      p.name,
      position,
      p.version,
    ]);
  });
}

/**
 * Folds the log into scratch tables up to the live checkpoint and compares them row by row with
 * the live tables, holding the checkpoint row so the live loop cannot move between the two.
 * Returns the tables that differ (empty when the read model equals the fold of the log).
 */
export async function verifyProjection(ctx: BuildContext, p: Projection): Promise<Array<{ table: string; differingRows: number }>> {
  const tables = await scratchTables(ctx, p, 'v');
  const memory = new BuildMemory(ctx.buildMemoryRows);
  try {
    let position = '';
    for (let attempt = 0; attempt < 20; attempt++) {
      const [row] = await ctx.sql.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = $1`, [p.name]);
      const target = row?.position ?? '';
      while (comparePositions(position, target) < 0) {
        const events = (
          await ctx.store.readAll({ fromPosition: position || undefined, filter: { eventTypes: p.eventTypes }, maxCount: VERIFY_BATCH, projectionOnly: true })
        ).filter((e) => comparePositions(e.position, target) <= 0);
        if (events.length === 0) break;
        await ctx.sql.transaction((tx) => p.apply(tx, events, tables, memory));
        position = events[events.length - 1]?.position ?? position;
      }
      const result = await ctx.sql.transaction((tx) => compareTables(tx, p, tables, target));
      if (result) return result;
    }
    throw new Error(`Projection ${p.name} kept moving; verify again`);
  } finally {
    await dropScratchTables(ctx, p.name, tables);
  }
}

/** The tables that differ from their scratch twins, with the checkpoint held at `target`; null when it had moved. */
async function compareTables(tx: SqlQueryable, p: Projection, tables: Tables, target: string): Promise<Array<{ table: string; differingRows: number }> | null> {
  const [locked] = await tx.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, [p.name]);
  if ((locked?.position ?? '') !== target) return null;
  const diffs: Array<{ table: string; differingRows: number }> = [];
  for (const table of p.tables) {
    const [d] = await tx.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM ((SELECT * FROM ${table} EXCEPT ALL SELECT * FROM ${tables[table]}) UNION ALL (SELECT * FROM ${tables[table]} EXCEPT ALL SELECT * FROM ${table})) d`,
    );
    if (d && d.n !== '0') diffs.push({ table, differingRows: Number(d.n) });
  }
  return diffs;
}

/**
 * Drops the tables a rebuild or a verification built beside the live ones, after it failed or was
 * compared. Nothing reads them, so one that cannot be dropped (the database out of reach) is left
 * behind, said in the log, and the caller's own answer or error goes on.
 */
async function dropScratchTables(ctx: BuildContext, projection: string, tables: Tables): Promise<void> {
  for (const table of Object.values(tables)) {
    await ctx.sql
      .query(`DROP TABLE IF EXISTS ${table}`)
      .catch((error) => ctx.log?.warn({ err: error, projection, table }, 'scratch table of a rebuild or verification left behind: drop it by hand'));
  }
}
