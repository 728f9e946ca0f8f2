import { join } from 'node:path';
import type { Config } from '../config';
import type { EventStore } from '../eventstore/port';
import { PostgresEventStore } from '../eventstore/postgres';
import { PgliteSql, PgSql, type Sql } from '../eventstore/sql';
import { openDataDir } from './data-dir';

export interface Backend {
  store: EventStore;
  /** Where the read models live (and the event log too, unless it is in KurrentDB). */
  sql: Sql;
  describe: string;
}

/** Where the embedded PGlite store keeps its files inside DATA_DIR. */
export const embeddedStoreDir = (config: Pick<Config, 'dataDir'>): string => join(config.dataDir, 'pglite');

/**
 * Picks the stores from the configuration: `DATABASE_URL` (Postgres server) or the embedded PGlite
 * in `DATA_DIR` for read models and, unless `KURRENTDB_URL` names KurrentDB, the event log.
 */
export async function openBackend(config: Config): Promise<Backend> {
  let sql: Sql;
  let where: string;
  if (config.databaseUrl) {
    sql = new PgSql(config.databaseUrl);
    where = `Postgres ${redact(config.databaseUrl)}`;
  } else {
    openDataDir(config.dataDir);
    const dir = embeddedStoreDir(config);
    sql = await PgliteSql.open(dir);
    where = `embedded PGlite in ${dir}`;
  }
  if (config.kurrentDbUrl) {
    // Loaded only when configured: the KurrentDB client pulls in gRPC and a native addon.
    const { KurrentDbEventStore } = require('../eventstore/kurrentdb') as typeof import('../eventstore/kurrentdb');
    const store = await KurrentDbEventStore.connect(config.kurrentDbUrl);
    return { store, sql, describe: `event log in KurrentDB ${redact(config.kurrentDbUrl)}, read models in ${where}` };
  }
  const store = await PostgresEventStore.create(sql, config.appendBatch);
  return { store, sql, describe: `event log and read models in ${where}` };
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):([^@/]+)@/, '//$1:***@');
}
