import { EventEmitter } from 'node:events';
import * as kdb from '@kurrent/kurrentdb-client';
import { chainHash, eventDigest, GENESIS_HASH } from './hash';
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

const MAX_READ_BATCH = 1_000;
/** Smallest $all page, so that client-side filtering never degrades into one-event round trips. */
const MIN_ALL_PAGE = 100;
/** Conflicts an 'any' append retries through (each retry re-reads the tail) before giving up. */
const MAX_APPEND_ATTEMPTS = 10;
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

/** Detected at `connect`: `multiStreamAppend` says whether appendMany can write several streams at once. */
export interface ServerInfo {
  version: string;
  multiStreamAppend: boolean;
}

const UNKNOWN_SERVER: ServerInfo = { version: 'unknown', multiStreamAppend: false };

export const multiStreamAppendUnsupported = (version: string) => `KurrentDB server ${version} does not support multi-stream append; upgrade to 25.1+`;

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

/** Connection-level failures become StoreUnavailableError, as in the Postgres adapter. */
function storeError(error: unknown): unknown {
  if (
    error instanceof kdb.UnavailableError ||
    error instanceof kdb.DeadlineExceededError ||
    error instanceof kdb.TimeoutError ||
    error instanceof kdb.NotLeaderError
  )
    return new StoreUnavailableError(error);
  const code = (error as { code?: unknown })?.code;
  if (code === 14 || code === 4) return new StoreUnavailableError(error); // raw gRPC UNAVAILABLE / DEADLINE_EXCEEDED
  return error;
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

  /** Use `connect`, which checks the server is reachable and what it supports. */
  constructor(
    readonly client: kdb.KurrentDBClient,
    readonly server: ServerInfo,
  ) {
    this.appended.setMaxListeners(0);
  }

  static async connect(connectionString: string, log: (message: string) => void = console.warn): Promise<KurrentDbEventStore> {
    // esdb:// is the pre-rename scheme; the client only warns about it, the native reader may not take it.
    const client = kdb.KurrentDBClient.connectionString(connectionString.replace(/^esdb(\+discover)?:\/\//i, 'kurrentdb$1://'));
    try {
      await new KurrentDbEventStore(client, UNKNOWN_SERVER).ping();
      const store = new KurrentDbEventStore(client, await detectServer(client));
      if (!store.server.multiStreamAppend) log(`${multiStreamAppendUnsupported(store.server.version)} (atomic appends to several streams will fail)`);
      return store;
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
    const names = new Set<string>();
    for (const a of appends) {
      if (a.events.length === 0) throw new Error(`Append to ${a.stream} has no events`);
      if (names.has(a.stream)) throw new Error(`Stream ${a.stream} appears twice in one append`);
      names.add(a.stream);
    }
    assertStorable(appends);
    if (appends.length > 1 && !this.server.multiStreamAppend) throw new Error(multiStreamAppendUnsupported(this.server.version));
    let conflict: kdb.WrongExpectedVersionError | RefusedAppend | undefined;
    for (let attempt = 0; attempt < MAX_APPEND_ATTEMPTS; attempt++) {
      const plans = await Promise.all(appends.map((a) => this.plan(a)));
      const writes = plans.filter((p) => p.kind === 'write');
      if (writes.length === 0) return plans.flatMap((p) => (p.kind === 'stored' ? [p.result] : []));
      const stored = plans.find((p) => p.kind === 'stored');
      if (stored) throw new EventIdConflictError(stored.firstId);
      try {
        await this.write(writes);
      } catch (error) {
        // Someone moved a stream since we read it: plan again, which tells our own earlier write
        // (an identical retry that won the race) from someone else's and re-reads an 'any' tail.
        if (error instanceof kdb.WrongExpectedVersionError || error instanceof RefusedAppend) {
          conflict = error;
          continue;
        }
        throw storeError(error);
      }
      const results = await Promise.all(writes.map((w) => this.verifyAppended(w)));
      this.appended.emit('append');
      return results;
    }
    const failed = appends.find((a) => a.stream === conflict?.streamName) ?? (appends[0] as StreamAppend);
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

  private async write(writes: Array<Extract<Plan, { kind: 'write' }>>): Promise<void> {
    const state = (w: { base: number }): kdb.AppendStreamState => (w.base < 0 ? kdb.NO_STREAM : BigInt(w.base));
    const toEventData = (e: PendingEvent, stringValuesOnly: boolean): kdb.EventData =>
      kdb.jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: encodeMetadata(e.metadata, e.hash, stringValuesOnly) });
    const [only] = writes;
    if (writes.length === 1 && only) {
      const result = await this.client.appendToStream(
        only.stream,
        only.events.map((e) => toEventData(e, false)),
        { streamState: state(only) },
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
      for await (const resolved of this.client.readStream(stream, { fromRevision, direction, maxCount })) {
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
 * Whether the server has the multi-stream append. The client answers this from the server's
 * advertised methods, but only behind a protected getter (its public multiStreamAppend throws
 * UnsupportedError on first use); reading it here avoids probing the server with a write.
 */
async function detectServer(client: kdb.KurrentDBClient): Promise<ServerInfo> {
  type Features = { serverVersion: string; supports(method: { path: string }): boolean };
  const features = await (client as unknown as { capabilities?: Promise<Features> }).capabilities;
  if (typeof features?.supports !== 'function') return UNKNOWN_SERVER; // a client without the getter: assume the worst, and say so
  return { version: features.serverVersion, multiStreamAppend: features.supports({ path: APPEND_SESSION_PATH }) };
}
