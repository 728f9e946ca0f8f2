import type { Logger } from 'pino';
import type { RecordedEvent } from '../../eventstore/port';
import { storableText } from '../../eventstore/storable';
import { isOutage } from '../outage';
import type { Checkpoints, ProjectionFailure } from './checkpoints';
import { LIMITS } from '../limits';

/** A consumer that cannot handle an event retries it after 1 s, 2 s, 4 s ... and then every minute. */
const FAILURE_BACKOFF_MS = LIMITS.consumers.failureBackoffMs;
const FAILURE_BACKOFF_MAX_MS = LIMITS.consumers.failureBackoffMaxMs;

/**
 * A batch that cannot be handled yet through no fault of its events (what it reads lags behind):
 * retried as it is, like a database out of reach, never recorded as a failure of an event.
 */
export class RetryLater extends Error {
  override name = 'RetryLater';
}

/**
 * Errors that say nothing about the events: the database out of reach, a transaction that lost a
 * race or a lock (serialization_failure, deadlock_detected, lock_not_available, query_canceled), or
 * RetryLater. A consumer retries them as they are; only other errors stop it on an event.
 */
const TRANSIENT_STATES = new Set(['40001', '40P01', '55P03', '57014']);
export const isTransientFailure = (error: unknown): boolean =>
  error instanceof RetryLater || isOutage(error) || TRANSIENT_STATES.has(String((error as { code?: unknown } | null)?.code ?? ''));

type Known = ProjectionFailure & { retryAtMs: number };

/**
 * The consumers of one loop that are stopped on an event, as far as this node knows: its own
 * (recorded in their checkpoint rows) and those other nodes recorded (seen at lease renewals).
 */
export class Failures {
  private readonly byName = new Map<string, Known>();

  constructor(
    private readonly checkpoints: Checkpoints,
    private readonly log?: Logger,
  ) {}

  has(name: string): boolean {
    return this.byName.has(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  /** A failure read from a checkpoint row (another node's, or the last owner's): its retry is due at once. */
  adopt(name: string, failure: ProjectionFailure): void {
    this.byName.set(name, { ...failure, retryAtMs: Date.now() });
  }

  forget(name: string): void {
    this.byName.delete(name);
  }

  /** True when this consumer is stopped and its retry is due. */
  due(name: string): boolean {
    const failure = this.byName.get(name);
    return failure !== undefined && failure.retryAtMs <= Date.now();
  }

  /** How long until the first retry due among `owned` (at least 10 ms). */
  untilNextRetryMs(owned: Set<string>): number {
    let soonest = Number.POSITIVE_INFINITY;
    for (const [name, f] of this.byName) if (owned.has(name)) soonest = Math.min(soonest, f.retryAtMs - Date.now());
    return Math.max(10, soonest);
  }

  /** `name`, at `position`, failed on `event`: recorded here and in its checkpoint row, with its next retry. */
  async record(name: string, position: string, event: RecordedEvent, error: unknown): Promise<void> {
    const previous = this.byName.get(name);
    const sameEvent = previous?.event.position === event.position;
    const attempts = sameEvent ? (previous?.attempts ?? 0) + 1 : 1;
    const delayMs = Math.min(FAILURE_BACKOFF_MAX_MS, FAILURE_BACKOFF_MS * 2 ** (attempts - 1));
    const retryAtMs = Date.now() + delayMs;
    const failure: ProjectionFailure = {
      since: (sameEvent && previous?.since) || new Date().toISOString(),
      position,
      event: { position: event.position, id: event.id, stream: event.stream, type: event.type },
      // The message may quote the very text that broke it: kept storable.
      error: storableText((error instanceof Error ? error.message : String(error)).slice(0, 2_000)),
      attempts,
      nextRetryAt: new Date(retryAtMs).toISOString(),
    };
    this.byName.set(name, { ...failure, retryAtMs });
    this.log?.error({ consumer: name, event: failure.event, err: error, attempts, retryInMs: delayMs }, 'log consumer stopped on an event it cannot handle');
    await this.checkpoints.setFailure(name, failure);
  }

  /** `name` handled the event it had stopped on: it goes on. */
  async clear(name: string): Promise<void> {
    const failure = this.byName.get(name);
    this.byName.delete(name);
    this.log?.info({ consumer: name, event: failure?.event, attempts: failure?.attempts }, 'log consumer handled the event it had stopped on and goes on');
    await this.checkpoints.setFailure(name, null);
  }
}
