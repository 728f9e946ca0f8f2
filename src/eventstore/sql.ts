import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { LIMITS } from '../platform/limits';

/**
 * The small SQL interface the Postgres adapter, the projections and the read routes use. It runs
 * on a Postgres server through `pg` and on the embedded PGlite, so the same SQL is tested on both.
 * Values of type int8/numeric should be cast to text in SQL: the two drivers parse them differently.
 */
export interface SqlQueryable {
  /**
   * `prepared`: a name for a hot statement, which the server driver then parses and plans once per
   * connection (the same name must always go with the same text). PGlite ignores it.
   */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[], prepared?: string): Promise<Row[]>;
}

/**
 * The lock a node's schema set-up takes, transaction-scoped (`exec`, and the projections' tables
 * made at start): one node at a time creates tables, so that nodes started together on an empty
 * database do not race (PostgreSQL's `IF NOT EXISTS` does not hold against a concurrent creation).
 */
export const SCHEMA_LOCK = `SELECT pg_advisory_xact_lock(hashtext('tally.schema'))`;

/** Statements and transactions sent so far (for benchmarks and diagnostics). */
export interface SqlCounts {
  /** Every query, inside transactions too (BEGIN and COMMIT not counted). */
  statements: number;
  transactions: number;
}

export interface TransactionOptions {
  asynchronousCommit?: boolean;
}

const BEGIN_ASYNCHRONOUS = 'BEGIN; SET LOCAL synchronous_commit = off';

/**
 * A Postgres array literal of texts, every element quoted (so `NULL` stays a text), `"` and `\`
 * escaped. Written here rather than by the driver, which runs two regular expressions per element
 * (the append batch's ~200, the outbox's notifications); numbers, booleans (`t`/`f`) and hex need
 * no quoting at all (plainArrayLiteral).
 */
export function textArrayLiteral(values: readonly string[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as string;
    out += `${i ? ',' : ''}"${v.includes('"') || v.includes('\\') ? v.replace(/[\\"]/g, (c) => `\\${c}`) : v}"`;
  }
  return `${out}}`;
}

/** A Postgres array literal of values that need no quoting: numbers, booleans as `t`/`f`, hex. */
export const plainArrayLiteral = (values: ReadonlyArray<number | string>): string => `{${values.join(',')}}`;

export interface Sql extends SqlQueryable {
  readonly kind: 'postgres' | 'pglite';
  readonly counts: SqlCounts;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. With
   * `asynchronousCommit`, its commit does not wait for the WAL flush (SET LOCAL synchronous_commit =
   * off, sent with the BEGIN: one round trip): for writes the log can make again, read models.
   */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Runs several statements separated by semicolons, without parameters (schema set-up), as one
   * transaction under the schema lock (SCHEMA_LOCK): nodes starting at once on an empty database
   * create each table once, where two concurrent `CREATE TABLE IF NOT EXISTS` of one table fail.
   */
  exec(text: string): Promise<void>;
  close(): Promise<void>;
}

export class PgSql implements Sql {
  readonly kind = 'postgres' as const;
  readonly counts: SqlCounts = { statements: 0, transactions: 0 };
  readonly pool: pg.Pool;

  constructor(connectionString: string, options: { max?: number; applicationName?: string } = {}) {
    this.pool = new pg.Pool({
      connectionString,
      max: options.max ?? (Number(process.env.PG_POOL_MAX) || 20),
      application_name: options.applicationName ?? 'tally',
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: LIMITS.postgres.idleConnectionMs,
      // A transaction left open would hold back every gap-safe reader (see postgres.ts).
      idle_in_transaction_session_timeout: 30_000,
    });
    // An idle client that loses its server must not crash the process; the next query reports it.
    this.pool.on('error', () => {});
  }

  async query<Row>(text: string, params?: unknown[], prepared?: string): Promise<Row[]> {
    this.counts.statements++;
    const result = prepared ? await this.pool.query({ name: prepared, text, values: params as unknown[] }) : await this.pool.query(text, params as unknown[]);
    return result.rows as Row[];
  }

  async transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    this.counts.transactions++;
    const client = await this.pool.connect();
    // Checked out, the client has no listener of the pool's: a server that goes away now (a restart,
    // a failover) makes it emit 'error', which with no listener would end the process. The failure
    // reaches `fn` through its queries anyway; here it only marks the client as broken.
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken ??= error;
    };
    client.on('error', onError);
    try {
      // Without parameters, so the simple protocol: both statements in one message.
      await client.query(options.asynchronousCommit ? BEGIN_ASYNCHRONOUS : 'BEGIN');
      const tx: SqlQueryable = {
        query: async <Row>(text: string, params?: unknown[], prepared?: string) => {
          this.counts.statements++;
          const result = prepared ? await client.query({ name: prepared, text, values: params as unknown[] }) : await client.query(text, params as unknown[]);
          return result.rows as Row[];
        },
      };
      const result = await fn(tx);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      if (!broken) {
        await client.query('ROLLBACK').catch((rollbackFailed: Error) => {
          // Its transaction's state is unknown: never hand it out again.
          broken ??= rollbackFailed;
        });
      }
      throw error;
    } finally {
      client.off('error', onError);
      // A broken client is destroyed, not returned to the pool for the next caller to trip on.
      client.release(broken);
    }
  }

  async exec(text: string): Promise<void> {
    // One simple query of several statements is one transaction: the lock is held to its end.
    await this.pool.query(`${SCHEMA_LOCK};\n${text}`);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

export class PgliteSql implements Sql {
  readonly kind = 'pglite' as const;
  readonly counts: SqlCounts = { statements: 0, transactions: 0 };

  private constructor(readonly db: PGlite) {}

  /** `dataDir` undefined = in memory. */
  static async open(dataDir?: string): Promise<PgliteSql> {
    const db = await PGlite.create(dataDir ? { dataDir } : undefined);
    return new PgliteSql(db);
  }

  async query<Row>(text: string, params?: unknown[]): Promise<Row[]> {
    this.counts.statements++;
    const result = await this.db.query<Row>(text, params);
    return result.rows;
  }

  async transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    this.counts.transactions++;
    return this.db.transaction(async (t) => {
      if (options.asynchronousCommit) await t.query('SET LOCAL synchronous_commit = off');
      const tx: SqlQueryable = {
        query: async <Row>(text: string, params?: unknown[]) => {
          this.counts.statements++;
          return (await t.query<Row>(text, params)).rows;
        },
      };
      return fn(tx);
    });
  }

  async exec(text: string): Promise<void> {
    await this.db.exec(text);
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
