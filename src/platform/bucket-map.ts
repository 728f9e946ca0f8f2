/**
 * A persistent map from strings: a change makes a new map sharing all but one of its 64 buckets (by a
 * hash of the key) with the map before, which it never alters. Folded states that keep many entries
 * (an account's holds, a card's spends) change one entry per event: copying them all each time made
 * an event's cost grow with the state; here it grows with a 64th of it. Printed as JSON, it is the
 * record of its entries. A bucket is a Map, not an object: the keys are ids, each new, and an object
 * given one gets a hidden class of its own from the engine, so copying a bucket of records cost
 * 5-11 us a change against 2-3.5 us for a Map (100 to 1,300 entries; docs/performance.md, session 33).
 */
export interface BucketMap<V> {
  readonly buckets: ReadonlyArray<ReadonlyMap<string, V>>;
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

/** Every empty bucket is this one (never changed: no function here changes a bucket once made), so a walk over the buckets passes the empty ones by identity. */
const NONE: ReadonlyMap<string, never> = new Map<string, never>();

const EMPTY: BucketMap<unknown> = { buckets: Array.from({ length: BUCKETS }, () => NONE), size: 0, toJSON: recordOf };

/** The empty map (one, shared: no change alters it). */
export const emptyBucketMap = <V>(): BucketMap<V> => EMPTY as BucketMap<V>;

/** The value under `key`, if any. */
export function getIn<V>(map: BucketMap<V>, key: string): V | undefined {
  return (map.buckets[bucketOf(key)] as ReadonlyMap<string, V>).get(key);
}

/** The map with `value` under `key` (`undefined`: without `key`). */
export function setIn<V>(map: BucketMap<V>, key: string, value: V | undefined): BucketMap<V> {
  const b = bucketOf(key);
  const old = map.buckets[b] as ReadonlyMap<string, V>;
  const had = old.has(key);
  if (value === undefined && !had) return map;
  let bucket: ReadonlyMap<string, V>;
  if (value === undefined) {
    const rest = new Map(old);
    rest.delete(key);
    bucket = rest.size === 0 ? NONE : rest;
  } else bucket = new Map(old).set(key, value);
  const buckets = map.buckets.slice();
  buckets[b] = bucket;
  return { ...map, buckets, size: map.size + (value === undefined ? -1 : had ? 0 : 1) };
}

/** The buckets that hold entries (each never changed: a change makes a new one). */
export function filledBuckets<V>(map: BucketMap<V>): Array<ReadonlyMap<string, V>> {
  return map.buckets.filter((bucket) => bucket !== NONE);
}

/** Every entry, bucket by bucket (not in the order they were set). */
export function entriesOf<V>(map: BucketMap<V>): Array<[string, V]> {
  return map.buckets.flatMap((bucket) => [...bucket]);
}

/** A map of a record's entries. */
export function bucketMapOf<V>(record: Readonly<Record<string, V>>): BucketMap<V> {
  const buckets: Array<Map<string, V>> = Array.from({ length: BUCKETS }, () => new Map());
  const entries = Object.entries(record);
  for (const [key, value] of entries) (buckets[bucketOf(key)] as Map<string, V>).set(key, value);
  return { buckets: buckets.map((bucket) => (bucket.size === 0 ? NONE : bucket)), size: entries.length, toJSON: recordOf };
}
