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

export type ActorKind = 'partner' | 'user' | 'operator' | 'provider' | 'system';

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

export interface EventStore {
  readonly kind: 'postgres' | 'pglite' | 'kurrentdb';
  /** Appends to one stream with optimistic concurrency. Idempotent by event id. */
  append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /** Appends to several streams atomically: all or nothing. Idempotent by event id. */
  appendMany(appends: StreamAppend[]): Promise<AppendResult[]>;
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  subscribe(options: SubscribeOptions): Subscription;
  /** The position of the last event a reader can see now ('' when the log is empty). */
  headPosition(): Promise<string>;
  /** Resolves when something was appended through this process, or after `timeoutMs`. */
  waitForAppend(timeoutMs: number): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const START_POSITION = '';

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

/** An event id is already stored, but the retried append does not match what was stored with it. */
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
  if (typeof expected === 'bigint') return Number(expected);
  if (typeof expected === 'number') {
    if (expected === -1) return 'no_stream';
    if (!Number.isInteger(expected) || expected < -1) throw new Error(`Invalid expected revision ${expected}`);
  }
  return expected;
}
