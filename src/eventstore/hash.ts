import * as crypto from 'node:crypto';
import type { Json } from './port';

/**
 * The per-stream hash chain, defined once for every adapter:
 *   digest = sha256(canonicalJson([stream, id, type, data, metadata]))
 *   hash   = sha256(previousHash + digest)            (previousHash of revision 0 is GENESIS_HASH)
 * The digest does not depend on the revision, so a writer can compute it before it knows where the
 * event lands (the Postgres adapter chains it in SQL, inside the append). An auditor recomputes both
 * from the stored events: an edited field changes the digest, a removed or reordered event breaks
 * the chain, a renumbered one leaves a revision gap.
 */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * Keys as canonicalJson writes them (`"key":`), kept for the few names events use over and over:
 * writing a key is then a lookup, not a JSON.stringify. Bounded: past the limit keys are written
 * afresh (partners' own metadata may name anything).
 */
const writtenKeys = new Map<string, string>();
const WRITTEN_KEYS_MAX = 10_000;

function writtenKey(key: string): string {
  let text = writtenKeys.get(key);
  if (text === undefined) {
    text = `${JSON.stringify(key)}:`;
    if (writtenKeys.size < WRITTEN_KEYS_MAX) writtenKeys.set(key, text);
  }
  return text;
}

/**
 * An object's keys (a fresh array, Object.keys's) in the default sort's order: UTF-16 code units, as
 * a < b compares. The few keys of an event's object are sorted in place by insertion, where the
 * engine's sort first copies them into a work array of its own: on every append, that copy was about
 * a twentieth of what the server's main thread allocated (docs/performance.md, session 34).
 */
function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    for (; j >= 0 && (keys[j] as string) > key; j--) keys[j + 1] = keys[j] as string;
    keys[j + 1] = key;
  }
  return keys;
}

/** JSON with object keys sorted, so the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (value === undefined) return 'null';
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + canonicalJson(value[i]);
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  // Undefined members are left out.
  const keys = sortedKeys(object);
  let out = '{';
  for (const key of keys) {
    const member = object[key];
    if (member === undefined) continue;
    out += (out.length > 1 ? ',' : '') + writtenKey(key) + canonicalJson(member);
  }
  return `${out}}`;
}

/** One-shot hashing (Node >= 20.12): no Hash object per call, about half the time for an event's text. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** SHA-256 of the UTF-8 bytes of `text`, as hex. */
export function sha256Hex(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

export function eventDigest(e: { stream: string; id: string; type: string; data: Json | object; metadata: Json | object }): string {
  return eventDigestOfTexts(e.stream, e.id, e.type, canonicalJson(e.data), canonicalJson(e.metadata));
}

/**
 * The same digest from the canonical texts of data and metadata (what canonicalJson of the
 * five-member array writes), for a writer that also sends those texts to the store.
 */
export function eventDigestOfTexts(stream: string, id: string, type: string, dataText: string, metadataText: string): string {
  return sha256Hex(`[${JSON.stringify(stream)},${JSON.stringify(id.toLowerCase())},${JSON.stringify(type)},${dataText},${metadataText}]`);
}

export function chainHash(previousHash: string, digest: string): string {
  return sha256Hex(previousHash + digest);
}

export interface ChainBreak {
  stream: string;
  revision: number;
  eventId: string;
  reason: string;
}

/** Verifies one stream's events (in revision order, from revision 0). */
export function verifyChain(
  events: Array<{ stream: string; revision: number; id: string; type: string; data: object; metadata: object; hash: string }>,
): ChainBreak[] {
  const breaks: ChainBreak[] = [];
  let previous = GENESIS_HASH;
  let expectedRevision = 0;
  for (const e of events) {
    if (e.revision !== expectedRevision) {
      breaks.push({ stream: e.stream, revision: e.revision, eventId: e.id, reason: `revision ${expectedRevision} is missing` });
    }
    const hash = chainHash(previous, eventDigest(e));
    if (hash !== e.hash) {
      breaks.push({ stream: e.stream, revision: e.revision, eventId: e.id, reason: 'hash does not match the content and chain' });
    }
    previous = e.hash;
    expectedRevision = e.revision + 1;
  }
  return breaks;
}
