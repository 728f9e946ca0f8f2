import type { Sql } from '../../src/eventstore/sql';
import { type KeyEncryptionKey, newKek } from '../../src/platform/keys';
import { DataKeys, type DataKeysOptions } from '../../src/platform/sealing/data-keys';
import { Keks } from '../../src/platform/sealing/keks';
import { Sealer } from '../../src/platform/sealing/sealer';

/** A sealer on `sql` (its data_keys table made), as the composition root builds one. */
export async function testSealer(sql: Sql, options: { keks?: KeyEncryptionKey[]; pepper?: string; dataKeys?: DataKeysOptions } = {}): Promise<Sealer> {
  const keys = new DataKeys(sql, new Keks(options.keks ?? [newKek()]), options.dataKeys);
  await keys.prepare();
  return new Sealer(keys, options.pepper ?? 'test-pepper');
}

/** The error `promise` rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>, why = 'it should have been refused'): Promise<Error> {
  const outcome = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error(`${why}: it was not`);
  return outcome;
}
