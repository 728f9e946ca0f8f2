import { AUDIT_REFUSALS as R } from '../../domain/audit';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications';
import type { AuditQueries, StoredCheckpoint } from '../../projections/audit';
import type { Checkpoint, CheckpointProof } from '../../platform/audit/checkpoint';
import { headLeaf, ProofStream } from '../../platform/audit/merkle-stream';

/** The cursor is the revision of the last checkpoint of a page in its stream, opaque to auditors. */
const encodeCursor = (revision: number) => Buffer.from(`c:${revision}`).toString('base64url');

function decodeCursor(cursor: string): number {
  const match = /^c:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match?.[1]) throw NOTIFICATION_REFUSALS.invalidCursor();
  return Number(match[1]);
}

const withoutRevision = ({ revision: _, ...checkpoint }: StoredCheckpoint): Checkpoint => checkpoint;

/**
 * The checkpoints from the audit read model (projections/audit), which folds them from their stream
 * in the log. A proof is one pass over the checkpoint's heads in leaf order (ProofStream: O(log n)
 * memory, O(n) hashes), which also folds the root: heads altered in the read model after signing
 * would prove nothing, so the signed root decides.
 */
export class CheckpointReads {
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
    const proof = new ProofStream(checkpoint.streams, (h) => h.stream === stream);
    let leaf: CheckpointProof['leaf'] | undefined;
    for await (const head of this.queries.headsAt(checkpoint.revision)) {
      // The leaf hash is what the path is folded from: it must be this head's.
      if (head.stream === stream && headLeaf(head).equals(head.leaf)) leaf = { stream: head.stream, revision: head.revision, hash: head.hash };
      proof.push(head, head.leaf);
    }
    const found = proof.finish();
    if (!leaf || !found.path || found.root.toString('hex') !== checkpoint.root)
      throw new Error(`audit checkpoint ${id}: the recorded heads do not give its signed root`);
    return { checkpointId: checkpoint.id, leaf, index: found.index, treeSize: found.size, path: found.path.map((p) => p.toString('hex')) };
  }

  private async stored(id: string): Promise<StoredCheckpoint> {
    const found = await this.queries.byId(id);
    if (!found) throw R.checkpointNotFound();
    return found;
  }
}
