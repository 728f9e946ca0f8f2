import type { RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';
import type { BuildMemory, Projection, Tables } from './projection';

/**
 * Set-based projections. A batch of events costs at most three statements per table, whatever its
 * size: one SELECT of the rows the batch touches, one INSERT of the rows it made, one INSERT ... ON
 * CONFLICT DO UPDATE of the rows it changed.
 * In between, the events are folded into those rows in memory by plain functions: the round trips
 * of a batch do not grow with its events.
 *
 * Rows hold text for timestamps (ISO 8601, milliseconds, UTC) and numerics (decimal strings), so the
 * fold never sees a driver's Date or float, and a rebuild writes exactly what the live run wrote.
 */
export type Row = Record<string, string | number | boolean | null | object>;

/** A folded batch: the rows it changed, and the rows it found (that existed before it), per table. */
interface Planned {
  dirty: Map<string, Map<string, Row>>;
  loaded: Map<string, Map<string, Row>>;
}

export type ColumnType = 'uuid' | 'text' | 'boolean' | 'bigint' | 'integer' | 'timestamptz' | 'numeric' | 'jsonb';

export interface TableDef {
  /** The single-column primary key. */
  key: string;
  columns: Record<string, { type: ColumnType; notNull?: boolean; default?: string; unique?: boolean }>;
  /** Extra indexes: lists of columns (with DESC where wanted). Named after the table. */
  indexes?: string[][];
}

export interface RowStore {
  get(table: string, key: string | number): Row | undefined;
  /** Stores (or replaces) a row; it is written at the end of the batch. */
  put(table: string, row: Row): void;
}

export interface RowProjectionDef {
  name: string;
  version: number;
  eventTypes: string[];
  tables: Record<string, TableDef>;
  /** The rows an event reads or writes, so they can be loaded before the fold. */
  touches(event: RecordedEvent): Array<{ table: string; key: string | number }>;
  /**
   * Event types that begin their row (an entity's first event): a row first touched in a batch by
   * one of these cannot exist yet (each event is applied once), so it is not looked up.
   */
  creates?: string[];
  apply(rows: RowStore, event: RecordedEvent): void;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

function selectExpression(column: string, type: ColumnType): string {
  if (type === 'timestamptz') return `to_char(${column} AT TIME ZONE 'UTC', ${ISO}) AS ${column}`;
  if (type === 'numeric' || type === 'bigint') return `${column}::text AS ${column}`;
  return column;
}

/** The upsert's conflict clause: every column but the key takes the new value. */
function onConflict(def: TableDef): string {
  const updates = Object.keys(def.columns)
    .filter((c) => c !== def.key)
    .map((c) => `${c} = EXCLUDED.${c}`);
  return `ON CONFLICT (${def.key}) DO ${updates.length ? `UPDATE SET ${updates.join(', ')}` : 'NOTHING'}`;
}

function ddl(name: string, def: TableDef, options: { bulk?: boolean } = {}): string {
  const columns = Object.entries(def.columns).map(([column, c]) => {
    const parts = [column, c.type === 'numeric' ? 'numeric(38, 8)' : c.type];
    if (column === def.key) parts.push('PRIMARY KEY');
    else {
      if (c.notNull) parts.push('NOT NULL');
      if (c.unique) parts.push('UNIQUE');
      if (c.default !== undefined) parts.push(`DEFAULT ${c.default}`);
    }
    return `  ${parts.join(' ')}`;
  });
  const table = `CREATE ${options.bulk ? 'UNLOGGED ' : ''}TABLE ${name} (\n${columns.join(',\n')}\n);`;
  return [table, ...(options.bulk ? [] : indexesOf(name, def))].join('\n');
}

function indexesOf(name: string, def: TableDef): string[] {
  return (def.indexes ?? []).map((cols, i) => `CREATE INDEX ${name}_i${i} ON ${name} (${cols.join(', ')});`);
}

/** Normalizes what the driver returned into the row form the folds use. */
function normalize(row: Record<string, unknown>, def: TableDef): Row {
  const out: Row = {};
  for (const [column, c] of Object.entries(def.columns)) {
    const value = row[column];
    if (value === null || value === undefined) out[column] = null;
    else if (c.type === 'bigint' || c.type === 'integer') out[column] = Number(value);
    else if (c.type === 'jsonb') out[column] = typeof value === 'string' ? (JSON.parse(value) as object) : (value as object);
    else out[column] = value as string | boolean;
  }
  return out;
}

/** Rows as one typed array per column (`unnest`), jsonb as its text. */
function asColumns(tableDef: TableDef, columns: string[]): { select: string; params: (rows: Row[]) => unknown[] } {
  const casts = columns.map((c, i) => `$${i + 1}::${tableDef.columns[c]?.type ?? 'text'}[]`).join(', ');
  return {
    select: `SELECT * FROM unnest(${casts})`,
    params: (rows) =>
      columns.map((c) => {
        const json = tableDef.columns[c]?.type === 'jsonb';
        return rows.map((r) => {
          const v = r[c];
          if (v === null || v === undefined) return null;
          return json ? JSON.stringify(v) : String(v);
        });
      }),
  };
}

/** Rows as one JSON array of arrays of column values: x->>i cast to the column's type (jsonb kept as jsonb). */
function asJson(tableDef: TableDef, columns: string[]): { select: string; params: (rows: Row[]) => unknown[] } {
  const values = columns.map((c, i) => {
    const type = tableDef.columns[c]?.type ?? 'text';
    return type === 'jsonb' ? `x->${i}` : `(x->>${i})::${type}`;
  });
  return {
    select: `SELECT ${values.join(', ')} FROM jsonb_array_elements($1::jsonb) AS x`,
    params: (rows) => [JSON.stringify(rows.map((r) => columns.map((c) => r[c] ?? null)))],
  };
}

/** The keys a batch's events touch, per table; a row first touched by a creating event is not looked up (unless the memory answers for free). */
function touchedKeys(def: RowProjectionDef, events: RecordedEvent[], memory: BuildMemory | undefined): Map<string, Set<string>> {
  const wanted = new Map<string, Set<string>>(Object.keys(def.tables).map((base) => [base, new Set<string>()]));
  const fresh = new Set<string>();
  // From a complete memory every lookup is free, so every touched row is looked up there.
  const skipCreated = !memory?.complete;
  for (const e of events) {
    for (const { table, key } of def.touches(e)) {
      const id = `${table}|${key}`;
      if (wanted.get(table)?.has(String(key)) || fresh.has(id)) continue;
      if (skipCreated && def.creates?.includes(e.type)) fresh.add(id);
      else wanted.get(table)?.add(String(key));
    }
  }
  return wanted;
}

/** The existing rows of one table with these keys: from `memory` when it holds every row, else read through `tx`. */
async function loadRows(
  def: RowProjectionDef,
  base: string,
  keys: string[],
  t: Tables,
  memory: BuildMemory | undefined,
  tx?: SqlQueryable,
): Promise<Map<string, Row>> {
  const tableDef = def.tables[base] as TableDef;
  const rows = new Map<string, Row>();
  if (memory?.complete) {
    // Every row of these tables is remembered: one that is not does not exist.
    for (const key of keys) {
      const row = memory.rows.get(`${base}|${key}`) as Row | undefined;
      if (row) rows.set(key, row);
    }
  } else if (keys.length > 0) {
    if (!tx) throw new Error(`Projection ${def.name}: rows to read and no transaction`);
    const keyType = tableDef.columns[tableDef.key]?.type ?? 'text';
    const columns = Object.entries(tableDef.columns).map(([c, d]) => selectExpression(c, d.type));
    const found = await tx.query<Record<string, unknown>>(`SELECT ${columns.join(', ')} FROM ${t[base]} WHERE ${tableDef.key} = ANY($1::${keyType}[])`, [keys]);
    for (const r of found) rows.set(String(r[tableDef.key]), normalize(r, tableDef));
  }
  return rows;
}

/**
 * Folds a batch: the rows it touches (from `memory` when it holds every row, else read through
 * `tx`), changed by each event in order. Returns the changed rows per table.
 */
async function plan(def: RowProjectionDef, events: RecordedEvent[], t: Tables, memory: BuildMemory | undefined, tx?: SqlQueryable): Promise<Planned> {
  const tableNames = Object.keys(def.tables);
  const wanted = touchedKeys(def, events, memory);
  const loaded = new Map<string, Map<string, Row>>();
  for (const base of tableNames) loaded.set(base, await loadRows(def, base, [...(wanted.get(base) ?? [])], t, memory, tx));
  const dirty = new Map<string, Map<string, Row>>(tableNames.map((base) => [base, new Map<string, Row>()]));
  const store: RowStore = {
    get: (table, key) => dirty.get(table)?.get(String(key)) ?? loaded.get(table)?.get(String(key)),
    put: (table, row) => {
      const tableDef = def.tables[table];
      if (!tableDef) throw new Error(`Projection ${def.name} has no table ${table}`);
      dirty.get(table)?.set(String(row[tableDef.key]), row);
    },
  };
  for (const e of events) def.apply(store, e);
  return { dirty, loaded };
}

/**
 * Per table, the batch's new rows by a plain INSERT and its changed ones by an upsert. A rebuild
 * sends each column as one typed array (`columns`: cheaper for the server to take in than one JSON
 * document, over its large batches); the live run sends one JSON array of rows, a row an array of
 * its column values (`json`: cheaper for this thread to write, no key repeated per row).
 */
async function write(def: RowProjectionDef, tx: SqlQueryable, { dirty, loaded }: Planned, t: Tables, encoding: 'columns' | 'json'): Promise<void> {
  for (const base of Object.keys(def.tables)) {
    const rows = [...(dirty.get(base)?.values() ?? [])];
    if (rows.length === 0) continue;
    const tableDef = def.tables[base] as TableDef;
    const existed = loaded.get(base) ?? new Map<string, Row>();
    const columns = Object.keys(tableDef.columns);
    const { select, params } = encoding === 'columns' ? asColumns(tableDef, columns) : asJson(tableDef, columns);
    const fresh = rows.filter((r) => !existed.has(String(r[tableDef.key])));
    const changed = rows.filter((r) => existed.has(String(r[tableDef.key])));
    const insert = `INSERT INTO ${t[base]} (${columns.join(', ')}) ${select}`;
    if (fresh.length > 0) await tx.query(insert, params(fresh));
    if (changed.length > 0) await tx.query(`${insert} ${onConflict(tableDef)}`, params(changed));
  }
}

function remember(dirty: Map<string, Map<string, Row>>, memory: BuildMemory | undefined): void {
  if (!memory) return;
  for (const [base, rows] of dirty) for (const [key, row] of rows) memory.remember(`${base}|${key}`, row);
}

export function rowProjection(def: RowProjectionDef): Projection {
  const tableNames = Object.keys(def.tables);
  return {
    name: def.name,
    version: def.version,
    tables: tableNames,
    eventTypes: def.eventTypes,
    createTables: (t: Tables, options?: { bulk?: boolean }) => tableNames.map((base) => ddl(t[base] ?? base, def.tables[base] as TableDef, options)).join('\n'),
    // Secondary indexes are built once over the finished table: cheaper than maintaining them row by row.
    finishBulk: (t: Tables) =>
      tableNames.flatMap((base) => [`ALTER TABLE ${t[base]} SET LOGGED;`, ...indexesOf(t[base] ?? base, def.tables[base] as TableDef)]).join('\n'),
    async apply(tx: SqlQueryable, events: RecordedEvent[], t: Tables, memory?: BuildMemory) {
      const planned = await plan(def, events, t, memory, tx);
      await write(def, tx, planned, t, 'json');
      remember(planned.dirty, memory);
    },
    async prepareBulk(events: RecordedEvent[], t: Tables, memory: BuildMemory) {
      if (!memory.complete) return null;
      const planned = await plan(def, events, t, memory);
      remember(planned.dirty, memory);
      return (tx: SqlQueryable) => write(def, tx, planned, t, 'columns');
    },
  };
}
