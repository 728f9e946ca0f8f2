import * as crypto from 'node:crypto';

/**
 * RFC 6962's Merkle tree (RFC 9162 section 2.1), from scratch: leaf and node hashes, the root of a
 * list of leaves, an inclusion proof, and its verification. The streamed tree the checkpointer and
 * the proofs fold (merkle-stream.ts) must agree with these; tests hold it to that.
 */

/**
 * One-shot SHA-256 (Node >= 20.12): no Hash object per call. Its digest comes out as a latin1
 * string (32 characters, one per byte), which is about three times faster than asking for a Buffer,
 * and is written into the tree's buffers as it is.
 */
const oneShot = (crypto as unknown as { hash?: (algorithm: string, data: Buffer | string, encoding: 'latin1') => string }).hash;
const digest = (data: Buffer | string): string => (oneShot ? oneShot('sha256', data, 'latin1') : crypto.createHash('sha256').update(data).digest('binary'));

export const sha256 = (data: Buffer): Buffer => Buffer.from(digest(data), 'latin1');

/** SHA-256(0x00 || input), the input's text as UTF-8. */
export function leafHash(input: string): Buffer {
  return Buffer.from(digest(`\u0000${input}`), 'latin1');
}

/** leafHash written at `offset` of `target`. */
export function leafHashInto(input: string, target: Buffer, offset: number): void {
  target.write(digest(`\u0000${input}`), offset, 32, 'latin1');
}

const scratch = Buffer.alloc(65);
scratch[0] = 1;

/** SHA-256(0x01 || left || right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  scratch.set(left, 1);
  scratch.set(right, 33);
  return Buffer.from(digest(scratch), 'latin1');
}

/** nodeHash of the 32 bytes at `left` and at `right` of `source`, written at `offset` of `target`. */
export function nodeHashInto(source: Buffer, left: number, right: number, target: Buffer, offset: number): void {
  source.copy(scratch, 1, left, left + 32);
  source.copy(scratch, 33, right, right + 32);
  target.write(digest(scratch), offset, 32, 'latin1');
}

/** The largest power of two smaller than n (n > 1): where RFC 6962 splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) by the recursive definition. The empty tree's root is SHA-256 of nothing. */
export function merkleRoot(leaves: Buffer[], start = 0, end = leaves.length): Buffer {
  const n = end - start;
  if (n === 0) return sha256(Buffer.alloc(0));
  if (n === 1) return leaves[start] as Buffer;
  const k = splitPoint(n);
  return nodeHash(merkleRoot(leaves, start, start + k), merkleRoot(leaves, start + k, end));
}

/** PATH(m, D[n]): the audit path of leaf m, nearest sibling first. */
export function inclusionPath(leaves: Buffer[], m: number, start = 0, end = leaves.length): Buffer[] {
  const n = end - start;
  if (m < 0 || m >= n) throw new RangeError(`leaf ${m} is not in a tree of ${n}`);
  if (n === 1) return [];
  const k = splitPoint(n);
  return m < k
    ? [...inclusionPath(leaves, m, start, start + k), merkleRoot(leaves, start + k, end)]
    : [...inclusionPath(leaves, m - k, start + k, end), merkleRoot(leaves, start, start + k)];
}

/** RFC 9162 section 2.1.3.2: does `path` lead from the leaf at `index` of a tree of `treeSize` to `root`? */
export function verifyInclusion(leaf: Buffer, index: number, treeSize: number, path: Buffer[], root: Buffer): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(treeSize) || index < 0 || index >= treeSize) return false;
  // Indices stay below 2^53: plain division, not 32-bit shifts.
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}
