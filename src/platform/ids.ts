import * as crypto from 'node:crypto';

/** One-shot hashing (Node >= 20.12): no Hash object per id. */
const oneShot = (crypto as { hash?: (algorithm: string, data: Buffer, outputEncoding: 'buffer') => Buffer }).hash;

/** RFC 4122 version 5 (name-based, SHA-1) UUID: the same name always gives the same id. */
export function uuidV5(name: string, namespace = TALLY_NAMESPACE): string {
  const ns = namespace === TALLY_NAMESPACE ? TALLY_NAMESPACE_BYTES : Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const data = Buffer.concat([ns, Buffer.from(name, 'utf8')]);
  const hash = oneShot ? oneShot('sha1', data, 'buffer') : crypto.createHash('sha1').update(data).digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x50;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export const TALLY_NAMESPACE = '6f1c3e52-8a4b-4d2e-9b7a-5c0d1e2f3a4b';
const TALLY_NAMESPACE_BYTES = Buffer.from(TALLY_NAMESPACE.replace(/-/g, ''), 'hex');

/** Event ids derived from the command: a retried command appends the same ids, which the store ignores. */
export function eventIdFor(commandId: string, stream: string, index: number): string {
  return uuidV5(`${commandId}|${stream}|${index}`);
}

/** The first 15 characters of a version 7 UUID, for the millisecond they were made for. */
let v7Prefix = { ms: -1, text: '' };

/**
 * Random bytes drawn in blocks from the system's generator (as node's randomUUID does), read as hex
 * text 10 bytes at a time: one string per id instead of node's one per byte pair (an id is made per
 * event and per transfer, and the garbage collector's work grows with what is allocated).
 */
const RANDOM_BLOCK = 4_096;
const random = Buffer.allocUnsafe(RANDOM_BLOCK);
let randomAt = RANDOM_BLOCK;

/**
 * RFC 9562 version 7 UUID: 48 bits of Unix milliseconds, then 74 random bits around the version and
 * variant. Ids made in the same millisecond sort near each other, so an index over them grows at its
 * right edge instead of at random pages (fewer pages touched and split per insert).
 */
export function uuidV7(at = Date.now()): string {
  const now = Math.min(Math.max(0, Math.trunc(at)), 2 ** 48 - 1);
  if (now !== v7Prefix.ms) {
    const time = now.toString(16).padStart(12, '0');
    v7Prefix = { ms: now, text: `${time.slice(0, 8)}-${time.slice(8, 12)}-7` };
  }
  if (randomAt + 10 > RANDOM_BLOCK) {
    crypto.randomFillSync(random);
    randomAt = 0;
  }
  // 20 hex digits: 3 after the version, the variant's 2 bits (from the 10th byte's low bits) and 3, then 12.
  const hex = random.toString('hex', randomAt, randomAt + 10);
  const variant = VARIANT[(random[randomAt + 9] as number) & 3] as string;
  randomAt += 10;
  return `${v7Prefix.text}${hex.slice(0, 3)}-${variant}${hex.slice(3, 6)}-${hex.slice(6, 18)}`;
}

const VARIANT = '89ab';
