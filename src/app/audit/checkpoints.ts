import type { Logger } from 'pino';
import type { EventStore } from '../../eventstore/port';
import type { AuditQueries } from '../../projections/audit';
import type { Checkpoint } from '../../platform/audit/checkpoint';
import type { BlockedTree } from '../../platform/audit/merkle-stream';
import { type AuditKey, type PublicJwk, publicJwkOf } from '../../platform/audit/signing';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import { CheckpointReads } from './checkpoint-reads';
import { Checkpointer, type CheckpointTaker } from './checkpointer';
import { CheckpointerThread } from './checkpointer-thread';

/** The checkpoints' cadence: a minute in which the log grew gets one. */
export const CHECKPOINT_INTERVAL_MS = 60_000;
/** The read model the auditor routes read checkpoints from (projections/audit). */
const AUDIT_READ_MODEL = 'audit';

export interface CheckpointServiceDeps {
  store: EventStore;
  /** The audit keys of ServiceKeys: the newest signs, all are published. */
  keys: AuditKey[];
  log: Logger;
  /** The audit read model: the checkpoints and the heads they recorded. */
  queries: AuditQueries;
  /** Waits for the audit read model to pass a position (read-your-writes of an on-demand checkpoint). */
  readYourWrites: WaitForReadModels;
  /** The timer's round (CHECKPOINT_INTERVAL_MS unless a test says otherwise). */
  intervalMs?: number;
  /**
   * Where the checkpointer runs: in a worker thread of its own when given (its module, and how it
   * reaches the log: the composition root's), else on this thread.
   */
  thread?: { module: string; store: unknown; onAppended?(): void };
}

/** Signed checkpoints: taken (every minute the log grew, or now), read back, proved, and the keys that verify them. */
export class CheckpointService {
  readonly checkpointer: CheckpointTaker;
  readonly reads: CheckpointReads;
  /** The public halves only: the private keys stay in the Checkpointer. */
  readonly publicKeys: PublicJwk[];

  constructor(private readonly deps: CheckpointServiceDeps) {
    this.reads = new CheckpointReads(deps.queries);
    const intervalMs = deps.intervalMs ?? CHECKPOINT_INTERVAL_MS;
    const onSigned = (checkpoint: Checkpoint, tree: BlockedTree) => this.reads.remember(checkpoint.id, tree);
    const { thread } = deps;
    this.checkpointer = thread
      ? new CheckpointerThread({
          module: thread.module,
          data: { store: thread.store, keys: deps.keys, intervalMs, logLevel: deps.log.level },
          log: deps.log,
          onSigned,
          onAppended: thread.onAppended,
        })
      : new Checkpointer({ ...deps, heads: deps.queries, intervalMs, onSigned });
    this.publicKeys = deps.keys.map(publicJwkOf);
  }

  start(): void {
    this.checkpointer.start();
  }

  stop(): Promise<void> {
    return this.checkpointer.stop();
  }

  /** A checkpoint now, answered once the auditor routes can read it. */
  async now(): Promise<Checkpoint> {
    const checkpoint = await this.checkpointer.checkpointNow();
    await this.deps.readYourWrites(this.checkpointer.appendedAt, [AUDIT_READ_MODEL]);
    return checkpoint;
  }
}
