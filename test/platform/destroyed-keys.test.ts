import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pino from 'pino';
import { PgSql } from '../../src/eventstore/sql';
import { newKek } from '../../src/platform/keys';
import { DataKeys, EVERY_OWNER } from '../../src/platform/sealing/data-keys';
import { DestroyedKeysListener } from '../../src/platform/sealing/destroyed-keys';
import { Keks } from '../../src/platform/sealing/keks';
import { keyOwner, Sealer } from '../../src/platform/sealing/sealer';
import { sharedCluster } from '../support/postgres';
import { within } from '../support/wait';

/** Ten minutes: within a test, only the signal can make a node let go of a key it read. */
const LONG_TTL = { maxEntries: 1_000, ttlMs: 600_000 };

/**
 * The node-wide forget signal on a real Postgres: a key destroyed through one DataKeys is forgotten
 * by another, which listens, in milliseconds though its time to live is ten minutes; a listener
 * whose connection is cut listens again and forgets everything it held; stopped, it leaves no
 * connection behind.
 */
describe('destroyed data keys heard by every node (LISTEN/NOTIFY)', () => {
  let url: string;
  let sql: PgSql;
  const kek = newKek();
  const silent = pino({ level: 'silent' });
  const listeners = (db: PgSql) =>
    db.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = 'tally-data-keys' AND datname = current_database()`);

  before(async () => {
    url = await (await sharedCluster()).freshDatabase();
    sql = new PgSql(url, { max: 4 });
    await new DataKeys(sql, new Keks([kek])).prepare();
  });
  after(() => sql.close());

  /** A node's sealer (its own pool) and its listener, started; `forgotten` records what it was told. */
  async function node() {
    const own = new PgSql(url, { max: 4 });
    const sealer = new Sealer(new DataKeys(own, new Keks([kek]), LONG_TTL), 'test-pepper');
    const forgotten: string[] = [];
    sealer.keys.onForget((owner) => forgotten.push(owner));
    const listener = new DestroyedKeysListener(url, sealer.keys, silent, { retryMinMs: 20, retryMaxMs: 200 });
    await listener.start();
    forgotten.length = 0;
    return {
      sealer,
      forgotten,
      listener,
      close: async () => {
        await listener.stop();
        await own.close();
      },
    };
  }

  it('forgets a key destroyed on another node at once, and then opens its values as erased', async () => {
    const [a, b] = [await node(), await node()];
    try {
      const owner = keyOwner.user(randomUUID());
      const kept = keyOwner.user(randomUUID());
      const sealed = await a.sealer.of('personal-data').seal(owner, 'Ada', 'firstName');
      await b.sealer.keys.forOwner(kept);
      expect(await b.sealer.of('personal-data').open(sealed, 'firstName')).to.deep.equal({ erased: false, value: 'Ada' });
      expect(b.sealer.keys.holds(owner)).to.equal(true);

      expect(await a.sealer.keys.destroy(owner)).to.equal(true);
      const tookMs = await within(2_000, 'the other node forgets the key', () => !b.sealer.keys.holds(owner));
      expect(tookMs, 'milliseconds, not a time to live').to.be.below(2_000);
      expect(b.forgotten).to.deep.equal([owner]);
      expect(b.sealer.keys.holds(kept), 'the other keys stay').to.equal(true);
      expect(await b.sealer.of('personal-data').open(sealed, 'firstName')).to.deep.equal({ erased: true });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('listens again after its connection is cut, and forgets every key it held (it may have missed a notice)', async () => {
    const b = await node();
    try {
      const owners = [keyOwner.user(randomUUID()), keyOwner.partner(randomUUID())];
      for (const owner of owners) await b.sealer.keys.forOwner(owner);
      const [before] = await listeners(sql);
      expect(before, 'one listening connection').to.not.equal(undefined);

      await sql.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1', [before?.pid]);
      await within(5_000, 'it listens again', async () => {
        const now = await listeners(sql);
        return now.length === 1 && now[0]?.pid !== before?.pid;
      });
      await within(2_000, 'it forgets everything it held', () => b.forgotten.includes(EVERY_OWNER));
      for (const owner of owners) expect(b.sealer.keys.holds(owner), owner).to.equal(false);

      // And it hears the next destroy on the new connection.
      const next = keyOwner.user(randomUUID());
      await b.sealer.keys.forOwner(next);
      await new DataKeys(sql, new Keks([kek])).destroy(next);
      await within(2_000, 'the new connection hears a destroy', () => !b.sealer.keys.holds(next));
    } finally {
      await b.close();
    }
  });

  it('a read of a key that started before the notice does not keep what it read', async () => {
    const b = await node();
    try {
      const owner = keyOwner.user(randomUUID());
      await b.sealer.keys.forOwner(owner);
      b.sealer.keys.forget(owner);
      const reading = b.sealer.keys.forOwner(owner);
      b.sealer.keys.forget(owner);
      expect((await reading).key).to.have.length(32);
      expect(b.sealer.keys.holds(owner), 'read before the forget: handed out, not kept').to.equal(false);
    } finally {
      await b.close();
    }
  });

  it('leaves no connection and no timer behind once stopped, even while it waits to listen again', async () => {
    const b = await node();
    const [held] = await listeners(sql);
    await sql.query('SELECT pg_terminate_backend($1)', [held?.pid]);
    await b.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await listeners(sql)).to.deep.equal([]);
  });
});
