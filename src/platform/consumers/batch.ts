import type { Logger } from 'pino';
import { comparePositions, type EventStore, type RecordedEvent, readAllWithHead } from '../../eventstore/port';
import type { Sql } from '../../eventstore/sql';
import type { Checkpoints } from './checkpoints';
import { type Failures, isTransientFailure } from './failures';
import type { LogHandler, LoopOptions, Selection, Writes } from './handler';

class CheckpointMoved extends Error {}

/** What a batch needs of its loop (LogConsumer). */
export interface Loop {
  readonly store: EventStore;
  readonly sql: Sql;
  readonly checkpoints: Checkpoints;
  readonly failures: Failures;
  readonly options: LoopOptions;
  readonly log?: Logger;
  readonly handlers: LogHandler[];
  /** Each handler's position, as this node knows it. */
  readonly positions: Map<string, string>;
  /** The handlers whose lease this node holds. */
  readonly owned: Set<string>;
  /** A batch of `names` committed `events` (the observers are told), or found a checkpoint moved (null). */
  committed(names: string[], events: RecordedEvent[] | null): Promise<void>;
  /** Renews the leases now (a slow step must not outlive them). */
  renewLeases(): Promise<void>;
}

/** What one batch did. */
export type Batch = 'unowned' | 'idle' | 'again' | { full: boolean };

/**
 * One batch of every handler this node owns and that is not stopped: the events of their types
 * past the lowest checkpoint (handlers may stand at different positions, after a rebuild), each
 * handed only the events past its own checkpoint, committed with every checkpoint moved. With
 * `contain`, a batch that fails is retried handler by handler (advanceAlone); without, it throws.
 */
export async function runBatch(loop: Loop, contain: boolean): Promise<Batch> {
  // A handler stopped on an event is left out (its retry is in the loop's round), so the others go on.
  const owned = loop.handlers.filter((h) => loop.owned.has(h.name) && !loop.failures.has(h.name));
  if (owned.length === 0) return 'unowned';
  const from = owned.map((h) => loop.positions.get(h.name) ?? '').reduce((a, b) => (comparePositions(a, b) <= 0 ? a : b));
  const selections = await selectionsOf(owned);
  const { batchSize } = loop.options;
  const maxCount = Math.min(batchSize, ...selections.map((s) => s.maxCount ?? batchSize));
  const types = [...new Set(selections.flatMap((s) => s.eventTypes))];
  const { head, events } = await readAllWithHead(loop.store, {
    fromPosition: from || undefined,
    filter: { eventTypes: types },
    maxCount,
    projectionOnly: true,
  });
  const last = events[events.length - 1]?.position ?? from;
  // A short read drained every visible event of these types: all of them up to `head` (read in
  // the same snapshot, or before) are in it, so the checkpoints may move to the head, past events
  // nobody here needs.
  const to = events.length < maxCount && comparePositions(head, last) > 0 ? head : last;
  const behind = owned.filter((h) => comparePositions(loop.positions.get(h.name) ?? '', to) < 0);
  if (behind.length === 0) return 'idle';
  try {
    await commit(
      loop,
      behind,
      to,
      events,
      selections.filter((_, i) => behind.includes(owned[i] as LogHandler)),
    );
  } catch (error) {
    // The batch of all of them failed: unless it is transient, find which handler (and which
    // event) it was, moving each of them as far as it can go alone.
    if (!contain || isTransientFailure(error)) throw error;
    loop.log?.warn({ err: error, consumers: behind.map((h) => h.name) }, `${loop.options.label} batch failed: handling each alone`);
    for (const h of behind) await advanceAlone(loop, h, to);
    return 'again';
  }
  return { full: events.length >= maxCount };
}

/**
 * The handlers' writes, then one transaction: every checkpoint moved compare-and-set (from the
 * position this node knows, while it holds the lease), and the writes made. A checkpoint moved by
 * someone else (a rebuild's swap, another node) undoes all; the loop then reads the positions again.
 */
async function commit(loop: Loop, handlers: LogHandler[], to: string, events: RecordedEvent[], selections: Selection[]): Promise<void> {
  const names = handlers.map((h) => h.name);
  const from = names.map((n) => loop.positions.get(n) ?? '');
  const writes: Writes[] = [];
  for (const [i, h] of handlers.entries()) {
    const position = from[i] ?? '';
    const types = selections[i]?.eventTypes ?? h.eventTypes;
    const mine = events.filter((e) => comparePositions(e.position, position) > 0 && types.includes(e.type));
    if (mine.length) writes.push(await h.handle(mine));
  }
  const moved = await loop.sql
    .transaction(
      async (tx) => {
        if (!(await loop.checkpoints.move(tx, names, from, to))) throw new CheckpointMoved();
        for (const write of writes) await write(tx);
        return true;
      },
      { asynchronousCommit: !loop.options.durable },
    )
    .catch((error) => {
      if (error instanceof CheckpointMoved) return false;
      throw error;
    });
  if (moved) {
    for (const n of names) loop.positions.set(n, to);
    for (const h of handlers) h.afterCommit?.();
  }
  await loop.committed(names, moved ? events : null);
}

/**
 * Moves one handler alone, an event at a time, up to `upTo` (or a batch's worth, for a retry): the
 * events it can handle are committed, and the first it cannot becomes its failure, retried with
 * backoff. Passing the event it had failed on clears the failure.
 */
export async function advanceAlone(loop: Loop, h: LogHandler, upTo?: string): Promise<void> {
  let leaseCheckedAt = Date.now();
  for (let step = 0; step < loop.options.batchSize; step++) {
    // Stepping is slow: it must not outlive the lease (another node would take over meanwhile).
    if (Date.now() - leaseCheckedAt > loop.options.leaseRenewEveryMs) {
      await loop.renewLeases();
      leaseCheckedAt = Date.now();
    }
    if (!loop.owned.has(h.name)) return;
    const from = loop.positions.get(h.name) ?? '';
    if (upTo !== undefined && comparePositions(from, upTo) >= 0) return;
    const selections = await selectionsOf([h]);
    const eventTypes = selections[0]?.eventTypes ?? h.eventTypes;
    const [next] = await loop.store.readAll({ fromPosition: from || undefined, filter: { eventTypes }, maxCount: 1, projectionOnly: true });
    if (!next || (upTo !== undefined && comparePositions(next.position, upTo) > 0)) {
      // Nothing of its types up to there: the batch's position is its own too.
      if (upTo !== undefined) await commit(loop, [h], upTo, [], selections);
      return;
    }
    try {
      await commit(loop, [h], next.position, [next], selections);
    } catch (error) {
      if (isTransientFailure(error)) throw error;
      await loop.failures.record(h.name, from, next, error);
      return;
    }
    // The checkpoint moved elsewhere (a rebuild, another node): nothing was handled here.
    if (loop.positions.get(h.name) !== next.position) return;
    if (loop.failures.has(h.name)) {
      await loop.failures.clear(h.name);
      // A retry that got past its event rejoins the others' batches.
      if (upTo === undefined) return;
    }
  }
}

/** What each handler reads next (handlers without a select read all their types). */
const selectionsOf = (handlers: LogHandler[]): Promise<Selection[]> => Promise.all(handlers.map((h) => (h.select ? h.select() : { eventTypes: h.eventTypes })));
