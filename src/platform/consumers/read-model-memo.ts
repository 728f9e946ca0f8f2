import type { RecordedEvent } from '../../eventstore/port';
import type { Projections } from './projections';

export interface MemoOptions {
  /** A remembered answer is read again after this long, whatever happened. */
  ttlMs: number;
  /** Most remembered answers; past it, all are forgotten. */
  maxEntries: number;
  /** The tags whose answers an event makes stale (see remember). */
  staleAfter(event: RecordedEvent): string[];
}

/**
 * Answers read from read models, remembered so that a request asking again makes no round trip to
 * the database, and never used stale.
 *
 * A remembered answer is only used while this node's projection runner owns every projection it was
 * read from: the runner then applies every event of theirs, and tells this memo right after the
 * commit, before any read-your-writes wait of the request that wrote the event returns, so the
 * answers that event makes stale are forgotten before anyone could read them again. On a node that
 * does not own them (several nodes), every request asks the database. Any doubt (a lease taken or
 * lost, a checkpoint moved by a rebuild or another node) forgets everything.
 */
export class ReadModelMemo<Value> {
  private readonly entries = new Map<string, { value: Value; until: number }>();
  private readonly keysOfTag = new Map<string, Set<string>>();
  /** Moves at every forget, so that an answer read before it is not remembered after it. */
  private moved = 0;
  /** Answers given from memory. */
  hits = 0;

  constructor(
    private readonly engine: Projections,
    private readonly names: string[],
    private readonly options: MemoOptions,
  ) {
    engine.observe({ names, onEvents: (events) => this.onEvents(events), onReset: () => this.clear() });
  }

  /** A projection stopped on an event misses every later one: nothing is remembered or used then. */
  private get usable(): boolean {
    return this.names.every((n) => this.engine.owns(n) && !this.engine.isStopped(n));
  }

  /** Taken before reading the database; given back to remember() with what was read. */
  get generation(): number {
    return this.moved;
  }

  get(key: string): Value | undefined {
    if (!this.usable) return undefined;
    const known = this.entries.get(key);
    if (!known || known.until <= Date.now()) return undefined;
    this.hits++;
    return known.value;
  }

  /** Remembers what was read at `generation`, unless something was forgotten since. */
  remember(key: string, value: Value, tags: string[], generation: number): void {
    if (generation !== this.moved || !this.usable) return;
    if (this.entries.size >= this.options.maxEntries) this.clear();
    this.entries.set(key, { value, until: Date.now() + this.options.ttlMs });
    for (const tag of tags) {
      let keys = this.keysOfTag.get(tag);
      if (!keys) {
        keys = new Set();
        this.keysOfTag.set(tag, keys);
      }
      keys.add(key);
    }
  }

  private onEvents(events: RecordedEvent[]): void {
    for (const e of events) {
      for (const tag of this.options.staleAfter(e)) {
        this.moved++;
        for (const key of this.keysOfTag.get(tag) ?? []) this.entries.delete(key);
        this.keysOfTag.delete(tag);
      }
    }
  }

  private clear(): void {
    this.moved++;
    this.entries.clear();
    this.keysOfTag.clear();
  }
}
