import { expect } from 'chai';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import { eventDigest } from '../../src/eventstore/hash';
import { EVENT_LOG_SCHEMA } from '../../src/eventstore/postgres-schema';
import { PgliteSql, PgSql, type Sql, textArrayLiteral } from '../../src/eventstore/sql';
import pg from 'pg';
import { LIMITS } from '../../src/platform/limits';
import { sharedCluster } from '../support/postgres';
import { eventStoreConformance } from './conformance';

const pools: PgSql[] = [];

/** A connection to a fresh database of the test cluster. */
async function serverSql(): Promise<PgSql> {
  const sql = new PgSql(await (await sharedCluster()).freshDatabase());
  pools.push(sql);
  return sql;
}

/** A store on `sql` whose close also closes `sql`. */
async function storeOwning(sql: Sql): Promise<PostgresEventStore> {
  const store = await PostgresEventStore.create(sql);
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await sql.close();
  };
  return store;
}

eventStoreConformance('postgres server', {
  givesPreviousHash: true,
  open: async () => storeOwning(await serverSql()),
  async openTransactionAppend(store, stream, event) {
    const sql = (store as PostgresEventStore).sql as PgSql;
    const client = new pg.Client({ connectionString: (sql.pool as unknown as { options: { connectionString: string } }).options.connectionString });
    await client.connect();
    await client.query('BEGIN');
    const metadata = event.metadata ?? {};
    const request = [
      {
        stream,
        expected: 'any',
        events: [
          {
            id: event.id,
            type: event.type,
            data: event.data,
            metadata,
            digest: eventDigest({ stream, id: event.id, type: event.type, data: event.data, metadata }),
          },
        ],
      },
    ];
    await client.query('SELECT * FROM es_append($1::jsonb)', [JSON.stringify(request)]);
    return {
      async commit() {
        await client.query('COMMIT');
        await client.end();
      },
    };
  },
});

// A log created by the schema before this one: data and metadata jsonb, the key on global_position
// alone and the pair indexed apart. The schema run over it keeps all that, and everything still holds.
eventStoreConformance('postgres server, a log created before (jsonb columns, key on global_position)', {
  givesPreviousHash: true,
  async open() {
    const sql = await serverSql();
    const earlier: Array<[string | RegExp, string]> = [
      [/(data|metadata)(\s+)json NOT NULL/g, '$1$2jsonb NOT NULL'],
      ['global_position  bigserial NOT NULL,', 'global_position  bigserial PRIMARY KEY,'],
      ['  CONSTRAINT es_events_pkey PRIMARY KEY (transaction_id, global_position),\n', ''],
    ];
    let earlierLog = EVENT_LOG_SCHEMA;
    for (const [from, to] of earlier) {
      const next = earlierLog.replace(from, to);
      if (next === earlierLog) throw new Error(`the schema changed: ${from} is not in it`);
      earlierLog = next;
    }
    earlierLog += '\nCREATE INDEX IF NOT EXISTS es_events_visibility ON es_events (transaction_id, global_position);';
    await sql.exec(earlierLog);
    const [column] = await sql.query<{ t: string }>(
      `SELECT data_type AS t FROM information_schema.columns WHERE table_name = 'es_events' AND column_name = 'data'`,
    );
    if (column?.t !== 'jsonb') throw new Error(`expected a jsonb column, found ${column?.t}`);
    return storeOwning(sql);
  },
});

eventStoreConformance('pglite (embedded)', {
  givesPreviousHash: true,
  open: async () => storeOwning(await PgliteSql.open()),
});

describe('textArrayLiteral (the append batch and the outbox write their own array parameters)', () => {
  const tricky = ['plain', '', 'NULL', 'null', 'with "quotes"', 'back\\slash', '\\"both\\"', 'a,b', '{braces}', ' spaced ', 'naïve ✓', 'new\nline'];

  it('reads back as the same texts on a server and on PGlite', async () => {
    const server = new PgSql(await (await sharedCluster()).freshDatabase());
    const embedded = await PgliteSql.open();
    try {
      for (const sql of [server, embedded]) {
        const [row] = await sql.query<{ a: string[]; n: number }>('SELECT $1::text[] AS a, cardinality($1::text[]) AS n', [textArrayLiteral(tricky)]);
        expect(row?.n).to.equal(tricky.length);
        expect(row?.a).to.deep.equal(tricky);
        const [empty] = await sql.query<{ n: number }>('SELECT cardinality($1::text[]) AS n', [textArrayLiteral([])]);
        expect(empty?.n).to.equal(0);
      }
    } finally {
      await server.close();
      await embedded.close();
    }
  });
});

describe('Sql transactions with an asynchronous commit (read models: the log can make them again)', () => {
  const opened: PgSql[] = [];
  after(async () => {
    for (const sql of opened) await sql.close();
  });

  for (const [name, open] of [
    [
      'postgres server',
      async (): Promise<Sql> => {
        const url = await (await sharedCluster()).freshDatabase();
        // The test cluster runs with synchronous_commit off: on for this database, so that off shows.
        const setUp = new PgSql(url);
        await setUp.query(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$`);
        await setUp.close();
        const sql = new PgSql(url);
        opened.push(sql);
        return sql;
      },
    ],
    ['pglite (embedded)', async (): Promise<Sql> => PgliteSql.open()],
  ] as const) {
    it(`${name}: sets synchronous_commit off for that transaction only, and commits what it wrote`, async () => {
      const sql = await open();
      try {
        await sql.exec('CREATE TABLE kept (n int)');
        const inside = await sql.transaction(
          async (tx) => {
            await tx.query('INSERT INTO kept VALUES (1)');
            return (await tx.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`))[0]?.s;
          },
          { asynchronousCommit: true },
        );
        const plain = await sql.transaction(async (tx) => (await tx.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`))[0]?.s);
        const after = (await sql.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`))[0]?.s;
        expect([inside, plain, after]).to.deep.equal(['off', 'on', 'on']);
        expect(await sql.query('SELECT n FROM kept')).to.deep.equal([{ n: 1 }]);
      } finally {
        if (sql.kind === 'pglite') await sql.close();
      }
    });
  }
});

describe('PgSql prepared statements (hot statements planned once per connection)', () => {
  it('prepares a named statement inside a transaction as outside one, and answers each call with its own values', async () => {
    const sql = new PgSql(await (await sharedCluster()).freshDatabase(), { max: 1 });
    try {
      const text = 'SELECT $1::int + 1 AS n';
      const { answers, prepared } = await sql.transaction(async (tx) => {
        const first = await tx.query<{ n: number }>(text, [1], 'test_plus_one');
        const second = await tx.query<{ n: number }>(text, [41], 'test_plus_one');
        // Prepared by the transaction's own statements, by name.
        const prepared = await tx.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements');
        return { answers: [first[0]?.n, second[0]?.n], prepared };
      });
      expect(prepared).to.deep.equal([{ name: 'test_plus_one', statement: text }]);
      // One connection: outside a transaction the same name goes on with the statement prepared there.
      const outside = await sql.query<{ n: number }>(text, [9], 'test_plus_one');
      expect([...answers, outside[0]?.n]).to.deep.equal([2, 42, 10]);
    } finally {
      await sql.close();
    }
  });
});

describe('PgSql pool (connections kept warm under traffic that comes and goes)', () => {
  it("keeps the connections a burst opened for LIMITS.postgres.idleConnectionMs, not pg-pool's default 10 s", async () => {
    const sql = await serverSql();
    try {
      const pids = await Promise.all([1, 2, 3].map(async () => (await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)'))[0]?.pid));
      expect(new Set(pids).size).to.equal(3);
      expect(sql.pool.idleCount).to.equal(3);
      const options = (sql.pool as unknown as { options: { idleTimeoutMillis: number } }).options;
      expect(options.idleTimeoutMillis).to.equal(LIMITS.postgres.idleConnectionMs);
      expect(options.idleTimeoutMillis).to.be.at.least(60_000);
      // The same backends answer the next burst: nothing was closed and forked again.
      const again = await Promise.all([1, 2, 3].map(async () => (await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)'))[0]?.pid));
      expect(new Set(again)).to.deep.equal(new Set(pids));
    } finally {
      await sql.close();
    }
  });
});
