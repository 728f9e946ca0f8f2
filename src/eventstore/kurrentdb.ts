import { EventEmitter } from 'node:events';
import * as kdb from '@kurrent/kurrentdb-client';
import { chainHash, eventDigest, GENESIS_HASH } from './hash';
import { StreamLanes } from './lanes';
import { assertStorable } from './storable';
import {
  type AppendResult,
  EventIdConflictError,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type JsonObject,
  type NewEvent,
  normalizeExpected,
  OverloadedError,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  StoreUnavailableError,
  WrongExpectedRevisionError,
} from './port';
import { runSubscription } from './subscription';
import { LIMITS } from '../platform/limits';

const MAX_READ_BATCH = LIMITS.store.readBatch;
/** Smallest $all page, so that client-side filtering never degrades into one-event round trips. */
const MIN_ALL_PAGE = 100;
/**
 * Plans an append goes through (each reads the streams again) before it gives up: after a conflict
 * of an 'any' append (someone else wrote the tail first), or an answer that leaves the outcome
 * unknown (a timeout, an internal error, no reply). Bounded in number and in time.
 */
const MAX_APPEND_ATTEMPTS = LIMITS.kurrentdb.appendAttempts;
const APPEND_BUDGET_MS = LIMITS.kurrentdb.appendBudgetMs;
/** Full-jitter backoff between plans: a random wait up to min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2^attempt). */
const BACKOFF_BASE_MS = LIMITS.kurrentdb.backoffBaseMs;
const BACKOFF_MAX_MS = LIMITS.kurrentdb.backoffMaxMs;
/**
 * How long a write waits for its reply. The server answers every write within its WriteTimeoutMs
 * (2 s by default): past this the reply is lost (the client's batch-append stream has no deadline
 * of its own), and the write's outcome is read back from the stream instead.
 */
const APPEND_REPLY_TIMEOUT_MS = LIMITS.kurrentdb.appendReplyTimeoutMs;

/** The time limits of an append (tests shorten them). */
export interface AppendLimits {
  appendBudgetMs: number;
  appendReplyTimeoutMs: number;
}

export const APPEND_LIMITS: AppendLimits = { appendBudgetMs: APPEND_BUDGET_MS, appendReplyTimeoutMs: APPEND_REPLY_TIMEOUT_MS };
/** Appends of this process waiting for one stream (see StreamLanes) before OverloadedError. */
const MAX_QUEUED_APPENDS_PER_STREAM = LIMITS.kurrentdb.queuedAppendsPerStream;
/** At start, how long `connect` keeps trying a server out of reach, and its longest wait between tries. */
const CONNECT_BUDGET_MS = LIMITS.kurrentdb.connectBudgetMs;
const CONNECT_BACKOFF_MAX_MS = LIMITS.kurrentdb.connectBackoffMaxMs;
/**
 * How far back from the end, beyond its own events, an 'any'/'stream_exists' retry is looked for
 * (the port's promise: a retry is recognized while at most this many events followed it; the server
 * keeps no index by event id to look further cheaply).
 */
export const RETRY_LOOKBACK = 64;
/** Our keys in the event's JSON metadata. Not `$`-prefixed: the server owns that namespace (`$schema.name`, ...). */
const HASH_KEY = 'tallyHash';
const PACKED_METADATA_KEY = 'tallyMetadata';
/** The method the client itself checks before a multi-stream append (KurrentDB 25.1+). */
const APPEND_SESSION_PATH = '/kurrentdb.protocol.v2.streams.StreamsService/AppendSession';
/**
 * Event types the multi-stream append takes (the server's SchemaNameValidator). Held to for every
 * append, so that an event type never works alone and fails beside another stream.
 */
const EVENT_TYPE_PATTERN = /^[a-zA-Z0-9_.$:-]+$/;

/**
 * The client calls the adapter makes: the whole of what it needs from a server, and where the tests
 * put a fake one (test/eventstore/fake-kurrentdb.ts).
 */
export interface KurrentClient {
  appendToStream(streamName: string, events: kdb.EventData[], options: kdb.AppendToStreamOptions): Promise<kdb.AppendResult>;
  multiStreamAppend(requests: kdb.AppendStreamRequest[]): Promise<kdb.MultiAppendResult>;
  readStream(streamName: string, options: kdb.ReadStreamOptions): AsyncIterable<kdb.ResolvedEvent>;
  readAll(options: kdb.ReadAllOptions): AsyncIterable<kdb.AllStreamResolvedEvent>;
  dispose(): Promise<void>;
}

/** What client 1.3.1 knows of its server, behind a getter that is not public API (hence the pinned client). */
export interface ServerFeatures {
  serverVersion: string;
  supports(method: { path: string }): boolean;
}

/** A client as `open` takes it: the calls, and the server's features as the client read them. */
export type KurrentClientWithFeatures = KurrentClient & { readonly capabilities?: Promise<ServerFeatures> };

export interface ConnectOptions {
  log?: (message: string) => void;
  /** How long a server out of reach is tried again (CONNECT_BUDGET_MS). */
  connectBudgetMs?: number;
  /** The client for a connection string; a fresh one per try (the real client caches a failed capabilities read). */
  makeClient?: (connectionString: string) => KurrentClientWithFeatures;
}

/** Detected at `open`: the server's version, and that it has the multi-stream append (else it is refused). */
export interface ServerInfo {
  version: string;
  multiStreamAppend: boolean;
}

export const multiStreamAppendUnsupported = (version: string) =>
  `KurrentDB server ${version} has no multi-stream append (the v2 streams API's AppendSession): Tally needs KurrentDB 25.1 or later`;

/** The client itself: its capabilities getter is protected in its types, and read all the same (see detectServer). */
function realClient(connectionString: string): KurrentClientWithFeatures {
  const client: KurrentClient = kdb.KurrentDBClient.connectionString(connectionString);
  return client as KurrentClientWithFeatures;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Full jitter: spreads writers that collided, so that they do not collide again in step. */
const backoffMs = (attempt: number, maxMs = BACKOFF_MAX_MS) => Math.floor(Math.random() * Math.min(maxMs, BACKOFF_BASE_MS * 2 ** attempt));

/** Commit then prepare position, zero-padded so that string order is log order. */
export function formatPosition(p: kdb.Position): string {
  return `${p.commit.toString().padStart(20, '0')}:${p.prepare.toString().padStart(20, '0')}`;
}

export function parsePosition(position: string): kdb.Position {
  const match = /^(\d{20}):(\d{20})$/.exec(position);
  if (!match) throw new Error(`Invalid position ${position}`);
  return { commit: BigInt(match[1] as string), prepare: BigInt(match[2] as string) };
}

function toSafeNumber(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw new Error(`${value} does not fit a JS number`);
  return Number(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/**
 * Our metadata plus its chain hash. A single-stream append stores it as plain JSON beside the
 * hash, readable in the server UI. The multi-stream append only takes string values (and the server
 * adds `$schema.*` keys), so there, or when a key would collide with ours, it is packed as one string.
 */
export function encodeMetadata(metadata: EventMetadata, hash: string, stringValuesOnly: boolean): Record<string, unknown> {
  const collides = Object.keys(metadata).some((k) => k.startsWith('$') || k === HASH_KEY || k === PACKED_METADATA_KEY);
  if (stringValuesOnly || collides) return { [HASH_KEY]: hash, [PACKED_METADATA_KEY]: JSON.stringify(metadata) };
  return { ...metadata, [HASH_KEY]: hash };
}

export function decodeMetadata(raw: unknown): { metadata: EventMetadata; hash: string } {
  if (!isPlainObject(raw)) return { metadata: {}, hash: '' };
  const hash = typeof raw[HASH_KEY] === 'string' ? raw[HASH_KEY] : '';
  const packed = raw[PACKED_METADATA_KEY];
  if (typeof packed === 'string') return { metadata: JSON.parse(packed) as EventMetadata, hash };
  const entries = Object.entries(raw).filter(([k]) => !k.startsWith('$') && k !== HASH_KEY);
  return { metadata: Object.fromEntries(entries) as EventMetadata, hash };
}

function toRecorded(e: kdb.RecordedEvent): RecordedEvent {
  if (!e.position) throw new Error(`KurrentDB returned event ${e.id} without a position (server older than 22.6?)`);
  const { metadata, hash } = decodeMetadata(e.metadata);
  return {
    id: e.id.toLowerCase(),
    stream: e.streamId,
    revision: toSafeNumber(e.revision),
    position: formatPosition(e.position),
    type: e.type,
    // Only JSON object payloads are ours; anything else in a shared log is someone else's and kept opaque.
    data: e.isJson && isPlainObject(e.data) ? (e.data as JsonObject) : {},
    metadata,
    recordedAt: e.created.toISOString(),
    hash,
  };
}

/**
 * Failures that say the server could not be reached or did not finish (no verdict on the request):
 * connection loss, deadlines, a server shutting down (CancelledError), the native reader's transport
 * failures (it reports them as UnknownError), and a leader that moved. As in the Postgres adapter,
 * these become StoreUnavailableError (503).
 */
function isTransportFailure(error: unknown): boolean {
  if (
    error instanceof kdb.UnavailableError ||
    error instanceof kdb.DeadlineExceededError ||
    error instanceof kdb.TimeoutError ||
    error instanceof kdb.CancelledError ||
    error instanceof kdb.UnknownError ||
    error instanceof kdb.NotLeaderError ||
    error instanceof ReplyLost
  )
    return true;
  const code = (error as { code?: unknown })?.code;
  return code === 14 || code === 4 || code === 1 || code === 13; // raw gRPC UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, INTERNAL
}

function storeError(error: unknown): unknown {
  return isTransportFailure(error) ? new StoreUnavailableError(error) : error;
}

/** A write's reply did not come within APPEND_REPLY_TIMEOUT_MS: whether it was written is unknown. */
class ReplyLost extends Error {
  constructor(ms: number) {
    super(`No reply to an append within ${ms} ms`);
  }
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The server refused an append at its revision without throwing (a client with throwOnAppendFailure=false). */
class RefusedAppend extends Error {
  constructor(readonly streamName: string) {
    super(`Append to ${streamName} refused at its expected revision`);
  }
}

/** An event about to be written, with the chain hash it will carry. */
type PendingEvent = Required<NewEvent> & { hash: string };

/** What one stream of an append needs: a write at an exact revision, or nothing because it is already stored. */
type Plan = { kind: 'write'; stream: string; base: number; events: PendingEvent[] } | { kind: 'stored'; stream: string; firstId: string; result: AppendResult };

/**
 * The event store on KurrentDB. Global order: the server has a single writer and exposes $all
 * only up to its commit point, so a reader never sees an event before one with a lower position
 * that commits later; the Postgres gap problem does not arise and positions need no visibility rule.
 */
export class KurrentDbEventStore implements EventStore {
  readonly kind = 'kurrentdb' as const;
  private readonly appended = new EventEmitter();
  /**
   * Appends of this process to one stream go one after another: two identical appends (a retry
   * racing its original) would otherwise reach the server together, and it drops the second
   * unanswered until its write timeout (IdempotentNotReady: the first is written, not yet indexed); and
   * 'any' appends to a busy stream would each plan on the same tail, all but one to conflict.
   */
  private readonly lanes = new StreamLanes(MAX_QUEUED_APPENDS_PER_STREAM);

  /** Use `connect` (or `open`), which check the server is reachable and what it supports. */
  constructor(
    readonly client: KurrentClient,
    readonly server: ServerInfo,
    private readonly limits: AppendLimits = APPEND_LIMITS,
  ) {
    this.appended.setMaxListeners(0);
  }

  /**
   * Connects, trying a server out of reach again with backoff for up to CONNECT_BUDGET_MS (a
   * service started beside its server waits for it), and refuses at once a server it cannot use.
   */
  static async connect(connectionString: string, options: ConnectOptions = {}): Promise<KurrentDbEventStore> {
    const log = options.log ?? console.warn;
    // esdb:// is the pre-rename scheme; the client only warns about it, the native reader may not take it.
    const url = connectionString.replace(/^esdb(\+discover)?:\/\//i, 'kurrentdb$1://');
    const makeClient = options.makeClient ?? realClient;
    const deadline = Date.now() + (options.connectBudgetMs ?? CONNECT_BUDGET_MS);
    for (let attempt = 1; ; attempt++) {
      try {
        return await KurrentDbEventStore.open(makeClient(url));
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        const waitMs = Math.min(CONNECT_BACKOFF_MAX_MS, 250 * 2 ** attempt);
        if (Date.now() + waitMs > deadline) throw error;
        log(`KurrentDB out of reach (try ${attempt}: ${String((error.cause as Error | undefined)?.message ?? error.cause)}); trying again in ${waitMs} ms`);
        await sleep(waitMs);
      }
    }
  }

  /** A store on `client` once the server answers and has what the adapter needs; the client is disposed otherwise. */
  static async open(client: KurrentClientWithFeatures, limits: AppendLimits = APPEND_LIMITS): Promise<KurrentDbEventStore> {
    try {
      const probe = new KurrentDbEventStore(client, { version: 'unknown', multiStreamAppend: false });
      await probe.ping();
      const server = await detectServer(client);
      if (!server.multiStreamAppend) throw new Error(multiStreamAppendUnsupported(server.version));
      return new KurrentDbEventStore(client, server, limits);
    } catch (error) {
      await client.dispose();
      throw storeError(error);
    }
  }

  async append(stream: string, events: StreamAppend['events'], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMany([{ stream, events, expectedRevision }]);
    return result as AppendResult;
  }

  async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (appends.length === 0) return [];
    const names = new Map<string, string>();
    for (const a of appends) {
      if (a.events.length === 0) throw new Error(`Append to ${a.stream} has no events`);
      // The multi-stream append takes one stream once, comparing names without case.
      const folded = a.stream.toLowerCase();
      const seen = names.get(folded);
      if (seen !== undefined)
        throw new Error(
          seen === a.stream
            ? `Stream ${a.stream} appears twice in one append`
            : `Streams ${seen} and ${a.stream} differ only in case: KurrentDB refuses them in one append`,
        );
      names.set(folded, a.stream);
      for (const e of a.events)
        if (!EVENT_TYPE_PATTERN.test(e.type))
          throw new Error(`Event type ${JSON.stringify(e.type)} is not one KurrentDB's multi-stream append takes (${EVENT_TYPE_PATTERN.source})`);
    }
    assertStorable(appends);
    if (appends.length > 1 && !this.server.multiStreamAppend) throw new Error(multiStreamAppendUnsupported(this.server.version));
    return this.lanes.run(
      appends.map((a) => a.stream),
      () => this.appendInLanes(appends),
    );
  }

  /**
   * Plan, write, verify; on a conflict or an unknown outcome, back off and plan again. Planning
   * reads the streams, so it tells an earlier write of this very append that did land (a timed-out
   * write, a retry racing its original) from someone else's, and answers either way; a write that
   * did not land is sent again with the same ids, which the server takes once.
   */
  private async appendInLanes(appends: StreamAppend[]): Promise<AppendResult[]> {
    const deadline = Date.now() + this.limits.appendBudgetMs;
    let conflict: kdb.WrongExpectedVersionError | RefusedAppend | undefined;
    /** Set when the last try ended without a verdict (no conflict): what it ended on. */
    let unknownOutcome: unknown;
    for (let attempt = 0; attempt < MAX_APPEND_ATTEMPTS; attempt++) {
      if (attempt > 0) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) break;
        await sleep(backoffMs(attempt, Math.min(BACKOFF_MAX_MS, remaining)));
      }
      let plans: Plan[];
      try {
        plans = await Promise.all(appends.map((a) => this.plan(a)));
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        unknownOutcome = error.cause ?? error;
        continue;
      }
      const writes = plans.filter((p) => p.kind === 'write');
      if (writes.length === 0) return plans.flatMap((p) => (p.kind === 'stored' ? [p.result] : []));
      const stored = plans.find((p) => p.kind === 'stored');
      if (stored) throw new EventIdConflictError(stored.firstId);
      try {
        await this.writeWithin(writes, this.limits.appendReplyTimeoutMs);
      } catch (error) {
        // Someone moved a stream since we read it: plan again, which re-reads an 'any' tail.
        if (error instanceof kdb.WrongExpectedVersionError || error instanceof RefusedAppend) {
          conflict = error;
          unknownOutcome = undefined;
          continue;
        }
        // A timeout, an internal error or no reply: the write may or may not be stored.
        if (isTransportFailure(error)) {
          unknownOutcome = error;
          continue;
        }
        throw error;
      }
      let results: AppendResult[];
      try {
        results = await Promise.all(writes.map((w) => this.verifyAppended(w)));
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        unknownOutcome = error.cause ?? error;
        continue;
      }
      this.appended.emit('append');
      return results;
    }
    if (unknownOutcome !== undefined || conflict === undefined) throw new StoreUnavailableError(unknownOutcome);
    const failed = appends.find((a) => a.stream === conflict?.streamName) ?? (appends[0] as StreamAppend);
    const expected = normalizeExpected(failed.expectedRevision);
    // An 'any' append is never refused for its revision: it lost to others too often, try again shortly.
    if (expected === 'any' || expected === 'stream_exists') throw new OverloadedError(`appends to ${failed.stream} kept conflicting`);
    throw await this.wrongRevision(failed.stream, failed.expectedRevision);
  }

  /**
   * Reads what the hash chain and idempotency need before writing. The append is always sent with
   * the exact revision read here (never ANY or STREAM_EXISTS): the chain hash of the new events
   * depends on the last event, so a writer that slipped in between must make this write fail.
   */
  private async plan(a: StreamAppend): Promise<Plan> {
    const expected = normalizeExpected(a.expectedRevision);
    let previous: RecordedEvent | undefined;
    if (typeof expected === 'number' || expected === 'no_stream') {
      const from = expected === 'no_stream' ? 0 : expected;
      const slice = await this.read(a.stream, BigInt(from), 'forwards', a.events.length + (expected === 'no_stream' ? 0 : 1));
      if (typeof expected === 'number') {
        previous = slice.shift();
        if (previous?.revision !== expected) throw await this.wrongRevision(a.stream, a.expectedRevision);
      }
      // The stream is already past the expected revision: with this very append (a retry) or with others' events.
      if (slice.length > 0) return this.matchStored(a, slice, true);
    } else {
      const tail = await this.read(a.stream, kdb.END, 'backwards', RETRY_LOOKBACK + a.events.length);
      const ids = new Set(a.events.map((e) => e.id.toLowerCase()));
      const ours = tail.filter((e) => ids.has(e.id)).reverse();
      if (ours.length > 0) return this.matchStored(a, ours, false);
      if (tail.length === 0 && expected === 'stream_exists') throw new WrongExpectedRevisionError(a.stream, a.expectedRevision, -1);
      previous = tail[0];
    }
    let hash = previous ? previous.hash : GENESIS_HASH;
    const events = a.events.map((e) => {
      const metadata = e.metadata ?? {};
      hash = chainHash(hash, eventDigest({ stream: a.stream, id: e.id, type: e.type, data: e.data, metadata }));
      return { id: e.id, type: e.type, data: e.data, metadata, hash };
    });
    return { kind: 'write', stream: a.stream, base: previous ? previous.revision : -1, events };
  }

  /** Stored events that may be this append: all of it, in order and unchanged, answers as the first time did. */
  private async matchStored(a: StreamAppend, candidates: RecordedEvent[], othersMeanConflict: boolean): Promise<Plan> {
    const byId = new Map(candidates.map((e) => [e.id, e]));
    const found = a.events.map((e) => byId.get(e.id.toLowerCase()));
    const firstStored = found.find((f) => f !== undefined);
    if (!firstStored) {
      if (othersMeanConflict) throw await this.wrongRevision(a.stream, a.expectedRevision);
      throw new Error('matchStored called without any stored candidate');
    }
    a.events.forEach((e, i) => {
      const f = found[i];
      const before = found[i - 1];
      const same = f && eventDigest(f) === eventDigest({ stream: a.stream, id: e.id, type: e.type, data: e.data, metadata: e.metadata ?? {} });
      if (!same || (before && f.revision !== before.revision + 1)) throw new EventIdConflictError(f ? e.id : firstStored.id);
    });
    const last = found[found.length - 1] as RecordedEvent;
    return { kind: 'stored', stream: a.stream, firstId: firstStored.id, result: { nextRevision: last.revision, position: last.position } };
  }

  /**
   * The write, or ReplyLost after `timeoutMs`. The server decides every write within its own write
   * timeout, so by then the write has landed or never will, and the next plan reads which.
   */
  private async writeWithin(writes: Array<Extract<Plan, { kind: 'write' }>>, timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const sent = this.write(writes);
    const lost = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ReplyLost(timeoutMs)), timeoutMs);
    });
    try {
      await Promise.race([sent, lost]);
    } finally {
      clearTimeout(timer);
      // A reply that comes after ReplyLost is not waited for: the next plan has read what it did.
      sent.catch(() => undefined);
    }
  }

  private async write(writes: Array<Extract<Plan, { kind: 'write' }>>): Promise<void> {
    const state = (w: { base: number }): kdb.AppendStreamState => (w.base < 0 ? kdb.NO_STREAM : BigInt(w.base));
    const toEventData = (e: PendingEvent, stringValuesOnly: boolean): kdb.EventData =>
      kdb.jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: encodeMetadata(e.metadata, e.hash, stringValuesOnly) });
    const [only] = writes;
    if (writes.length === 1 && only) {
      const result = await this.client.appendToStream(
        only.stream,
        only.events.map((e) => toEventData(e, false)),
        // The server gives up on the write at this deadline (the batch's own, sent with it).
        { streamState: state(only), deadline: this.limits.appendReplyTimeoutMs },
      );
      // A client made with throwOnAppendFailure=false answers a wrong revision this way instead of throwing.
      if (!result.success) throw new RefusedAppend(only.stream);
      return;
    }
    await this.client.multiStreamAppend(
      writes.map((w) => ({ streamName: w.stream, expectedState: state(w), events: w.events.map((e) => toEventData(e, true)) })),
    );
  }

  /**
   * The write went in at exactly base+1..base+n (the revision was explicit): read those events back
   * for the position readers see (the append's reply may not carry it: idempotent replies, one
   * position for a whole multi-stream transaction), and check they are ours. The server takes an
   * append whose ids it has just stored as a retry without comparing content, so a writer racing us
   * with the same ids and other content may be what is stored: then this append did not happen.
   */
  private async verifyAppended(w: Extract<Plan, { kind: 'write' }>): Promise<AppendResult> {
    const stored = await this.read(w.stream, BigInt(w.base + 1), 'forwards', w.events.length);
    w.events.forEach((sent, i) => {
      const found = stored[i];
      const same =
        found?.id === sent.id.toLowerCase() &&
        found.revision === w.base + 1 + i &&
        found.hash === sent.hash &&
        eventDigest(found) === eventDigest({ stream: w.stream, id: sent.id, type: sent.type, data: sent.data, metadata: sent.metadata });
      if (!same) throw new EventIdConflictError(sent.id);
    });
    const last = stored[w.events.length - 1] as RecordedEvent;
    return { nextRevision: last.revision, position: last.position };
  }

  private async wrongRevision(stream: string, expected: ExpectedRevision): Promise<WrongExpectedRevisionError> {
    const [last] = await this.read(stream, kdb.END, 'backwards', 1);
    return new WrongExpectedRevisionError(stream, expected, last ? last.revision : -1);
  }

  private async read(stream: string, fromRevision: kdb.ReadRevision, direction: 'forwards' | 'backwards', maxCount: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    if (maxCount <= 0) return events;
    try {
      // From the leader: a follower may not have a write yet that the leader acknowledged, and the
      // plans and checks of an append (and the decisions made on a stream) must see it.
      for await (const resolved of this.client.readStream(stream, { fromRevision, direction, maxCount, requiresLeader: true })) {
        if (resolved.event) events.push(toRecorded(resolved.event));
      }
    } catch (error) {
      if (error instanceof kdb.StreamNotFoundError) return [];
      throw storeError(error);
    }
    return events;
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const from = options.fromRevision ?? 0;
    const to = options.toRevision ?? Number.MAX_SAFE_INTEGER;
    if (to < from || options.maxCount === 0) return [];
    // With untilTime the count applies after the time filter, as in the Postgres adapter.
    const count = Math.min(to - from + 1, options.untilTime ? Number.MAX_SAFE_INTEGER : (options.maxCount ?? Number.MAX_SAFE_INTEGER));
    let events = (await this.read(stream, BigInt(from), 'forwards', count)).filter((e) => e.revision <= to);
    const until = options.untilTime?.getTime();
    if (until !== undefined) events = events.filter((e) => Date.parse(e.recordedAt) <= until);
    return options.maxCount === undefined ? events : events.slice(0, options.maxCount);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const limit = Math.min(options.maxCount ?? MAX_READ_BATCH, MAX_READ_BATCH * 10);
    const prefixes = options.filter?.streamPrefixes?.length ? options.filter.streamPrefixes : undefined;
    const types = options.filter?.eventTypes?.length ? new Set(options.filter.eventTypes) : undefined;
    // The server filters on stream name or on event type, not both: prefixes usually select more.
    // Whatever it cannot filter (the other criterion, system events) is dropped here.
    const filter: kdb.Filter = prefixes
      ? kdb.streamNameFilter({ prefixes })
      : types
        ? kdb.eventTypeFilter({ regex: `^(?:${[...types].map(escapeRegex).join('|')})$` })
        : kdb.excludeSystemEvents();
    const keep = (e: RecordedEvent) =>
      !e.type.startsWith('$') && !e.stream.startsWith('$') && (!types || types.has(e.type)) && (!prefixes || prefixes.some((p) => e.stream.startsWith(p)));
    const out: RecordedEvent[] = [];
    let after = options.fromPosition || undefined;
    while (out.length < limit) {
      const pageSize = Math.max(limit - out.length, MIN_ALL_PAGE);
      let raw = 0;
      try {
        for await (const resolved of this.client.readAll({ fromPosition: after ? parsePosition(after) : kdb.START, maxCount: pageSize, filter })) {
          raw++;
          if (!resolved.event) continue;
          const e = toRecorded(resolved.event);
          // The server's start position is inclusive; ours is exclusive.
          if (after && e.position <= after) continue;
          after = e.position;
          if (keep(e) && out.length < limit) out.push(e);
        }
      } catch (error) {
        throw storeError(error);
      }
      if (raw < pageSize) break;
    }
    return out;
  }

  subscribe(options: SubscribeOptions): Subscription {
    return runSubscription(this, options);
  }

  async headPosition(): Promise<string> {
    try {
      for await (const resolved of this.client.readAll({ direction: kdb.BACKWARDS, fromPosition: kdb.END, maxCount: 1, filter: kdb.excludeSystemEvents() })) {
        if (resolved.event?.position) return formatPosition(resolved.event.position);
      }
    } catch (error) {
      throw storeError(error);
    }
    return '';
  }

  waitForAppend(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.appended.off('append', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.appended.once('append', done);
    });
  }

  async ping(): Promise<void> {
    await this.headPosition();
  }

  async close(): Promise<void> {
    this.appended.emit('append');
    await this.client.dispose();
  }
}

/**
 * Whether the server has the multi-stream append. Client 1.3.1 answers this from the server's
 * advertised methods, but only behind a getter that is not public API (its public multiStreamAppend
 * throws UnsupportedError on first use); reading it here avoids probing the server with a write.
 * A client without the getter cannot tell: it is refused rather than trusted.
 */
async function detectServer(client: KurrentClientWithFeatures): Promise<ServerInfo> {
  const features = await client.capabilities;
  if (typeof features?.supports !== 'function' || typeof features.serverVersion !== 'string')
    throw new Error('The KurrentDB client does not say what the server supports (the adapter is written for client 1.3.1)');
  return { version: features.serverVersion, multiStreamAppend: features.supports({ path: APPEND_SESSION_PATH }) };
}
