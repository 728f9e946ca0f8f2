import type { Logger } from 'pino';
import type { Checkpoint } from '../../platform/audit/checkpoint';
import { BlockedTree, type TreeParts } from '../../platform/audit/merkle-stream';
import type { AuditKey } from '../../platform/audit/signing';
import { LIMITS } from '../../platform/limits';
import { ModuleThread } from '../../platform/module-thread';
import type { CheckpointTaker } from './checkpointer';

/** What the checkpointer's thread is started with: the composition root's part (how to reach the log) and the checkpointer's. */
export interface CheckpointerThreadData {
  /** The composition root's: the worker's module builds its store from it. */
  store: unknown;
  keys: AuditKey[];
  intervalMs: number;
  logLevel: string;
}

/** What each call answers: its result, and the checkpointer's state after it. */
export interface CheckpointerReply {
  result: unknown;
  held: number;
  appendedAt: string;
}

/** Told by the thread when it signed (on its timer or on demand): the checkpoint, its tree, the state after it. */
export interface CheckpointerSigned {
  checkpoint: Checkpoint;
  tree: TreeParts;
  held: number;
  appendedAt: string;
}

export interface CheckpointerThreadOptions {
  /** The worker's module (the composition root's): it serves start, stop, checkpointNow and checkpointIfGrown over a Checkpointer. */
  module: string;
  data: CheckpointerThreadData;
  log: Logger;
  /** Each checkpoint signed there, with its tree (kept for proofs). */
  onSigned(checkpoint: Checkpoint, tree: BlockedTree): void;
  /** The thread appended to the log: the node's readers of the log look now rather than at their next poll. */
  onAppended?(): void;
}

/**
 * This node's checkpointer in a worker thread of its own (Postgres): its minute (the log's heads read,
 * the tree folded over every stream, the heads appended) no longer holds the requests' event loop.
 * The main thread keeps what the routes read of it: the trees of the checkpoints signed there (for
 * proofs), and its state as of its last message. A thread that ends while it should run is started
 * again and goes on from the audit read model, as a restarted node would.
 */
export class CheckpointerThread implements CheckpointTaker {
  held = 0;
  appendedAt = '';
  private running = false;
  private readonly thread: ModuleThread;

  constructor(private readonly options: CheckpointerThreadOptions) {
    this.thread = new ModuleThread({
      file: options.module,
      data: options.data,
      log: options.log,
      background: true,
      onEvent: (name, payload) => name === 'signed' && this.signed(payload as CheckpointerSigned),
      onExit: (code) => {
        if (!this.running) return;
        options.log.error({ exitCode: code }, 'the checkpointer thread exited: starting a new one');
        setTimeout(() => this.running && this.begin(), LIMITS.consumers.threadRestartMs).unref();
      },
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.begin();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.thread.stop();
  }

  checkpointNow(): Promise<Checkpoint> {
    return this.call('checkpointNow') as Promise<Checkpoint>;
  }

  checkpointIfGrown(): Promise<Checkpoint | null> {
    return this.call('checkpointIfGrown') as Promise<Checkpoint | null>;
  }

  private begin(): void {
    this.call('start').catch((error) => this.options.log.error({ err: error }, 'the checkpointer thread did not start'));
  }

  private async call(method: string): Promise<unknown> {
    const reply = (await this.thread.call(method)) as CheckpointerReply;
    this.note(reply);
    return reply.result;
  }

  private signed(told: CheckpointerSigned): void {
    this.options.onSigned(told.checkpoint, BlockedTree.of(told.tree));
    this.note(told);
  }

  private note(state: { held: number; appendedAt: string }): void {
    this.held = state.held;
    if (state.appendedAt === this.appendedAt) return;
    this.appendedAt = state.appendedAt;
    this.options.onAppended?.();
  }
}
