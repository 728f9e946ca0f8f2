import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import { newKek } from '../../src/platform/keys';
import { DataKeys, ErasedKeyError } from '../../src/platform/sealing/data-keys';
import { Keks } from '../../src/platform/sealing/keks';
import { keyOwner, Sealer } from '../../src/platform/sealing/sealer';
import { rejection, testSealer } from '../support/sealing';

describe('sealing under data keys wrapped by key-encryption keys', () => {
  let sql: PgliteSql;
  const first = newKek(new Date('2026-01-01T00:00:00Z'));

  before(async () => {
    sql = await PgliteSql.open();
  });

  after(async () => {
    await sql.close();
  });

  const keyIdOf = (sealed: string) => sealed.split('.')[1] as string;
  const row = async (owner: string) =>
    (
      await sql.query<{ id: string; kek_id: string | null; wrapped: string | null; destroyed_at: string | null }>(
        'SELECT id, kek_id, wrapped, destroyed_at::text FROM data_keys WHERE owner = $1',
        [owner],
      )
    )[0];

  it('gives each owner one data key, made once even when two nodes ask at the same moment, and names it in what it seals', async () => {
    const owner = keyOwner.user(randomUUID());
    const [a, b] = [await testSealer(sql, { keks: [first] }), await testSealer(sql, { keks: [first] })];
    const [fromA, fromB] = await Promise.all([a.keys.forOwner(owner), b.keys.forOwner(owner)]);
    expect(fromA.id).to.equal(fromB.id);
    expect(fromA.key.equals(fromB.key)).to.equal(true);
    const stored = await row(owner);
    expect(stored?.id).to.equal(fromA.id);
    expect(stored?.kek_id).to.equal(first.kid);
    expect(stored?.wrapped)
      .to.match(new RegExp(`^v2\\.${first.kid}\\.`))
      .and.not.to.contain(fromA.key.toString('base64url'));
    const sealed = await a.of('personal-data').seal(owner, 'ada@example.com', 'email');
    expect(keyIdOf(sealed)).to.equal(fromA.id);
    expect(await b.of('personal-data').open(sealed, 'email')).to.deep.equal({ erased: false, value: 'ada@example.com' });
  });

  it('binds a value to its kind: sealed as one kind, it does not open as another', async () => {
    const sealer = await testSealer(sql, { keks: [first] });
    const owner = keyOwner.partner(randomUUID());
    const sealed = await sealer.of('webhook-secrets').seal(owner, 'whsec_x', 'partner-webhook-secret:p:s');
    await rejection(sealer.of('card-vault').open(sealed, 'partner-webhook-secret:p:s'), 'opened as another kind');
  });

  it('answers "erased" for a value whose data key is destroyed, refuses to seal for its owner, and never makes it another key', async () => {
    const sealer = await testSealer(sql, { keks: [first] });
    const owner = keyOwner.user(randomUUID());
    const sealed = await sealer.of('personal-data').seal(owner, '+573001234567', 'phone');
    expect(await sealer.keys.destroy(owner)).to.equal(true);
    expect(await sealer.keys.destroy(owner), 'destroyed once').to.equal(false);
    expect(await sealer.of('personal-data').open(sealed, 'phone')).to.deep.equal({ erased: true });
    expect(await row(owner))
      .to.include({ kek_id: null, wrapped: null })
      .and.to.have.property('destroyed_at')
      .that.is.a('string');
    expect(await rejection(sealer.of('personal-data').seal(owner, 'x', 'phone'))).to.be.instanceOf(ErasedKeyError);
    const neverKeyed = keyOwner.user(randomUUID());
    await sealer.keys.destroy(neverKeyed);
    expect(await rejection(sealer.keys.forOwner(neverKeyed)), 'an owner erased before its first key gets none').to.be.instanceOf(ErasedKeyError);
  });

  it('keeps a key in memory until forget(owner) drops it (another node destroyed it), and reads it again past its time to live', async () => {
    const owner = keyOwner.user(randomUUID());
    const here = await testSealer(sql, { keks: [first] });
    const shortLived = await testSealer(sql, { keks: [first], dataKeys: { maxEntries: 100, ttlMs: 50 } });
    const elsewhere = await testSealer(sql, { keks: [first] });
    const sealed = await here.of('personal-data').seal(owner, 'Ada', 'firstName');
    expect(await shortLived.of('personal-data').open(sealed, 'firstName')).to.deep.equal({ erased: false, value: 'Ada' });
    await elsewhere.keys.destroy(owner);
    expect(await here.of('personal-data').open(sealed, 'firstName'), 'still held in memory').to.deep.equal({ erased: false, value: 'Ada' });
    here.keys.forget(owner);
    expect(await here.of('personal-data').open(sealed, 'firstName'), 'after forget').to.deep.equal({ erased: true });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await shortLived.of('personal-data').open(sealed, 'firstName'), 'past the time to live').to.deep.equal({ erased: true });
  });

  it('holds at most maxEntries keys in memory, and still opens what a key it let go of sealed', async () => {
    const sealer = await testSealer(sql, { keks: [first], dataKeys: { maxEntries: 2, ttlMs: 60_000 } });
    const owners = [1, 2, 3].map(() => keyOwner.user(randomUUID()));
    const sealed = [];
    for (const owner of owners) sealed.push(await sealer.of('personal-data').seal(owner, owner, 'id'));
    const held = (sealer.keys as unknown as { entries: Map<string, unknown> }).entries;
    expect(held.size).to.equal(2);
    expect(held.has(keyIdOf(sealed[0] as string)), 'the least recently used went first').to.equal(false);
    expect(await sealer.of('personal-data').open(sealed[0] as string, 'id')).to.deep.equal({ erased: false, value: owners[0] });
  });

  it('re-wraps every data key under the newest KEK in batches, idempotently, so the older KEK can be removed and every value still opens', async () => {
    const isolated = await PgliteSql.open();
    try {
      const sealer = await testSealer(isolated, { keks: [first] });
      const owners = Array.from({ length: 5 }, () => keyOwner.user(randomUUID()));
      const sealed = await Promise.all(owners.map((o) => sealer.of('personal-data').seal(o, `secret of ${o}`, 'x')));
      const erased = keyOwner.user(randomUUID());
      await sealer.keys.destroy(erased);
      const second = newKek();
      const rotated = new DataKeys(isolated, new Keks([first, second]));
      expect(await rotated.kekIdsNamed([first.kid, second.kid])).to.deep.equal([first.kid]);
      expect(await rotated.rewrap(2), 'five keys, two per transaction').to.equal(5);
      expect(await rotated.rewrap(2), 'a second run finds nothing').to.equal(0);
      expect(await rotated.kekIdsNamed([first.kid, second.kid])).to.deep.equal([second.kid]);
      const newKeyOnly = new Sealer(new DataKeys(isolated, new Keks([second])), 'test-pepper');
      for (const [i, value] of sealed.entries())
        expect(await newKeyOnly.of('personal-data').open(value, 'x')).to.deep.equal({ erased: false, value: `secret of ${owners[i]}` });
      const fresh = keyOwner.user(randomUUID());
      await newKeyOnly.keys.forOwner(fresh);
      expect((await isolated.query<{ kek_id: string }>('SELECT kek_id FROM data_keys WHERE owner = $1', [fresh]))[0]?.kek_id).to.equal(second.kid);
      const lost = new Sealer(new DataKeys(isolated, new Keks([newKek()])), 'test-pepper');
      expect((await rejection(lost.of('personal-data').open(sealed[0] as string, 'x'))).message).to.contain(`key-encryption key ${second.kid}`);
    } finally {
      await isolated.close();
    }
  });

  it('reads its keys again when a data key names a KEK it does not have (keys.json gained one), at most every few seconds', async () => {
    const second = newKek();
    const writer = await testSealer(sql, { keks: [first, second] });
    const sealed = await writer.of('personal-data').seal(keyOwner.user(randomUUID()), 'v', 'x');
    let reloads = 0;
    const reread = () => {
      reloads++;
      return [first, second];
    };
    const reader = new Sealer(new DataKeys(sql, new Keks([first], reread)), 'p');
    expect(await reader.of('personal-data').open(sealed, 'x')).to.deep.equal({ erased: false, value: 'v' });
    expect(reloads).to.equal(1);
  });

  it('refuses key-encryption keys it could not name in a sealed value, and an empty set of them', () => {
    expect(() => new Keks([{ ...first, kid: 'with.dot' }])).to.throw('key-encryption key id "with.dot"');
    expect(() => new Keks([])).to.throw('no key-encryption key');
  });
});
