/**
 * A persistent map from strings: a change makes a new map sharing all but one of its 64 buckets (by a
 * hash of the key) with the map before, which it never alters. Folded states that keep many entries
 * (an account's holds, a card's spends) change one entry per event: copying them all each time made
 * an event's cost grow with the state; here it grows with a 64th of it. Printed as JSON, it is the
 * record of its entries.
 */
export interface BucketMap<V> {
  readonly buckets: ReadonlyArray<Readonly<Record<string, V>>>;
  readonly size: number;
  readonly toJSON: (this: BucketMap<V>) => Record<string, V>;
}

const BUCKETS = 64;

function bucketOf(key: string): number {
  let hash = 0;
  for (let i = 0; i < key.length; i++) hash = (hash * 31 + key.charCodeAt(i)) | 0;
  return (hash >>> 0) % BUCKETS;
}

function recordOf<V>(this: BucketMap<V>): Record<string, V> {
  return Object.fromEntries(entriesOf(this));
}

const EMPTY: BucketMap<unknown> = { buckets: Array.from({ length: BUCKETS }, () => ({})), size: 0, toJSON: recordOf };

/** The empty map (one, shared: no change alters it). */
export const emptyBucketMap = <V>(): BucketMap<V> => EMPTY as BucketMap<V>;

/** The value under `key`, if any (never one an object inherits, such as `constructor`). */
export function getIn<V>(map: BucketMap<V>, key: string): V | undefined {
  const bucket = map.buckets[bucketOf(key)] as Record<string, V>;
  return Object.hasOwn(bucket, key) ? bucket[key] : undefined;
}

export const hasIn = <V>(map: BucketMap<V>, key: string): boolean => Object.hasOwn(map.buckets[bucketOf(key)] as object, key);

/** The map with `value` under `key` (`undefined`: without `key`). */
export function setIn<V>(map: BucketMap<V>, key: string, value: V | undefined): BucketMap<V> {
  const b = bucketOf(key);
  const had = Object.hasOwn(map.buckets[b] as object, key);
  if (value === undefined && !had) return map;
  const { [key]: _old, ...rest } = map.buckets[b] as Record<string, V>;
  const buckets = map.buckets.slice();
  buckets[b] = value === undefined ? rest : { ...rest, [key]: value };
  return { ...map, buckets, size: map.size + (value === undefined ? -1 : had ? 0 : 1) };
}

/** Every entry, bucket by bucket (not in the order they were set). */
export function entriesOf<V>(map: BucketMap<V>): Array<[string, V]> {
  return map.buckets.flatMap((bucket) => Object.entries(bucket));
}

/** A map of a record's entries. */
export function bucketMapOf<V>(record: Readonly<Record<string, V>>): BucketMap<V> {
  const buckets: Array<Record<string, V>> = Array.from({ length: BUCKETS }, () => ({}));
  const entries = Object.entries(record);
  for (const [key, value] of entries) (buckets[bucketOf(key)] as Record<string, V>)[key] = value;
  return { buckets, size: entries.length, toJSON: recordOf };
}
