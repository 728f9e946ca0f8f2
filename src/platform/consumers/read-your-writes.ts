import type { Logger } from 'pino';
import { comparePositions } from '../../eventstore/port';
import type { Projections } from './runner';

/** Waits (bounded) until the named projections have passed a position this request appended. */
export type WaitForReadModels = (position: string | undefined, names: string[]) => Promise<void>;

/** Notes a write answered without waiting for the read models, under a scope (see writeScope). */
export type NoteWrite = (scope: string, position: string | undefined) => void;

/**
 * A partner's writes to a read model that were answered without waiting for it (noteWrite): the
 * partner's next read of that model waits for them.
 */
export const writeScope = (model: string, partnerId: string) => `${model}:${partnerId}`;

/**
 * Read-your-writes, the one mechanism: a request that wrote waits for the projections it reads to pass
 * its position (waitFor). Writes whose route answers from its own events (a transfer) do not wait;
 * they note their position under a scope (a partner's ledger, noteWrite), and the scope's next read
 * waits for it instead (readAfterWrites): a partner that moved money and then reads sees the
 * movement on this node, while the write path never waits for a projection.
 */
export class ReadYourWrites {
  /** Per scope, the last position appended without waiting for the projections. */
  private readonly lastWrites = new Map<string, string>();

  constructor(
    private readonly engine: Pick<Projections, 'waitFor' | 'isStopped' | 'passed'>,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {}

  readonly noteWrite: NoteWrite = (scope, position) => {
    if (!position) return;
    const known = this.lastWrites.get(scope);
    if (!known || comparePositions(known, position) < 0) this.lastWrites.set(scope, position);
  };

  /** Waits (bounded) until the named projections have passed the scope's last noted write. */
  readonly readAfterWrites = async (scope: string, names: string[]): Promise<void> => {
    const position = this.lastWrites.get(scope);
    if (!position) return;
    await this.waitFor(position, names);
    if (this.lastWrites.get(scope) === position && this.engine.passed(position, names)) this.lastWrites.delete(scope);
  };

  readonly waitFor: WaitForReadModels = async (position, names) => {
    if (!position) return;
    const caughtUp = await this.engine.waitFor(position, { names, timeoutMs: this.timeoutMs });
    // A projection stopped on an event has already said so (once per attempt); each request need not.
    if (!caughtUp && !names.some((n) => this.engine.isStopped(n)))
      this.log.warn({ position, names }, 'read-your-writes wait timed out; answering from a lagging read model');
  };
}
