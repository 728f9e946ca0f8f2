import { AUDIT_REFUSALS as R } from '../../domain/audit';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications';
import type { AuditQueries, StoredCheckpoint } from '../../projections/audit';
import type { Checkpoint, CheckpointProof } from '../../platform/audit/checkpoint';
import { BlockedTree, headLeaf } from '../../platform/audit/merkle-stream';

/** The cursor is the revision of the last checkpoint of a page in its stream, opaque to auditors. */
const encodeCursor = (revision: number) => Buffer.from(`c:${revision}`).toString('base64url');

function decodeCursor(cursor: string): number {
  const match = /^c:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match?.[1]) throw NOTIFICATION_REFUSALS.invalidCursor();
  return Number(match[1]);
}

const withoutRevision = ({ revision: _, ...checkpoint }: StoredCheckpoint): Checkpoint => checkpoint;

/** Checkpoints whose BlockedTree is kept: about 100 bytes per 1,024 streams each. */
const TREES_KEPT = 4;

/**
 * The checkpoints from the audit read model (projections/audit), which folds them from their stream
 * in the log. A proof needs its checkpoint's tree: folded once per checkpoint in one pass over its
 * heads (checked against the signed root: heads altered in the read model after signing would prove
 * nothing) and kept as a BlockedTree, one hash per 1,024 streams, for the last few checkpoints
 * signed on this node (the checkpointer hands over the tree it signed) or proved. A proof then reads
 * the 1,024 heads of its stream's run again.
 */
export class CheckpointReads {
  private readonly trees = new Map<string, Promise<BlockedTree>>();

  constructor(private readonly queries: AuditQueries) {}

  /** Newest first, `limit` a page, after `cursor` (a previous page's nextCursor). */
  async list(limit: number, cursor?: string): Promise<{ checkpoints: Checkpoint[]; nextCursor: string | null }> {
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    const rows = await this.queries.list(limit + 1, before);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { checkpoints: page.map(withoutRevision), nextCursor: rows.length > limit && last ? encodeCursor(last.revision) : null };
  }

  async get(id: string): Promise<Checkpoint> {
    return withoutRevision(await this.stored(id));
  }

  /** The stream's head at the checkpoint and its audit path to the checkpoint's root. */
  async proof(id: string, stream: string): Promise<CheckpointProof> {
    const checkpoint = await this.stored(id);
    if (!(await this.queries.hasHeadAt(checkpoint.revision, stream))) throw R.streamNotInCheckpoint();
    const tree = await this.treeOf(checkpoint);
    const block = tree.blockOf(stream);
    const first = tree.blocks[block]?.first as string;
    const heads = await this.queries.headsAtFrom(checkpoint.revision, first, tree.blockSize(block));
    const offset = heads.findIndex((h) => h.stream === stream);
    const head = heads[offset];
    // The leaves are what the path is folded from: the stream's must be its head's, and the run's must give the run's hash.
    const proof =
      head && headLeaf(head).equals(head.leaf)
        ? tree.proof(
            block,
            heads.map((h) => h.leaf),
            offset,
          )
        : undefined;
    if (!head || !proof) throw new Error(`audit checkpoint ${id}: the recorded heads do not give its signed root`);
    return {
      checkpointId: checkpoint.id,
      leaf: { stream, revision: head.revision, hash: head.hash },
      index: proof.index,
      treeSize: tree.size,
      path: proof.path.map((p) => p.toString('hex')),
    };
  }

  /** A checkpoint's tree as the checkpointer folded it when it signed (so its proofs need no pass of their own). */
  remember(id: string, tree: BlockedTree): void {
    this.keep(id, Promise.resolve(tree));
  }

  /** The checkpoint's tree, folded once while it is among the last few signed here or proved. */
  private treeOf(checkpoint: StoredCheckpoint): Promise<BlockedTree> {
    const kept = this.trees.get(checkpoint.id);
    if (kept) return kept;
    const tree = this.fold(checkpoint);
    tree.catch(() => this.trees.delete(checkpoint.id));
    this.keep(checkpoint.id, tree);
    return tree;
  }

  private keep(id: string, tree: Promise<BlockedTree>): void {
    this.trees.set(id, tree);
    for (const old of this.trees.keys()) if (this.trees.size > TREES_KEPT) this.trees.delete(old);
  }

  private async fold(checkpoint: StoredCheckpoint): Promise<BlockedTree> {
    const tree = await BlockedTree.fold(this.queries.headsAt(checkpoint.revision));
    if (tree.size !== checkpoint.streams || tree.root().toString('hex') !== checkpoint.root)
      throw new Error(`audit checkpoint ${checkpoint.id}: the recorded heads do not give its signed root`);
    return tree;
  }

  private async stored(id: string): Promise<StoredCheckpoint> {
    const found = await this.queries.byId(id);
    if (!found) throw R.checkpointNotFound();
    return found;
  }
}
