import { jcs } from './canonical-json';
import type { Head } from './merkle-stream';
import { type AuditKey, type PublicJwk, privateKeyOf, signText, verifyText } from './signing';

/**
 * A signed tree head: the Merkle root over every stream's head at a log position (`streams` heads,
 * the tree's size), with its time and the key that signed it. The formats are in docs/audit.md.
 */
export interface Checkpoint {
  id: string;
  position: string;
  streams: number;
  root: string;
  createdAt: string;
  kid: string;
  signature: string;
}

export type UnsignedCheckpoint = Omit<Checkpoint, 'signature'>;

/** An inclusion proof of a stream's head in a checkpoint's tree. */
export interface CheckpointProof {
  checkpointId: string;
  leaf: Head;
  index: number;
  treeSize: number;
  path: string[];
}

/**
 * The checkpoints' own stream. Each checkpoint appends the heads that moved since the previous
 * one (CheckpointHeadsRecorded, in chunks) and then itself (CheckpointSigned): the union of every
 * checkpoint's heads up to one is that checkpoint's leaves, which a proof for an old checkpoint and
 * an offline verifier that must name the stream that differs both need (the root alone names none).
 */
export const CHECKPOINT_STREAM = 'audit-checkpoints';
export const CHECKPOINT_SIGNED = 'CheckpointSigned';
export const CHECKPOINT_HEADS = 'CheckpointHeadsRecorded';
/** Heads per CheckpointHeadsRecorded event (about 130 bytes each). */
export const HEADS_PER_EVENT = 1_000;

/** What is signed: the RFC 8785 canonical JSON of the checkpoint without its signature. */
export const signedText = (c: UnsignedCheckpoint): string =>
  jcs({ id: c.id, position: c.position, streams: c.streams, root: c.root, createdAt: c.createdAt, kid: c.kid });

export function signCheckpoint(c: UnsignedCheckpoint, key: AuditKey): Checkpoint {
  return { ...c, signature: signText(privateKeyOf(key), signedText(c)) };
}

/** True when `jwk` is the key the checkpoint names and its signature holds under it. */
export const signatureHolds = (c: Checkpoint, jwk: PublicJwk): boolean => c.kid === jwk.kid && verifyText(jwk, signedText(c), c.signature);

/** A head as CheckpointHeadsRecorded stores it: [stream, revision, hash]. */
export type StoredHead = [string, number, string];

/**
 * Every checkpoint's leaves from its stream's events in order, up to and including `upTo` (or all):
 * heads recorded for a checkpoint that was never signed (a node that crashed or lost the race) are
 * left out. Calls `each` with every signed checkpoint and its heads so far.
 */
export function foldCheckpointStream(
  events: Iterable<{ type: string; data: unknown }>,
  each: (checkpoint: Checkpoint, heads: Map<string, Head>) => boolean | undefined,
): void {
  const heads = new Map<string, Head>();
  let pending: StoredHead[] = [];
  let pendingId: string | undefined;
  for (const e of events) {
    if (e.type === CHECKPOINT_HEADS) {
      const data = e.data as { checkpointId: string; heads: StoredHead[] };
      if (data.checkpointId !== pendingId) pending = [];
      pendingId = data.checkpointId;
      pending.push(...data.heads);
    } else if (e.type === CHECKPOINT_SIGNED) {
      const checkpoint = e.data as unknown as Checkpoint;
      if (pendingId === checkpoint.id) for (const [stream, revision, hash] of pending) heads.set(stream, { stream, revision, hash });
      pending = [];
      pendingId = undefined;
      if (each(checkpoint, heads) === false) return;
    }
  }
}
