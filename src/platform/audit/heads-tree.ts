import { jcs } from './canonical-json';
import { leafHashInto, nodeHash, nodeHashInto, sha256, splitPoint } from './merkle';
import { compareUtf8, sortUtf8 } from './order';

/** A stream's head: its last event's revision and chain hash. */
export interface Head {
  stream: string;
  revision: number;
  hash: string;
}

/** A leaf's input: the RFC 8785 canonical JSON of `{stream, revision, hash}`. */
export const leafInput = (head: Head): string => jcs({ stream: head.stream, revision: head.revision, hash: head.hash });

const HASH_BYTES = 32;
/** Hashes between two pauses of settle(): about 10 ms. */
const SLICE = 4_096;
/** Names copied between two pauses when new streams are merged in. */
const COPY_SLICE = 65_536;

/**
 * The RFC 6962 tree over every stream's head, sorted by stream name (UTF-8 byte order), kept up to
 * date as heads move: what a checkpoint costs follows what changed since the last one.
 *
 * It keeps the hash of every perfect, aligned subtree (2^l leaves starting at a multiple of 2^l:
 * `levels[l]`, 32 bytes each), which is every left child of RFC 6962's shape. A root is then the
 * fold of the log2(n) perfect subtrees of n's binary decomposition, and a proof is read from the
 * same cache. A moved head re-hashes its leaf and the log2(n) subtrees above it. A new stream shifts
 * every leaf after it by one, and every perfect subtree to its right holds other leaves then: those
 * are recomputed, once per commit however many streams were new (from the first new one's index to
 * the end, about n - i node hashes; leaf hashes are moved, not recomputed). Changes wait in
 * `pending` until the next root or proof asks for them.
 */
export class HeadsTree {
  private names: string[] = [];
  private readonly heads = new Map<string, Head>();
  private levels: Buffer[] = [Buffer.alloc(0)];
  private readonly added = new Set<string>();
  private readonly moved = new Set<string>();
  private settling = false;

  /** Streams in the tree, the pending new ones counted. */
  get size(): number {
    return this.heads.size;
  }

  head(stream: string): Head | undefined {
    return this.heads.get(stream);
  }

  set(head: Head): void {
    this.notSettling();
    const known = this.heads.has(head.stream);
    this.heads.set(head.stream, { stream: head.stream, revision: head.revision, hash: head.hash });
    if (!known) this.added.add(head.stream);
    else if (!this.added.has(head.stream)) this.moved.add(head.stream);
  }

  /** The root over every head, as lowercase hex. */
  rootHex(): string {
    return this.root().toString('hex');
  }

  root(): Buffer {
    this.commit();
    const n = this.names.length;
    if (n === 0) return sha256(Buffer.alloc(0));
    const parts: Buffer[] = [];
    let offset = 0;
    for (let l = this.levels.length - 1; l >= 0; l--) {
      const size = 2 ** l;
      if (Math.floor(n / size) % 2 === 1) {
        parts.push(this.perfect(l, offset / size));
        offset += size;
      }
    }
    let r = parts[parts.length - 1] as Buffer;
    for (let i = parts.length - 2; i >= 0; i--) r = nodeHash(parts[i] as Buffer, r);
    return Buffer.from(r);
  }

  /** The stream's leaf index and audit path (nearest sibling first), or undefined when it has no head. */
  proof(stream: string): { head: Head; index: number; path: Buffer[] } | undefined {
    this.commit();
    const head = this.heads.get(stream);
    if (!head) return undefined;
    const index = this.indexOf(stream);
    return { head, index, path: this.pathOf(index, 0, this.names.length) };
  }

  /** Every head in leaf order. */
  *inOrder(): Iterable<Head> {
    this.commit();
    for (const name of this.names) yield this.heads.get(name) as Head;
  }

  private pathOf(m: number, start: number, n: number): Buffer[] {
    if (n === 1) return [];
    const k = splitPoint(n);
    return m < k ? [...this.pathOf(m, start, k), this.subtree(start + k, n - k)] : [...this.pathOf(m - k, start + k, n - k), this.subtree(start, k)];
  }

  /** The hash of leaves [start, start + n) of RFC 6962's shape: its left parts are cached perfect subtrees. */
  private subtree(start: number, n: number): Buffer {
    if ((n & (n - 1)) === 0 && start % n === 0) return this.perfect(Math.log2(n), start / n);
    const k = splitPoint(n);
    return nodeHash(this.subtree(start, k), this.subtree(start + k, n - k));
  }

  private perfect(level: number, j: number): Buffer {
    return (this.levels[level] as Buffer).subarray(j * HASH_BYTES, (j + 1) * HASH_BYTES);
  }

  private indexOf(stream: string): number {
    let lo = 0;
    let hi = this.names.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = compareUtf8(this.names[mid] as string, stream);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /**
   * Does the pending work in slices of about SLICE hashes, letting the event loop run between them:
   * a new stream near the start of a million re-hashes about a million subtrees (seconds), which
   * must not hold up the requests meanwhile. A root or proof after it finds nothing left to do.
   */
  async settle(): Promise<void> {
    this.settling = true;
    try {
      for (const _ of this.work()) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      this.settling = false;
    }
  }

  private commit(): void {
    this.notSettling();
    for (const _ of this.work());
  }

  /** The pending work is half done while settle() pauses: nothing may read or change the tree then (its caller's turn holds it). */
  private notSettling(): void {
    if (this.settling) throw new Error('HeadsTree used while it settles');
  }

  /** The pending work, pausing (yielding) after every slice. */
  private *work(): Generator<void> {
    if (this.added.size > 0) yield* this.insertAdded();
    if (this.moved.size > 0) yield* this.rehashMoved();
  }

  /**
   * Merges the new streams into the sorted names; leaves after the first new one move, the subtrees
   * over them are recomputed. Moved heads are left to rehashMoved, at their new index. The old names
   * and leaf hashes between two new streams are copied as one run.
   */
  private *insertAdded(): Generator<void> {
    const fresh = sortUtf8([...this.added]);
    this.added.clear();
    const old = this.names;
    const oldLeaves = this.levels[0] as Buffer;
    const leaves = Buffer.allocUnsafe((old.length + fresh.length) * HASH_BYTES);
    const names = new Array<string>(old.length + fresh.length);
    let from = 0;
    let at = 0;
    let first = -1;
    for (const name of fresh) {
      const to = this.insertionPoint(name, from);
      oldLeaves.copy(leaves, at * HASH_BYTES, from * HASH_BYTES, to * HASH_BYTES);
      for (let i = from; i < to; i++) {
        names[at++] = old[i] as string;
        if (i % COPY_SLICE === 0) yield;
      }
      if (first < 0) first = at;
      names[at] = name;
      leafHashInto(leafInput(this.heads.get(name) as Head), leaves, at * HASH_BYTES);
      at++;
      from = to;
    }
    oldLeaves.copy(leaves, at * HASH_BYTES, from * HASH_BYTES, old.length * HASH_BYTES);
    for (let i = from; i < old.length; i++) {
      names[at++] = old[i] as string;
      if (i % COPY_SLICE === 0) yield;
    }
    this.names = names;
    yield* this.rebuildLevels(leaves, first);
  }

  /** Where `stream` (not among the names) goes, searching from `from`. */
  private insertionPoint(stream: string, from: number): number {
    let lo = from;
    let hi = this.names.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareUtf8(this.names[mid] as string, stream) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** levels[0] is `leaves`; every perfect subtree that covers leaf `from` or any after it is recomputed. */
  private *rebuildLevels(leaves: Buffer, from: number): Generator<void> {
    const n = leaves.length / HASH_BYTES;
    const levels: Buffer[] = [leaves];
    for (let l = 1; 2 ** l <= n; l++) {
      const count = Math.floor(n / 2 ** l);
      const below = levels[l - 1] as Buffer;
      const level = Buffer.allocUnsafe(count * HASH_BYTES);
      const previous = this.levels[l];
      const keep = Math.min(count, Math.floor(from / 2 ** l), previous ? previous.length / HASH_BYTES : 0);
      previous?.copy(level, 0, 0, keep * HASH_BYTES);
      for (let j = keep; j < count; j++) {
        nodeHashInto(below, 2 * j * HASH_BYTES, (2 * j + 1) * HASH_BYTES, level, j * HASH_BYTES);
        if ((j - keep) % SLICE === SLICE - 1) yield;
      }
      levels.push(level);
    }
    // Set at the end only: a root or proof between slices commits the rest first, never reads half a level.
    this.levels = levels;
  }

  /** Moved heads: each leaf re-hashed, then each level's touched parents, once each. */
  private *rehashMoved(): Generator<void> {
    let touched = new Set<number>();
    const leaves = this.levels[0] as Buffer;
    for (const name of this.moved) {
      const index = this.indexOf(name);
      leafHashInto(leafInput(this.heads.get(name) as Head), leaves, index * HASH_BYTES);
      touched.add(index);
      if (touched.size % SLICE === 0) yield;
    }
    this.moved.clear();
    for (let l = 1; l < this.levels.length; l++) {
      const below = this.levels[l - 1] as Buffer;
      const level = this.levels[l] as Buffer;
      const count = level.length / HASH_BYTES;
      const parents = new Set<number>();
      for (const index of touched) {
        const j = Math.floor(index / 2);
        if (j >= count) continue;
        nodeHashInto(below, 2 * j * HASH_BYTES, (2 * j + 1) * HASH_BYTES, level, j * HASH_BYTES);
        parents.add(j);
        if (parents.size % SLICE === 0) yield;
      }
      touched = parents;
    }
  }
}
