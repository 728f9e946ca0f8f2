import type { Logger } from 'pino';
import { type Checkpoint, CHECKPOINT_SIGNED, CHECKPOINT_STREAM, foldCheckpointStream, signCheckpoint } from '../../platform/audit/checkpoint';
import { type Head, HeadsTree } from '../../platform/audit/heads-tree';
import type { AuditKey } from '../../platform/audit/signing';
import { BackgroundLoop } from '../../platform/consumers/background-loop';
import { uuidV7 } from '../../platform/ids';
import { type EventStore, type JsonObject, type NewEvent, type RecordedEvent, WrongExpectedRevisionError } from '../../eventstore/port';
import { checkpointHeadsEvents } from './checkpoint-events';

/** Events read from the log at once while catching up. */
const PAGE_SIZE = 1_000;
/** Tries of an on-demand checkpoint that lost the race to another node's. */
const ON_DEMAND_ATTEMPTS = 3;

export interface CheckpointerDeps {
  store: EventStore;
  /** The newest signs. */
  keys: AuditKey[];
  log: Logger;
  /** How often it looks whether the log grew (60 s). */
  intervalMs: number;
}

/**
 * Signs the Merkle root over every stream's head at a log position and appends it to the log
 * (CHECKPOINT_STREAM): every `intervalMs` in which the log grew by events other than checkpoints,
 * and on demand. It follows the log itself through the store port (every event, with its hash,
 * which the consumers' loop does not read), into an in-memory HeadsTree, so a checkpoint costs what
 * changed since the last one. At start the tree comes back from the checkpoint stream (the heads each
 * checkpoint recorded, checked against the last signed root), then the log after it; without a
 * checkpoint yet, from the whole log.
 *
 * Several nodes on one database: the checkpoint is appended at the checkpoint stream's revision
 * this node has read; a node that lost the race reads the winner's checkpoint and, on its timer,
 * skips (on demand, it tries again).
 */
export class Checkpointer {
  private tree = new HeadsTree();
  /** Every event up to here (inclusive) is in the tree. */
  private position = '';
  /** Heads that moved since the last signed checkpoint, with the position of their event. */
  private readonly moved = new Map<string, Head & { position: string }>();
  /** The checkpoint stream's revision as far as the tree has read (-1: none yet). */
  private streamRevision = -1;
  /** The position of the last event other than a checkpoint's, and of the last signed checkpoint: the log grew when the first is later. */
  private lastGrowth = '';
  private lastSigned = '';
  private restored = false;
  private turn: Promise<unknown> = Promise.resolve();
  private readonly loop = new BackgroundLoop(() => this.run());

  constructor(private readonly deps: CheckpointerDeps) {}

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

  private async run(): Promise<void> {
    while (this.loop.running) {
      await this.loop.sleep(this.deps.intervalMs);
      if (!this.loop.running) return;
      try {
        await this.checkpointIfGrown();
      } catch (error) {
        this.deps.log.warn({ err: error }, 'audit checkpoint failed: tried again at the next round');
      }
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
    await this.catchUp();
    if (!force && this.lastGrowth <= this.lastSigned) return null;
    const key = this.deps.keys[this.deps.keys.length - 1];
    if (!key) throw new Error('audit checkpoint: no signing key');
    await this.tree.settle();
    const checkpoint = signCheckpoint(
      { id: uuidV7(), position: this.position, streams: this.tree.size, root: this.tree.rootHex(), createdAt: new Date().toISOString(), kid: key.kid },
      key,
    );
    if (!(await this.append(checkpoint))) return null;
    this.signed(checkpoint);
    this.deps.log.info({ checkpoint: checkpoint.id, position: checkpoint.position, streams: checkpoint.streams }, 'audit checkpoint signed');
    return checkpoint;
  }

  /** The moved heads in chunks, then the checkpoint, each append at the revision read; false when another node's came first. */
  private async append(checkpoint: Checkpoint): Promise<boolean> {
    const events: NewEvent[] = [...checkpointHeadsEvents(checkpoint.id, [...this.moved.values()])];
    events.push({ id: uuidV7(), type: CHECKPOINT_SIGNED, data: { ...checkpoint } as unknown as JsonObject });
    try {
      // Appends of at most ten chunks (about 1.3 MB), as KurrentDB bounds one append's size.
      for (let i = 0; i < events.length; i += 10) {
        const result = await this.deps.store.append(CHECKPOINT_STREAM, events.slice(i, i + 10), this.streamRevision);
        this.streamRevision = result.nextRevision;
      }
      return true;
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) return false;
      throw error;
    }
  }

  /**
   * Reads the log after the tree's position into it: heads only (no data, no metadata), and the
   * signed checkpoints among them whole, from their stream (a few a minute).
   */
  private async catchUp(): Promise<void> {
    if (!this.restored) await this.restore();
    for (;;) {
      const page = await this.deps.store.readAll({ fromPosition: this.position || undefined, maxCount: PAGE_SIZE, headsOnly: true });
      const signed = await this.signedCheckpointsIn(page);
      for (const e of page) this.fold(e.stream === CHECKPOINT_STREAM ? (signed.get(e.revision) ?? e) : e);
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

  private fold(e: RecordedEvent): void {
    const head = { stream: e.stream, revision: e.revision, hash: e.hash, position: e.position };
    this.tree.set(head);
    this.moved.set(e.stream, head);
    this.position = e.position;
    if (e.stream !== CHECKPOINT_STREAM) this.lastGrowth = e.position;
    else {
      this.streamRevision = e.revision;
      // Another node's checkpoint (or this node's own, read back): what it recorded is no longer news.
      if (e.type === CHECKPOINT_SIGNED) this.signed(e.data as unknown as Checkpoint);
    }
  }

  private signed(checkpoint: Checkpoint): void {
    for (const [stream, head] of this.moved) if (head.position <= checkpoint.position) this.moved.delete(stream);
    if (checkpoint.position > this.lastSigned) this.lastSigned = checkpoint.position;
  }

  /** The tree at the last signed checkpoint, from the heads the checkpoints recorded, if they give its root. */
  private async restore(): Promise<void> {
    this.restored = true;
    const events = await this.deps.store.readStream(CHECKPOINT_STREAM);
    let last: { checkpoint: Checkpoint; heads: Map<string, Head> } | undefined;
    foldCheckpointStream(events, (checkpoint, heads) => {
      last = { checkpoint, heads };
      return true;
    });
    if (!last) return;
    const tree = new HeadsTree();
    for (const head of last.heads.values()) tree.set(head);
    await tree.settle();
    if (tree.rootHex() !== last.checkpoint.root) {
      this.deps.log.error({ checkpoint: last.checkpoint.id }, 'audit checkpoint heads do not give its signed root: the tree is read from the whole log');
      return;
    }
    this.tree = tree;
    this.position = last.checkpoint.position;
    this.lastSigned = last.checkpoint.position;
  }
}
