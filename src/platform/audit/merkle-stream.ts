import { jcs } from './canonical-json';
import { leafHash, nodeHash, sha256, splitPoint } from './merkle';
import { compareUtf8 } from './order';

/** A stream's head: its last event's revision and chain hash. */
export interface Head {
  stream: string;
  revision: number;
  hash: string;
}

/** A leaf's input: the RFC 8785 canonical JSON of `{stream, revision, hash}`. */
export const leafInput = (head: Head): string => jcs({ stream: head.stream, revision: head.revision, hash: head.hash });

export const headLeaf = (head: Head): Buffer => leafHash(leafInput(head));

/**
 * RFC 6962's root of leaves given one at a time, left to right, in O(log n) memory: it keeps the
 * perfect subtrees of the binary decomposition of the count so far (a "mountain range"), merging two
 * of one size as the second completes. The root is their fold from the right, which is the
 * recursive definition's MTH (merkle.ts) for any count. Nothing here holds a leaf once it is folded.
 */
export class MerkleStream {
  private readonly peaks: { size: number; hash: Buffer }[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(leaf: Buffer): void {
    let node = { size: 1, hash: leaf };
    for (let top = this.peaks.at(-1); top && top.size === node.size; top = this.peaks.at(-1)) {
      this.peaks.pop();
      node = { size: node.size * 2, hash: nodeHash(top.hash, node.hash) };
    }
    this.peaks.push(node);
    this.count++;
  }

  /** The perfect subtrees so far, leftmost first, each with its first leaf's index. */
  peaksSoFar(): { start: number; hash: Buffer }[] {
    let start = 0;
    return this.peaks.map((p) => {
      const peak = { start, hash: p.hash };
      start += p.size;
      return peak;
    });
  }

  root(): Buffer {
    if (this.peaks.length === 0) return sha256(Buffer.alloc(0));
    let r = (this.peaks.at(-1) as { hash: Buffer }).hash;
    for (let i = this.peaks.length - 2; i >= 0; i--) r = nodeHash((this.peaks[i] as { hash: Buffer }).hash, r);
    return r;
  }
}

/**
 * The siblings on PATH(m, D[n]) as [start, start + size) ranges of leaves, nearest first: RFC 6962's
 * recursion (merkle.ts, inclusionPath) without the hashes. Those left of m are aligned perfect
 * subtrees (the binary decomposition of m); those right of it may be of any size.
 */
export function siblingRanges(m: number, n: number): { start: number; size: number }[] {
  const ranges: { start: number; size: number }[] = [];
  let start = 0;
  let size = n;
  while (size > 1) {
    const k = splitPoint(size);
    if (m - start < k) {
      ranges.push({ start: start + k, size: size - k });
      size = k;
    } else {
      ranges.push({ start, size: k });
      start += k;
      size -= k;
    }
  }
  return ranges.reverse();
}

/**
 * An inclusion proof (RFC 9162 PATH(m, D[n])) and the root, from the leaves given left to right
 * once, in O(log n) memory. The tree's size is known before (a checkpoint says it); the leaf's index
 * is learnt when it passes. Left of it, the siblings are the mountain range at that moment (its
 * peaks are the binary decomposition of m, which is what RFC 6962's left siblings are); right of it,
 * each sibling's range is folded by a MerkleStream of its own as its leaves pass.
 */
export class ProofStream {
  private readonly all = new MerkleStream();
  private index = -1;
  /** The path's siblings, nearest first; a left one has its hash once the target passes, a right one a stream. */
  private siblings: { start: number; size: number; hash?: Buffer; stream?: MerkleStream }[] = [];
  private nextRight = 0;
  private rights: { start: number; size: number; stream?: MerkleStream }[] = [];

  constructor(
    private readonly treeSize: number,
    private readonly isTarget: (head: Head) => boolean,
  ) {}

  /** `leaf`: the head's leaf hash when the caller has it already. */
  push(head: Head, leaf = headLeaf(head)): void {
    const at = this.all.size;
    if (this.index < 0 && this.isTarget(head)) this.found(at);
    else if (this.index >= 0) this.pushRight(at, leaf);
    this.all.push(leaf);
  }

  private found(at: number): void {
    this.index = at;
    this.siblings = siblingRanges(at, this.treeSize);
    const byStart = new Map(this.all.peaksSoFar().map((p) => [p.start, p.hash]));
    for (const s of this.siblings) {
      if (s.start < at) s.hash = byStart.get(s.start);
      else s.stream = new MerkleStream();
    }
    this.rights = this.siblings.filter((s) => s.start > at).sort((a, b) => a.start - b.start);
  }

  /** Right of the target the siblings come in leaf order, each a run of leaves. */
  private pushRight(at: number, leaf: Buffer): void {
    let range = this.rights[this.nextRight];
    while (range && at >= range.start + range.size) range = this.rights[++this.nextRight];
    if (range && at >= range.start) range.stream?.push(leaf);
  }

  /** The leaf's index and path (nearest sibling first), the root and the count; no path when the target never passed or the count is not the size. */
  finish(): { index: number; path: Buffer[] | undefined; root: Buffer; size: number } {
    const size = this.all.size;
    const root = this.all.root();
    if (this.index < 0 || size !== this.treeSize) return { index: -1, path: undefined, root, size };
    const path = this.siblings.map((s) => (s.stream ? s.stream.root() : (s.hash as Buffer)));
    return { index: this.index, path, root, size };
  }
}

/** The root (lowercase hex) and size of the tree over heads held in memory, in any order (the offline verifier's). */
export function rootOfHeads(heads: Iterable<Head>): { root: string; size: number } {
  const sorted = [...heads].sort((a, b) => compareUtf8(a.stream, b.stream));
  const tree = new MerkleStream();
  for (const head of sorted) tree.push(headLeaf(head));
  return { root: tree.root().toString('hex'), size: tree.size };
}
