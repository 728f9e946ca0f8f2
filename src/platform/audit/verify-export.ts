import { chainHash, eventDigest, GENESIS_HASH } from '../../eventstore/hash';
import { type Checkpoint, CHECKPOINT_STREAM, foldCheckpointStream, signatureHolds } from './checkpoint';
import { type Head, rootOfHeads } from './merkle-stream';
import type { PublicJwk } from './signing';

/** An event as `tally events export` and GET /audit/v1/events write it, one JSON a line. */
export interface ExportedEvent {
  id: string;
  stream: string;
  revision: number;
  position: string;
  type: string;
  data: object;
  metadata: object;
  hash: string;
}

/** A stream the export does not reproduce as the checkpoint signed it, and why. */
export interface StreamFinding {
  stream: string;
  reason: string;
}

export interface ExportVerdict {
  ok: boolean;
  /** Whether the checkpoint is signed by the key given ('another key': it names or needs another). */
  signature: 'holds' | 'another key';
  /** The root of the export's heads at the checkpoint's position, and how many heads. */
  root: string;
  streams: number;
  findings: StreamFinding[];
  /** Set when the roots differ but the checkpoint's recorded heads could not say which stream (they were altered too). */
  unnamed?: string;
}

interface Chain {
  revision: number;
  hash: string;
  broken?: string;
}

/**
 * Checks, offline, that an export of the log extends a checkpoint: its signature holds under the
 * auditor's key; each stream's hash chain, recomputed from the events' content, holds from revision
 * 0 up to the checkpoint's position; and the Merkle root over the heads there is the signed one.
 * Fed one event at a time, in log order (memory follows the streams, not the events).
 *
 * The signed root alone says that something differs, not where. To name the stream, it rebuilds the
 * checkpoint's leaves from the heads the checkpoint stream recorded (in the export too); if they
 * give the signed root they are the signed leaves (SHA-256 does not collide), and every stream whose
 * head differs from the export's is named.
 */
export class ExportVerifier {
  private readonly chains = new Map<string, Chain>();
  private readonly checkpointEvents: Array<{ type: string; data: unknown }> = [];

  constructor(
    private readonly checkpoint: Checkpoint,
    private readonly key: PublicJwk,
  ) {}

  add(e: ExportedEvent): void {
    if (e.stream === CHECKPOINT_STREAM) this.checkpointEvents.push({ type: e.type, data: e.data });
    if (e.position > this.checkpoint.position) return;
    const chain = this.chains.get(e.stream) ?? { revision: -1, hash: GENESIS_HASH };
    if (!chain.broken) {
      if (e.revision !== chain.revision + 1) chain.broken = `revision ${chain.revision + 1} is missing from its hash chain`;
      else if (chainHash(chain.hash, eventDigest(e)) !== e.hash) chain.broken = `revision ${e.revision} does not match its hash (content or chain changed)`;
    }
    chain.revision = e.revision;
    chain.hash = e.hash;
    this.chains.set(e.stream, chain);
  }

  finish(): ExportVerdict {
    const { root, size } = rootOfHeads([...this.chains].map(([stream, chain]) => ({ stream, revision: chain.revision, hash: chain.hash })));
    const signature = signatureHolds(this.checkpoint, this.key) ? 'holds' : 'another key';
    const findings: StreamFinding[] = [];
    for (const [stream, chain] of this.chains) if (chain.broken) findings.push({ stream, reason: chain.broken });
    const rootHolds = root === this.checkpoint.root && size === this.checkpoint.streams;
    const verdict: ExportVerdict = { ok: signature === 'holds' && rootHolds && findings.length === 0, signature, root, streams: size, findings };
    if (!rootHolds) this.nameStreams(verdict);
    return verdict;
  }

  private nameStreams(verdict: ExportVerdict): void {
    const signed = this.signedHeads();
    if (!signed) {
      verdict.unnamed =
        'the Merkle root differs, and the heads the checkpoint recorded do not give its signed root (they were altered too, or are not in the export)';
      return;
    }
    const named = new Set(verdict.findings.map((f) => f.stream));
    const add = (stream: string, reason: string) => {
      if (!named.has(stream)) verdict.findings.push({ stream, reason });
      named.add(stream);
    };
    for (const head of signed.values()) {
      const chain = this.chains.get(head.stream);
      if (!chain) add(head.stream, `signed at revision ${head.revision}, absent from the export`);
      else if (chain.revision !== head.revision || chain.hash !== head.hash)
        add(head.stream, `signed at revision ${head.revision} (hash ${head.hash}), the export has revision ${chain.revision} (hash ${chain.hash})`);
    }
    for (const stream of this.chains.keys()) if (!signed.has(stream)) add(stream, 'in the export before the checkpoint, not in the checkpoint');
  }

  /** The checkpoint's leaves as its stream recorded them, when they give its signed root. */
  private signedHeads(): Map<string, Head> | undefined {
    let found: Map<string, Head> | undefined;
    foldCheckpointStream(this.checkpointEvents, (c, heads) => {
      if (c.id !== this.checkpoint.id) return true;
      found = new Map(heads);
      return false;
    });
    if (!found) return undefined;
    const { root, size } = rootOfHeads(found.values());
    return root === this.checkpoint.root && size === this.checkpoint.streams ? found : undefined;
  }
}
