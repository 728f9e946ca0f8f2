import { PostgresEventStore } from '../../src/eventstore/postgres';
import { PgliteSql } from '../../src/eventstore/sql';

/** An event store on a fresh embedded Postgres (PGlite) for the suite it is called in, closed after it. */
export function embeddedStore(): { sql: () => PgliteSql; store: () => PostgresEventStore } {
  let sql: PgliteSql | undefined;
  let store: PostgresEventStore | undefined;
  before(async () => {
    sql = await PgliteSql.open();
    store = await PostgresEventStore.create(sql);
  });
  after(async () => {
    await store?.close();
    await sql?.close();
  });
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the embedded store opens in the suite’s before hook');
    return value;
  };
  return { sql: () => opened(sql), store: () => opened(store) };
}
