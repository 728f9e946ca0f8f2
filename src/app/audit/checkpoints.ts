import type { Logger } from 'pino';
import type { EventStore } from '../../eventstore/port';
import type { Checkpoint } from '../../platform/audit/checkpoint';
import { type AuditKey, type PublicJwk, publicJwkOf } from '../../platform/audit/signing';
import { CheckpointReads } from './checkpoint-reads';
import { Checkpointer } from './checkpointer';

/** The checkpoints' cadence: a minute in which the log grew gets one. */
export const CHECKPOINT_INTERVAL_MS = 60_000;

export interface CheckpointServiceDeps {
  store: EventStore;
  /** The audit keys of ServiceKeys: the newest signs, all are published. */
  keys: AuditKey[];
  log: Logger;
}

/** Signed checkpoints: taken (every minute the log grew, or now), read back, proved, and the keys that verify them. */
export class CheckpointService {
  readonly checkpointer: Checkpointer;
  readonly reads: CheckpointReads;
  /** The public halves only: the private keys stay in the Checkpointer. */
  readonly publicKeys: PublicJwk[];

  constructor(deps: CheckpointServiceDeps) {
    this.checkpointer = new Checkpointer({ ...deps, intervalMs: CHECKPOINT_INTERVAL_MS });
    this.reads = new CheckpointReads(deps.store);
    this.publicKeys = deps.keys.map(publicJwkOf);
  }

  start(): void {
    this.checkpointer.start();
  }

  stop(): Promise<void> {
    return this.checkpointer.stop();
  }

  now(): Promise<Checkpoint> {
    return this.checkpointer.checkpointNow();
  }
}
