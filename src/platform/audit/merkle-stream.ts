import { jcs } from './canonical-json';
import { inclusionPath, leafHash, merkleRoot, nodeHash, sha256 } from './merkle';
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

/** The root (lowercase hex) and size of the tree over heads held in memory, in any order (the offline verifier's). */
export function rootOfHeads(heads: Iterable<Head>): { root: string; size: number } {
  const sorted = [...heads].sort((a, b) => compareUtf8(a.stream, b.stream));
  const tree = new MerkleStream();
  for (const head of sorted) tree.push(headLeaf(head));
  return { root: tree.root().toString('hex'), size: tree.size };
}

/** Leaves to a block of a BlockedTree: 1,024 (a proof reads one block of leaves; the tree keeps 1 hash in 1,024). */
export const BLOCK_LEAVES = 1_024;

/** A BlockedTree as plain data (its runs' hashes in hex). */
export interface TreeParts {
  blocks: { first: string; hash: string }[];
  size: number;
  blockLeaves: number;
}

/**
 * A tree kept as the hashes of its runs of BLOCK_LEAVES leaves in order (the last one maybe
 * shorter), each with its first stream: O(n / 1,024) memory. Every run starts at a multiple of
 * BLOCK_LEAVES, so in RFC 6962's shape each is a subtree (a perfect one, or the last on the right
 * edge), and the tree over the leaves is RFC 6962's tree over the runs' hashes. A proof is then the
 * path inside the leaf's run (its leaves read again) followed by the run's path among the runs.
 */
export class BlockedTree {
  private constructor(
    readonly blocks: { first: string; hash: Buffer }[],
    readonly size: number,
    readonly blockLeaves: number,
  ) {}

  /** A tree from its runs' hashes, as another thread folded it (`blocks` with the hashes in hex). */
  static of(parts: TreeParts): BlockedTree {
    const blocks = parts.blocks.map((b) => ({ first: b.first, hash: Buffer.from(b.hash, 'hex') }));
    return new BlockedTree(blocks, parts.size, parts.blockLeaves);
  }

  /** What `of` takes back: plain data a thread can post. */
  parts(): TreeParts {
    return { blocks: this.blocks.map((b) => ({ first: b.first, hash: b.hash.toString('hex') })), size: this.size, blockLeaves: this.blockLeaves };
  }

  /** Folds leaves given in order, a page at a time; `blockLeaves` a power of two. */
  static async fold(pages: AsyncIterable<{ stream: string; leaf: Buffer }[]>, blockLeaves = BLOCK_LEAVES): Promise<BlockedTree> {
    const blocks: { first: string; hash: Buffer }[] = [];
    let block = new MerkleStream();
    let first = '';
    let size = 0;
    for await (const page of pages) {
      for (const { stream, leaf } of page) {
        if (block.size === 0) first = stream;
        block.push(leaf);
        size++;
        if (block.size === blockLeaves) {
          blocks.push({ first, hash: block.root() });
          block = new MerkleStream();
        }
      }
    }
    if (block.size > 0) blocks.push({ first, hash: block.root() });
    return new BlockedTree(blocks, size, blockLeaves);
  }

  root(): Buffer {
    return merkleRoot(this.blocks.map((b) => b.hash));
  }

  /** The run a stream would be in: the last whose first stream sorts at or before it (-1: before all). */
  blockOf(stream: string): number {
    let lo = 0;
    let hi = this.blocks.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (compareUtf8((this.blocks[mid] as { first: string }).first, stream) <= 0) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** How many leaves run `block` has. */
  blockSize(block: number): number {
    return block < this.blocks.length - 1 ? this.blockLeaves : this.size - block * this.blockLeaves;
  }

  /**
   * The leaf's index and path (nearest sibling first), given its run's leaves as read again; undefined
   * when they do not give the run's hash (then they are not the leaves this tree was folded from).
   */
  proof(block: number, leaves: Buffer[], offset: number): { index: number; path: Buffer[] } | undefined {
    const hash = this.blocks[block]?.hash;
    if (!hash || leaves.length !== this.blockSize(block) || !merkleRoot(leaves).equals(hash)) return undefined;
    const path = [
      ...inclusionPath(leaves, offset),
      ...inclusionPath(
        this.blocks.map((b) => b.hash),
        block,
      ),
    ];
    return { index: block * this.blockLeaves + offset, path };
  }
}
