import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Leaf, StoredCheckpoint } from '../../projections/audit';
import { type Checkpoint, CHECKPOINT_SIGNED, CHECKPOINT_STREAM, signCheckpoint } from '../../platform/audit/checkpoint';
import { BlockedTree, type Head, headLeaf } from '../../platform/audit/merkle-stream';
import { compareUtf8, sortUtf8 } from '../../platform/audit/order';
import type { AuditKey } from '../../platform/audit/signing';
import { BackgroundLoop } from '../../platform/consumers/background-loop';
import { uuidV7 } from '../../platform/ids';
import { comparePositions, type EventStore, type JsonObject, type NewEvent, type RecordedEvent, WrongExpectedRevisionError } from '../../eventstore/port';
import { checkpointHeadsEvents } from './checkpoint-events';

/** Events read from the log at once while catching up. */
const PAGE_SIZE = 1_000;
/** How often the timer's loop reads what the log gained between its rounds, so that a round reads only its last second. */
const FOLLOW_MS = 1_000;
/** Tries of an on-demand checkpoint that lost the race to another node's. */
const ON_DEMAND_ATTEMPTS = 3;

/** What the checkpointer reads of the audit read model (projections/audit). */
export interface CheckpointHeads {
  /** The last signed checkpoint the read model has folded. */
  latest(): Promise<StoredCheckpoint | null>;
  /** Every stream's leaf hash at that checkpoint or a later one, in leaf order, a page at a time. */
  currentLeaves(): AsyncIterable<Leaf[]>;
}

export interface CheckpointerDeps {
  store: EventStore;
  /** The newest signs. */
  keys: AuditKey[];
  log: Logger;
  /** How often it looks whether the log grew (60 s). */
  intervalMs: number;
  heads: CheckpointHeads;
  /** Told of each checkpoint this node signed, with its tree (kept for proofs). */
  onSigned?(checkpoint: Checkpoint, tree: BlockedTree): void;
}

type MovedHead = Head & { position: string };

/** What the CheckpointService drives: this node's checkpointer, here (Checkpointer) or in a thread of its own (CheckpointerThread). */
export interface CheckpointTaker {
  start(): void;
  stop(): Promise<void>;
  /** A checkpoint now, whether or not the log grew (POST /admin/v1/checkpoints). */
  checkpointNow(): Promise<Checkpoint>;
  /** One timer round (tests): a checkpoint when the log grew, else null. */
  checkpointIfGrown(): Promise<Checkpoint | null>;
  /** Heads held: those that moved since the read model's last checkpoint. */
  readonly held: number;
  /** Where this node's last checkpoint was appended (its CheckpointSigned event). */
  readonly appendedAt: string;
}

/**
 * Signs the Merkle root over every stream's head at a log position and appends it to the log
 * (CHECKPOINT_STREAM): every `intervalMs` in which the log grew by events other than checkpoints,
 * and on demand.
 *
 * Its memory follows what changed, not how many streams there are. It follows the log itself
 * through the store port (every event with its hash, heads only), every second between its rounds
 * (FOLLOW_MS), keeping in `moved` the head of every stream that moved after the checkpoint the
 * audit read model has folded last (its `base`).
 * A root is folded in one pass over the read model's heads in leaf order, merged with `moved` (a
 * moved head replaces the read model's), into a BlockedTree (one hash per 1,024 streams, which the
 * proofs of the checkpoint then use): O(n) hashes, since
 * in RFC 6962's shape over names in order one new stream anywhere moves every leaf after it. Once
 * the read model has folded a later checkpoint, the heads it recorded leave `moved`.
 *
 * The read model's heads are checked once, at start, against the signed root of its checkpoint:
 * the node signs nothing over heads that do not give what was signed.
 *
 * Several nodes on one database: the checkpoint is appended at the checkpoint stream's revision
 * this node has read; a node that lost the race reads the winner's checkpoint and, on its timer,
 * skips (on demand, it tries again). A timer round also skips while the newest checkpoint, any
 * node's, is younger than 0.9 of the interval: the nodes do not each pay a pass over every stream
 * for one minute of the log.
 */
export class Checkpointer implements CheckpointTaker {
  /** Every event up to here (inclusive) is in `moved` or the read model. */
  private position = '';
  /** The latest head of every stream that moved after `base`'s position, with the position of its event. */
  private readonly moved = new Map<string, MovedHead>();
  /** The read model's checkpoint `moved` is relative to (null: none yet, `moved` holds every stream). */
  private base: StoredCheckpoint | null = null;
  /** The checkpoint stream's revision as far as this node has read (-1: none yet). */
  private streamRevision = -1;
  /** The position of the last event other than a checkpoint's, and of the last signed checkpoint: the log grew when the first is later. */
  private lastGrowth = '';
  private lastSigned = '';
  /** When the newest checkpoint this node knows of (its own or another node's) was made, ms. */
  private lastSignedAt = 0;
  private restored = false;
  /** Following the log failed since the last round: the next round reads. */
  private followFailed = false;
  private turn: Promise<unknown> = Promise.resolve();
  private readonly loop = new BackgroundLoop(() => this.run());

  constructor(private readonly deps: CheckpointerDeps) {}

  /** Where this node's last checkpoint was appended (its CheckpointSigned event). */
  appendedAt = '';

  /** Heads this node holds: those that moved since the read model's last checkpoint. */
  get held(): number {
    return this.moved.size;
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** A checkpoint now, whether or not the log grew (POST /admin/v1/checkpoints). */
  checkpointNow(): Promise<Checkpoint> {
    return this.inTurn(async () => {
      for (let attempt = 1; ; attempt++) {
        const checkpoint = await this.take(true);
        if (checkpoint) return checkpoint;
        if (attempt >= ON_DEMAND_ATTEMPTS) throw new Error('audit checkpoint: another node kept checkpointing first');
      }
    });
  }

  /** One timer round (tests): a checkpoint when the log grew, else null. */
  checkpointIfGrown(): Promise<Checkpoint | null> {
    return this.inTurn(() => this.take(false));
  }

  /**
   * A round every `intervalMs` after the last one ended, and between rounds the log followed every
   * FOLLOW_MS: reading the minute's log is most of a round's work, and spread over the minute it no
   * longer takes a core for seconds at once.
   */
  private async run(): Promise<void> {
    let due = Date.now() + this.deps.intervalMs;
    while (this.loop.running) {
      await this.loop.sleep(Math.max(0, Math.min(FOLLOW_MS, due - Date.now())));
      if (!this.loop.running) return;
      if (Date.now() < due) {
        await this.follow();
        continue;
      }
      try {
        await this.checkpointIfGrown();
      } catch (error) {
        this.deps.log.warn({ err: error }, 'audit checkpoint failed: tried again at the next round');
      }
      this.followFailed = false;
      due = Date.now() + this.deps.intervalMs;
    }
  }

  /**
   * Reads what the log gained since the last look. After a failure (the database out of reach, a
   * read model whose heads do not give its root) it waits for the next round, which reads again and
   * says why: a start's check of the heads is a pass over every stream, not one to repeat each second.
   */
  private async follow(): Promise<void> {
    if (this.followFailed) return;
    try {
      await this.inTurn(() => this.catchUp());
    } catch (error) {
      this.followFailed = true;
      this.deps.log.debug({ err: error }, 'audit checkpointer: following the log failed, read again at the next round');
    }
  }

  /** One checkpoint or catch-up at a time on this node. */
  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const result = this.turn.then(work);
    this.turn = result.catch(() => undefined);
    return result;
  }

  /** Null when there was nothing to sign (not forced) or another node appended first. */
  private async take(force: boolean): Promise<Checkpoint | null> {
    const started = performance.now();
    await this.catchUp();
    if (!force && comparePositions(this.lastGrowth, this.lastSigned) <= 0) return null;
    // Another node signed within the round: the log's minute has its checkpoint, and this node spares its pass.
    if (!force && Date.now() - this.lastSignedAt < this.deps.intervalMs * 0.9) return null;
    const key = this.deps.keys[this.deps.keys.length - 1];
    if (!key) throw new Error('audit checkpoint: no signing key');
    await this.rebase();
    const tree = await this.fold();
    const checkpoint = signCheckpoint(
      { id: uuidV7(), position: this.position, streams: tree.size, root: tree.root().toString('hex'), createdAt: new Date().toISOString(), kid: key.kid },
      key,
    );
    if (!(await this.append(checkpoint))) return null;
    this.signed(checkpoint);
    this.deps.onSigned?.(checkpoint, tree);
    this.deps.log.info(
      { checkpoint: checkpoint.id, position: checkpoint.position, streams: checkpoint.streams, ms: Math.round(performance.now() - started) },
      'audit checkpoint signed',
    );
    return checkpoint;
  }

  /**
   * The tree over the read model's heads merged with `moved`, in leaf order. The read model may fold
   * a later checkpoint meanwhile: every head that checkpoint records moved after `base`, so `moved`
   * has it (or a later one) and wins; the merge skips the read model's row of a moved stream.
   */
  private async fold(): Promise<BlockedTree> {
    const tree = await BlockedTree.fold(this.merged());
    const latest = await this.deps.heads.latest();
    // A rebuild swapped in behind `base` while the heads were read: they may lack what `moved` let go.
    if ((latest?.revision ?? -1) < (this.base?.revision ?? -1)) throw new Error('audit checkpoint: the audit read model went back while it was read');
    return tree;
  }

  /** The read model's leaves and the moved heads' merged by name, a page at a time. */
  private async *merged(): AsyncIterable<Leaf[]> {
    const moved = sortUtf8([...this.moved.keys()]);
    let next = 0;
    const movedUpTo = (out: Leaf[], stream: string | undefined) => {
      for (; next < moved.length && (stream === undefined || compareUtf8(moved[next] as string, stream) <= 0); next++) {
        const name = moved[next] as string;
        out.push({ stream: name, leaf: headLeaf(this.moved.get(name) as Head) });
      }
    };
    for await (const page of this.deps.heads.currentLeaves()) {
      const out: Leaf[] = [];
      for (const leaf of page) {
        movedUpTo(out, leaf.stream);
        if (!this.moved.has(leaf.stream)) out.push(leaf);
      }
      yield out;
    }
    const rest: Leaf[] = [];
    movedUpTo(rest, undefined);
    yield rest;
  }

  /** Lets go of the heads the read model's newest checkpoint holds. */
  private async rebase(): Promise<void> {
    const latest = await this.deps.heads.latest();
    if (!latest || (this.base && latest.revision <= this.base.revision)) return;
    for (const [stream, head] of this.moved) if (comparePositions(head.position, latest.position) <= 0) this.moved.delete(stream);
    this.base = latest;
  }

  /** The moved heads since the last signed checkpoint in chunks, then the checkpoint, each append at the revision read; false when another node's came first. */
  private async append(checkpoint: Checkpoint): Promise<boolean> {
    const recorded = [...this.moved.values()].filter((h) => comparePositions(h.position, this.lastSigned) > 0);
    const events: NewEvent[] = [...checkpointHeadsEvents(checkpoint.id, recorded)];
    events.push({ id: uuidV7(), type: CHECKPOINT_SIGNED, data: { ...checkpoint } as unknown as JsonObject });
    try {
      // Appends of at most ten chunks (about 1.3 MB), as KurrentDB bounds one append's size.
      for (let i = 0; i < events.length; i += 10) {
        const result = await this.deps.store.append(CHECKPOINT_STREAM, events.slice(i, i + 10), this.streamRevision);
        this.streamRevision = result.nextRevision;
        this.appendedAt = result.position;
      }
      return true;
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) return false;
      throw error;
    }
  }

  /** Reads the log after `position` into `moved`: heads only (no data, no metadata), and the signed checkpoints among them whole. */
  private async catchUp(): Promise<void> {
    if (!this.restored) await this.restore();
    for (;;) {
      const page = await this.deps.store.readAll({ fromPosition: this.position || undefined, maxCount: PAGE_SIZE, headsOnly: true });
      const signed = await this.signedCheckpointsIn(page);
      for (const e of page) this.foldEvent(e.stream === CHECKPOINT_STREAM ? (signed.get(e.revision) ?? e) : e);
      if (page.length < PAGE_SIZE) return;
    }
  }

  /** The page's signed checkpoints with their data, by revision of the checkpoint stream. */
  private async signedCheckpointsIn(page: RecordedEvent[]): Promise<Map<number, RecordedEvent>> {
    const revisions = page.filter((e) => e.stream === CHECKPOINT_STREAM && e.type === CHECKPOINT_SIGNED).map((e) => e.revision);
    if (revisions.length === 0) return new Map();
    const events = await this.deps.store.readStream(CHECKPOINT_STREAM, { fromRevision: Math.min(...revisions), toRevision: Math.max(...revisions) });
    return new Map(events.filter((e) => e.type === CHECKPOINT_SIGNED).map((e) => [e.revision, e]));
  }

  private foldEvent(e: RecordedEvent): void {
    this.moved.set(e.stream, { stream: e.stream, revision: e.revision, hash: e.hash, position: e.position });
    this.position = e.position;
    if (e.stream !== CHECKPOINT_STREAM) this.lastGrowth = e.position;
    else {
      this.streamRevision = e.revision;
      // Another node's checkpoint (or this node's own, read back): what it recorded is no longer news.
      if (e.type === CHECKPOINT_SIGNED) this.signed(e.data as unknown as Checkpoint);
    }
  }

  private signed(checkpoint: Checkpoint): void {
    if (comparePositions(checkpoint.position, this.lastSigned) > 0) this.lastSigned = checkpoint.position;
    this.lastSignedAt = Math.max(this.lastSignedAt, Date.parse(checkpoint.createdAt));
  }

  /**
   * Starts from the read model's last checkpoint, once its heads give that checkpoint's signed root;
   * without one, from the whole log. The heads may move on while they are read (the projection
   * folds a later checkpoint): then they are read again.
   */
  private async restore(): Promise<void> {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const latest = await this.deps.heads.latest();
      if (!latest) break;
      const tree = await BlockedTree.fold(this.deps.heads.currentLeaves());
      if (tree.root().toString('hex') === latest.root && tree.size === latest.streams) {
        this.base = latest;
        this.position = latest.position;
        this.lastSigned = latest.position;
        this.lastSignedAt = Date.parse(latest.createdAt);
        this.streamRevision = latest.revision;
        break;
      }
      if ((await this.deps.heads.latest())?.revision === latest.revision)
        throw new Error(`audit checkpoint ${latest.id}: the audit read model's heads do not give its signed root (rebuild the audit projection)`);
    }
    this.restored = true;
  }
}
