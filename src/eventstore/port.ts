/**
 * The event store port. Both adapters (Postgres/PGlite and KurrentDB) implement it and pass the
 * same conformance suite (test/eventstore/conformance.ts).
 *
 * Conventions (the Kurrent ones): stream revisions are 0-based; an absent stream has revision -1.
 * Global positions are opaque strings that sort lexicographically in commit-visibility order
 * (see each adapter for how they are built); compare them with `comparePositions`.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type ExpectedRevision = bigint | number | 'no_stream' | 'stream_exists' | 'any';

export type ActorKind = 'partner' | 'user' | 'operator' | 'provider' | 'auditor' | 'system';

export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  actor?: { kind: ActorKind; id: string };
  [key: string]: Json | undefined | { kind: ActorKind; id: string };
}

/** An event to append. `id` must be a UUID; the same id appended again is a no-op. */
export interface NewEvent<Type extends string = string, Data extends JsonObject = JsonObject> {
  id: string;
  type: Type;
  data: Data;
  metadata?: EventMetadata;
}

export interface RecordedEvent<Type extends string = string, Data extends JsonObject = JsonObject> {
  id: string;
  stream: string;
  /** 0-based revision inside its stream. */
  revision: number;
  /** Global position: opaque, lexicographically ordered. */
  position: string;
  type: Type;
  data: Data;
  metadata: EventMetadata;
  /** ISO 8601 instant at which the event was recorded. */
  recordedAt: string;
  /** sha256 hex of (previous event's hash of the stream + this event's content digest). */
  hash: string;
  /** The hash of the event before it in its stream ('' at revision 0): only when read with `withPreviousHash`, from an adapter that gives it. */
  previousHash?: string;
}

export interface AppendResult {
  /** Revision of the stream after the append (its last event). */
  nextRevision: number;
  /** Global position of the last appended event. */
  position: string;
}

export interface StreamAppend {
  stream: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

export interface ReadStreamOptions {
  fromRevision?: number;
  toRevision?: number;
  /** Only events recorded at or before this instant. */
  untilTime?: Date;
  maxCount?: number;
}

export interface EventFilter {
  /** Keep events whose stream starts with one of these prefixes. */
  streamPrefixes?: string[];
  /** Keep events of these types. */
  eventTypes?: string[];
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. Undefined = from the start. */
  fromPosition?: string;
  filter?: EventFilter;
  maxCount?: number;
  /**
   * Only what projections read: the events come with empty `metadata` ({}) and `hash` (''), which
   * saves the store sending and the caller parsing them. An adapter may ignore it.
   */
  projectionOnly?: boolean;
  /**
   * Each event with `previousHash`, the link of its hash chain (an auditor's export shows it). An
   * adapter may ignore it: the caller then finds the previous hash itself.
   */
  withPreviousHash?: boolean;
  /**
   * Only what a stream's head is made of: the events come with their `hash` but empty `data` and
   * `metadata` ({}), which saves sending and parsing them (the audit checkpointer follows the log so).
   * An adapter may ignore it.
   */
  headsOnly?: boolean;
}

export interface Subscription {
  stop(): Promise<void>;
}

export interface SubscribeOptions extends ReadAllOptions {
  onEvents(events: RecordedEvent[]): Promise<void>;
  onError?(error: unknown): void;
  /** Poll interval when no local append wakes the subscription up. */
  pollIntervalMs?: number;
}

/**
 * Idempotency by event id, as every adapter keeps it: an append sent again (the same ids with the
 * same content, in the same order) answers what the first one did and stores nothing twice:
 * - at a revision (a number or no_stream), however far the stream has moved on since;
 * - at 'any' or 'stream_exists', while at most 64 events (KurrentDB's RETRY_LOOKBACK) have followed
 *   it in its stream; Postgres recognizes it at any distance.
 * Some ids of an append stored and some not, or its ids stored with other content (an append that
 * lost a race to one with the same ids and other content, say), is EventIdConflictError: one
 * content is stored, and only an append of that content is told it was appended. Ids are unique
 * within a stream; Postgres also refuses an id stored in another stream, KurrentDB does not look
 * there (Tally's ids are derived per stream, so none repeats across streams).
 */
export interface EventStore {
  readonly kind: 'postgres' | 'pglite' | 'kurrentdb';
  /** Appends to one stream with optimistic concurrency. Idempotent by event id (see above). */
  append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /** Appends to several streams atomically: all or nothing. Idempotent by event id (see above). */
  appendMany(appends: StreamAppend[]): Promise<AppendResult[]>;
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  subscribe(options: SubscribeOptions): Subscription;
  /** The position of the last event a reader can see now ('' when the log is empty). */
  headPosition(): Promise<string>;
  /**
   * readAll and headPosition as of one moment, in one round trip (a consumer's batch needs both):
   * every event of the read's types up to `head` is in `events`, unless `maxCount` cut the read
   * short. Optional: readAllWithHead (below) reads the head, then the events, without it.
   */
  readAllWithHead?(options?: ReadAllOptions): Promise<{ head: string; events: RecordedEvent[] }>;
  /** Resolves when something was appended through this process, or after `timeoutMs`. */
  waitForAppend(timeoutMs: number): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const START_POSITION = '';

/** The store's readAllWithHead, or the head read first and then the events (later, so they hold all up to it). */
export async function readAllWithHead(store: EventStore, options?: ReadAllOptions): Promise<{ head: string; events: RecordedEvent[] }> {
  if (store.readAllWithHead) return store.readAllWithHead(options);
  const head = await store.headPosition();
  return { head, events: await store.readAll(options) };
}

export function comparePositions(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A bounded queue is full (too much waits already): nothing was done, try again shortly. The HTTP
 * layer answers 503 with Retry-After, like a store out of reach, without calling it an outage.
 */
export class OverloadedError extends Error {
  constructor(what: string) {
    super(`Overloaded: ${what}`);
    this.name = 'OverloadedError';
  }
}

export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    readonly actual: number,
  ) {
    super(`Wrong expected revision for stream ${stream}: expected ${String(expected)}, actual ${actual}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/** Some of an append's event ids are stored and some not, or its ids are stored with other content. */
export class EventIdConflictError extends Error {
  constructor(readonly eventId: string) {
    super(`Event id ${eventId} is already stored with other content`);
    this.name = 'EventIdConflictError';
  }
}

export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('Event store unavailable', { cause });
    this.name = 'StoreUnavailableError';
  }
}

export function normalizeExpected(expected: ExpectedRevision): number | 'no_stream' | 'stream_exists' | 'any' {
  if (typeof expected === 'bigint') return normalizeExpected(Number(expected));
  if (typeof expected === 'number') {
    if (expected === -1) return 'no_stream';
    if (!Number.isInteger(expected) || expected < -1) throw new Error(`Invalid expected revision ${expected}`);
  }
  return expected;
}
