import type { Decider, DomainEvent } from '../decider';
import type { SnapshotStore } from './snapshots';
import { eventIdFor, uuidV7 } from '../ids';
import type { EventMetadata, EventStore } from '../../eventstore/port';

/** Who asked, and why: carried into every event's metadata. */
export interface CommandContext {
  /** Unique per command; event ids derive from it, so a retry with the same id is a no-op. */
  commandId: string;
  metadata: EventMetadata;
  /**
   * The command id was made up for this one command (the caller gave no key), so no later request
   * can send the same command again: its events take random ids (time-ordered, version 7: the log's
   * event-id index then grows at its right edge), cheaper to make than derived (name-hashed) ones.
   * (The store adapter's own retries re-send the same events, ids included; a command decided again
   * after a conflict had nothing stored, so its new ids repeat nothing.)
   */
  unkeyed?: boolean;
}

export interface Loaded<State> {
  state: State;
  /** -1 when the stream does not exist. */
  revision: number;
}

/**
 * Folded states of recently used streams, keyed by decider and stream. A load reads the events after
 * the cached revision (usually none) and folds them in, so its state is the stored one; only a load
 * that says so (`trustCache`, a command's first attempt, see Reads) takes the state without reading,
 * and that command appends at the state's revision or decides again. The cache saves re-reading a
 * long stream from its start.
 */
export class StateCache {
  private readonly entries = new Map<string, Loaded<unknown>>();
  private readonly ids = new WeakMap<object, number>();
  private nextId = 0;

  /** Where states of long streams are kept across restarts and nodes (deciders with a codec only). */
  snapshots: SnapshotStore | undefined;
  /** A snapshot is taken every this many events of a stream, and after a load that folded as many. */
  snapshotEvery = 1_000;

  constructor(private readonly maxEntries = 50_000) {}

  key(decider: object, stream: string): string {
    let id = this.ids.get(decider);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(decider, id);
    }
    return `${id}|${stream}`;
  }

  /** Forgets every state (they are loaded again, from a snapshot where there is one). */
  clear(): void {
    this.entries.clear();
  }

  get<State>(key: string): Loaded<State> | undefined {
    const entry = this.entries.get(key) as Loaded<State> | undefined;
    if (entry) {
      // Most recently used last, so eviction takes the oldest.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  /**
   * Write-through after a successful append: when the cached state is the one the append was
   * decided on (its revision is just before the new events), fold them in; otherwise leave it: a
   * state behind the stream is still a stored one, and a load that does not trust the cache reads
   * the events after it (a caller that trusts it appends at its revision, which then fails).
   */
  advance<State, Event extends DomainEvent>(
    decider: Pick<Decider<State, unknown, Event>, 'evolve' | 'snapshot'>,
    stream: string,
    events: Array<{ type: string; data: unknown }>,
    nextRevision: number,
  ): void {
    const key = this.key(decider, stream);
    const entry = this.entries.get(key) as Loaded<State> | undefined;
    if (!entry) return;
    if (entry.revision !== nextRevision - events.length) {
      // Behind (another append, settled after this one, moved the stream in between) or ahead: the
      // entry stays as it is. A load reads only the events after it, where forgetting it would make
      // the next load read the stream from its snapshot, hundreds of events (appends at any revision,
      // like credits, settle out of order all the time).
      return;
    }
    const state = events.reduce((s, e) => decider.evolve(s, e as Event), entry.state);
    const loaded = { state, revision: nextRevision };
    this.entries.set(key, loaded);
    // At every revision that is a multiple of `snapshotEvery`, never at a stream's first event (from -1 to 0).
    const every = this.snapshotEvery;
    if (this.snapshots && decider.snapshot && Math.floor(nextRevision / every) > Math.floor(Math.max(entry.revision, 0) / every))
      this.snapshots.write(stream, decider.snapshot, loaded);
  }

  set<State>(key: string, loaded: Loaded<State>): void {
    const current = this.entries.get(key);
    if (current && current.revision > loaded.revision) return;
    this.entries.delete(key);
    this.entries.set(key, loaded);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }
}

/**
 * A fact of a stream that never changes once set (which account a user holds, which account a card
 * spends from): from the cached state when it already knows it, else from the stream read again (a
 * cached state may predate the fact; it cannot contradict it). Null while the stream does not know it.
 */
export async function settledFact<State, Event extends DomainEvent, Fact>(
  store: EventStore,
  cache: StateCache,
  stream: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve' | 'snapshot'>,
  fact: (state: State) => Fact | null | undefined,
): Promise<Fact | null> {
  for (const trustCache of [true, false]) {
    const known = fact((await load(store, stream, decider, { cache, trustCache })).state);
    if (known !== null && known !== undefined) return known;
  }
  return null;
}

export async function load<State, Event extends DomainEvent>(
  store: EventStore,
  stream: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve' | 'snapshot'>,
  /**
   * `trustCache`: answer from the cache without reading, when the caller will append at the
   * revision it got (a stale state then fails that append, and the caller loads again).
   */
  options: { untilTime?: Date; cache?: StateCache; trustCache?: boolean } = {},
): Promise<Loaded<State>> {
  const cache = options.untilTime ? undefined : options.cache;
  const key = cache?.key(decider, stream);
  const cached = key ? cache?.get<State>(key) : undefined;
  if (cached && options.trustCache) return cached;
  // Not in memory: start from the stream's snapshot, when there is one (never for a past instant).
  const codec = decider.snapshot;
  const base = cached ?? (cache?.snapshots && codec ? await cache.snapshots.read(stream, codec) : undefined);
  const events = await store.readStream(stream, { untilTime: options.untilTime, fromRevision: base ? base.revision + 1 : 0 });
  let state = base ? base.state : decider.initialState();
  for (const e of events) state = decider.evolve(state, { type: e.type, data: e.data } as Event);
  const loaded = { state, revision: events.length ? (events[events.length - 1]?.revision ?? -1) : (base?.revision ?? -1) };
  if (key && cache) {
    cache.set(key, loaded);
    if (cache.snapshots && codec && events.length >= cache.snapshotEvery) cache.snapshots.write(stream, codec, loaded);
  }
  return loaded;
}

/** The metadata of a command's events: its own, with the command as their cause unless it names another. */
export function eventMetadata(ctx: CommandContext): EventMetadata {
  return { ...ctx.metadata, causationId: ctx.metadata.causationId ?? ctx.commandId };
}

/** A command's events as appended: ids from the command (or new, unkeyed), `metadata` shared by them. */
export function toNewEvents(ctx: CommandContext, stream: string, events: DomainEvent[], offset = 0, metadata = eventMetadata(ctx)) {
  return events.map((e, i) => ({
    id: ctx.unkeyed ? uuidV7() : eventIdFor(ctx.commandId, stream, offset + i),
    type: e.type,
    data: e.data,
    metadata,
  }));
}
