import { AUDIT_REFUSALS as R } from '../../domain/audit';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications';
import { type Checkpoint, type CheckpointProof, CHECKPOINT_SIGNED, CHECKPOINT_STREAM, foldCheckpointStream } from '../../platform/audit/checkpoint';
import { type Head, HeadsTree } from '../../platform/audit/heads-tree';
import type { EventStore } from '../../eventstore/port';

/** The cursor is the revision of the last checkpoint of a page in its stream, opaque to auditors. */
const encodeCursor = (revision: number) => Buffer.from(`c:${revision}`).toString('base64url');

function decodeCursor(cursor: string): number {
  const match = /^c:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match?.[1]) throw NOTIFICATION_REFUSALS.invalidCursor();
  return Number(match[1]);
}

/**
 * The checkpoints as the log holds them (its CHECKPOINT_STREAM; no read model: the stream is the
 * record, and an auditor reads what was appended). A list or a lookup reads the stream's signed
 * checkpoints (one event a minute at most, plus the heads they recorded); a proof rebuilds the tree
 * of its checkpoint from the heads every checkpoint up to it recorded (O(streams) hashes and the
 * stream's events up to it), checked against the signed root. The last tree built is kept, so the
 * proofs of one checkpoint cost one build.
 */
export class CheckpointReads {
  private lastTree: { id: string; tree: HeadsTree } | undefined;

  constructor(private readonly store: EventStore) {}

  /** Newest first, `limit` a page, after `cursor` (a previous page's nextCursor). */
  async list(limit: number, cursor?: string): Promise<{ checkpoints: Checkpoint[]; nextCursor: string | null }> {
    const before = cursor === undefined ? undefined : decodeCursor(cursor);
    const events = await this.store.readStream(CHECKPOINT_STREAM, before === undefined ? {} : { toRevision: before - 1 });
    const signed = events.filter((e) => e.type === CHECKPOINT_SIGNED).reverse();
    const page = signed.slice(0, limit);
    const last = page[page.length - 1];
    return {
      checkpoints: page.map((e) => e.data as unknown as Checkpoint),
      nextCursor: signed.length > limit && last ? encodeCursor(last.revision) : null,
    };
  }

  async get(id: string): Promise<Checkpoint> {
    const events = await this.store.readStream(CHECKPOINT_STREAM);
    const found = events.find((e) => e.type === CHECKPOINT_SIGNED && (e.data as { id?: string }).id === id);
    if (!found) throw R.checkpointNotFound();
    return found.data as unknown as Checkpoint;
  }

  /** The stream's head at the checkpoint and its audit path to the checkpoint's root. */
  async proof(id: string, stream: string): Promise<CheckpointProof> {
    const { checkpoint, tree } = await this.treeOf(id);
    const proof = tree.proof(stream);
    if (!proof) throw R.streamNotInCheckpoint();
    return { checkpointId: checkpoint.id, leaf: proof.head, index: proof.index, treeSize: tree.size, path: proof.path.map((p) => p.toString('hex')) };
  }

  private async treeOf(id: string): Promise<{ checkpoint: Checkpoint; tree: HeadsTree }> {
    const events = await this.store.readStream(CHECKPOINT_STREAM);
    let found: { checkpoint: Checkpoint; heads: Map<string, Head> } | undefined;
    foldCheckpointStream(events, (checkpoint, heads) => {
      if (checkpoint.id !== id) return true;
      found = { checkpoint, heads };
      return false;
    });
    if (!found) throw R.checkpointNotFound();
    const { checkpoint, heads } = found;
    let tree = this.lastTree?.id === id ? this.lastTree.tree : undefined;
    if (!tree) {
      tree = new HeadsTree();
      for (const head of heads.values()) tree.set(head);
      await tree.settle();
    }
    // Heads altered in the database after signing would prove nothing: the signed root decides.
    if (tree.rootHex() !== checkpoint.root) throw new Error(`audit checkpoint ${id}: the recorded heads do not give its signed root`);
    this.lastTree = { id, tree };
    return { checkpoint, tree };
  }
}
