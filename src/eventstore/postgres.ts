import { EventEmitter } from 'node:events';
import { assertStorable } from './storable';
import { canonicalJson, eventDigestOfTexts, sha256Hex } from './hash';
import { EVENT_LOG_SCHEMA } from './postgres-schema';
import {
  comparePositions,
  type AppendResult,
  EventIdConflictError,
  type EventMetadata,
  type EventStore,
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
import { plainArrayLiteral, type Sql, textArrayLiteral } from './sql';
import { runSubscription } from './subscription';
import { LIMITS } from '../platform/limits';

const MAX_READ_BATCH = LIMITS.store.readBatch;

interface EventRow {
  xid: string;
  gp: string;
  stream_id: string;
  stream_revision: string;
  event_id: string;
  type: string;
  /** Absent on a heads-only read. */
  data?: JsonObject;
  metadata?: EventMetadata;
  /** Milliseconds since the epoch (truncated, as the ISO form shows them). */
  recorded_ms: string;
  hash?: string;
  /** With `withPreviousHash`: null at revision 0 (and for a revision whose predecessor is gone). */
  previous_hash?: string | null;
}

// Positions and instants are formatted here rather than in SQL: cheaper for the server on long reads.
const BASE_COLUMNS = `transaction_id::text AS xid, global_position::text AS gp, stream_id, stream_revision::text, event_id::text, type, data,
  floor(extract(epoch FROM recorded_at) * 1000)::int8::text AS recorded_ms`;
const EVENT_COLUMNS = `${BASE_COLUMNS}, metadata, hash`;
/** What a stream's head is made of (readAll's `headsOnly`): no data, no metadata. */
const HEAD_COLUMNS = `transaction_id::text AS xid, global_position::text AS gp, stream_id, stream_revision::text, event_id::text, type,
  floor(extract(epoch FROM recorded_at) * 1000)::int8::text AS recorded_ms, hash`;
/** The hash of the event before, by the (stream, revision) index: one lookup per event, inside the read. */
const PREVIOUS_HASH = `(SELECT p.hash FROM es_events p WHERE p.stream_id = es_events.stream_id AND p.stream_revision = es_events.stream_revision - 1) AS previous_hash`;

/** Only rows of transactions older than every running one: see postgres-schema.ts. */
const VISIBLE = 'transaction_id < pg_snapshot_xmin(pg_current_snapshot())';
/** The position of the last visible event, as one row (`head` null when the log is empty). */
const HEAD = `SELECT (SELECT lpad(transaction_id::text, 20, '0') || ':' || lpad(global_position::text, 20, '0')
    FROM es_events WHERE ${VISIBLE} ORDER BY transaction_id DESC, global_position DESC LIMIT 1) AS head`;

/** readAll's columns, conditions and parameters (the last one its limit). */
function readAllQuery(options: ReadAllOptions): { columns: string; where: string; params: unknown[] } {
  const params: unknown[] = [];
  const conditions = [VISIBLE];
  if (options.fromPosition) {
    const [xid, gp] = positionParts(options.fromPosition);
    params.push(xid, gp);
    conditions.push(`(transaction_id, global_position) > ($${params.length - 1}::xid8, $${params.length}::bigint)`);
  }
  const prefixes = options.filter?.streamPrefixes;
  if (prefixes?.length) {
    params.push(prefixes.map(escapeLike));
    conditions.push(`stream_id LIKE ANY($${params.length}::text[])`);
  }
  const types = options.filter?.eventTypes;
  if (types?.length) {
    params.push(types);
    conditions.push(`type = ANY($${params.length}::text[])`);
  }
  params.push(Math.min(options.maxCount ?? MAX_READ_BATCH, MAX_READ_BATCH * 10));
  const columns = options.projectionOnly
    ? BASE_COLUMNS
    : options.headsOnly
      ? HEAD_COLUMNS
      : options.withPreviousHash
        ? `${EVENT_COLUMNS}, ${PREVIOUS_HASH}`
        : EVENT_COLUMNS;
  return { columns, where: conditions.join(' AND '), params };
}

/**
 * Rows as recorded events. The events of one append share its transaction id and instant, and are
 * read together: each is formatted once per run of rows that share it, not once per event.
 */
function toRecorded(rows: EventRow[]): RecordedEvent[] {
  let xid = '';
  let xidText = '';
  let ms = '';
  let at = '';
  return rows.map((row) => {
    if (row.xid !== xid) {
      xid = row.xid;
      xidText = xid.padStart(20, '0');
    }
    if (row.recorded_ms !== ms) {
      ms = row.recorded_ms;
      at = new Date(Number(ms)).toISOString();
    }
    return {
      id: row.event_id,
      stream: row.stream_id,
      revision: Number(row.stream_revision),
      position: `${xidText}:${row.gp.padStart(20, '0')}`,
      type: row.type,
      data: row.data ?? {},
      metadata: row.metadata ?? {},
      recordedAt: at,
      hash: row.hash ?? '',
      ...(row.previous_hash === undefined ? {} : { previousHash: row.previous_hash ?? '' }),
    };
  });
}

/** `value`'s canonical JSON, written once per object of `texts`. A module function: a closure made per append would also be named per append (tsx keeps names: Object.defineProperty on each). */
function textOnce(texts: Map<object, string>, value: object): string {
  let text = texts.get(value);
  if (text === undefined) {
    text = canonicalJson(value);
    texts.set(value, text);
  }
  return text;
}

/**
 * A position's parts as SQL parameters (xid8, bigint); the start of the log ('') is (0, 0), before
 * every event.
 */
function positionParts(position: string): [string, string] {
  if (position === '') return ['0', '0'];
  const [xid, gp] = position.split(':');
  if (!xid || !gp || !/^\d{20}$/.test(xid) || !/^\d{20}$/.test(gp)) throw new Error(`Invalid position ${position}`);
  return [xid.replace(/^0+(?=\d)/, ''), gp.replace(/^0+(?=\d)/, '')];
}

function escapeLike(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The port's error for a request es_append_batch / es_append refused. */
function appendError(error: string, detail: string | null | undefined, appends: StreamAppend[]): Error {
  if (error === 'WRONG_EXPECTED_REVISION') {
    const parsed = JSON.parse(detail ?? '{}') as { stream: string; actual: number };
    const append = appends.find((a) => a.stream === parsed.stream);
    return new WrongExpectedRevisionError(parsed.stream, append?.expectedRevision ?? 'any', Number(parsed.actual));
  }
  if (error === 'EVENT_ID_CONFLICT') return new EventIdConflictError(appends[0]?.events[0]?.id ?? '');
  return new Error(`Unexpected append result ${error}`);
}

/** Connection-level failures (server down, refused, reset) become StoreUnavailableError. */
function isConnectionError(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (typeof e?.code === 'string' && (e.code.startsWith('08') || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P03'].includes(e.code)))
    return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(e?.message ?? '');
}

/** Tuning of the adapter's group commit (see PostgresEventStore). */
export interface PostgresEventStoreOptions {
  /**
   * Most batches in flight at once, each one es_append_batch call (one transaction, one connection).
   * Default 4 on a server; 1 on PGlite, which runs one query at a time anyway.
   */
  maxInFlight?: number;
  /**
   * While a batch is in flight, queued requests wait for it to finish and then leave together; they
   * leave earlier, in another batch, once this many have queued. Small batches cost the database
   * far more per append (each is a transaction and a commit), so a few requests are better off
   * waiting one round trip. Default 8.
   */
  minConcurrentBatch?: number;
  /**
   * ... or once this many events have queued, however few the requests: a large request (a hot
   * account's batch of transfers, say) is worth a transaction of its own at once. Default 24.
   */
  minConcurrentEvents?: number;
  /** Most requests (appendMany calls) in one batch. Default 100. */
  maxBatchRequests?: number;
  /** Most events in one batch; a single larger request still goes, alone. Default 1,000. */
  maxBatchEvents?: number;
  /** Most requests waiting to be sent; past it a call fails at once with OverloadedError. Default 20,000. */
  maxQueued?: number;
  /**
   * Batches leave at the end of the event loop's turn (setImmediate), not at once: every request
   * the turn brought joins them. Default on PGlite, where a query runs on this thread, inside the
   * caller's microtasks: sent at once, each request would be appended (and committed) alone
   * before the next one is even read from its socket. On a server, the turn already goes on
   * while a batch is in flight.
   */
  sendAtTurnEnd?: boolean;
}

/** Counters of the group commit, for tests and diagnostics. */
export interface AppendStats {
  /** appendMany calls that reached the database. */
  requests: number;
  /** es_append_batch calls. requests / batches = mean batch size. */
  batches: number;
  /** Requests of the largest batch so far. */
  largestBatch: number;
  /** Batches that failed as a whole and were retried request by request. */
  fallbacks: number;
  /** Batches tried again with every event id looked up first (one of their ids was stored). */
  probedAgain: number;
  /** Times a queued request was left for a later batch, as it shared a stream with a batch in flight. */
  heldBack: number;
}

/**
 * One batch's timing, in milliseconds: its es_append_batch call (`sqlMs`), and each of its requests
 * from queued to settled (`requestMs`: the wait for a batch to leave, its SQL, the settling).
 */
export interface AppendTiming {
  sqlMs: number;
  requestMs: number[];
}

/** One appendMany call waiting for (or in) a batch. */
interface PreparedEvent {
  data: string;
  metadata: string;
  digest: string;
}

interface QueuedAppend {
  appends: StreamAppend[];
  /** Per append: the expected revision as es_append_batch takes it. */
  expected: string[];
  /**
   * Per append, per event: the canonical JSON of its data and metadata and its content digest
   * (hash.ts) over them, computed before queueing. The texts the digest covers are the ones sent.
   */
  prepared: PreparedEvent[][];
  events: number;
  /** performance.now() when it was queued. */
  queuedAt: number;
  resolve(results: AppendResult[]): void;
  reject(error: unknown): void;
}

interface BatchRow {
  request_no: number;
  stream: string | null;
  next_revision: string | null;
  position_text: string | null;
  error: string | null;
  error_detail: string | null;
}

// Data and metadata travel as one JSON array each (texts joined, nothing to escape), unpacked in order.
const APPEND_BATCH = `SELECT request_no, stream, next_revision::text, position_text, error, error_detail
  FROM es_append_batch($1::text[], $2::int[], $3::int[], $4::text[], $5::int[], $6::uuid[], $7::text[],
    ARRAY(SELECT x.v FROM json_array_elements($8::json) WITH ORDINALITY x(v, i) ORDER BY x.i),
    ARRAY(SELECT x.v FROM json_array_elements($9::json) WITH ORDINALITY x(v, i) ORDER BY x.i), $10::text[], $11::boolean)`;

/**
 * The arguments of es_append_batch for these requests, in this order (see postgres-schema.ts).
 * `probe`: look every event id up first (the one-by-one retry); a batch's first try does not.
 */
function batchParams(batch: QueuedAppend[], probe: boolean): unknown[] {
  const streamIndex = new Map<string, number>();
  const appReq: number[] = [];
  const appStream: number[] = [];
  const appExpect: string[] = [];
  const appCount: number[] = [];
  const evId: string[] = [];
  const evType: string[] = [];
  const evData: string[] = [];
  const evMeta: string[] = [];
  const evDigest: string[] = [];
  batch.forEach((q, r) => {
    q.appends.forEach((a, i) => {
      let s = streamIndex.get(a.stream);
      if (s === undefined) {
        s = streamIndex.size + 1;
        streamIndex.set(a.stream, s);
      }
      appReq.push(r + 1);
      appStream.push(s);
      appExpect.push(q.expected[i] as string);
      appCount.push(a.events.length);
      a.events.forEach((e, j) => {
        evId.push(e.id);
        evType.push(e.type);
        const p = q.prepared[i]?.[j] as PreparedEvent;
        evData.push(p.data);
        evMeta.push(p.metadata);
        evDigest.push(p.digest);
      });
    });
  });
  return [
    textArrayLiteral([...streamIndex.keys()]),
    plainArrayLiteral(appReq),
    plainArrayLiteral(appStream),
    textArrayLiteral(appExpect),
    plainArrayLiteral(appCount),
    // Ids are sent as given: one that is not a UUID fails the batch (and then only its request).
    textArrayLiteral(evId),
    textArrayLiteral(evType),
    `[${evData.join(',')}]`,
    `[${evMeta.join(',')}]`,
    plainArrayLiteral(evDigest),
    probe,
  ];
}

/**
 * Another transaction stored one of the batch's event ids, or created one of its new streams, after
 * the batch looked: retried alone, a request then finds what the other one wrote.
 */
function isEventIdRace(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string };
  // 40P01: two batches that create the same streams met in opposite orders (not expected, see
  // es_append_batch); postgres aborted one, which is retried like the others.
  return (e?.code === '23505' && ['es_events_event_id', 'es_streams_pkey', 'es_events_stream_revision'].includes(e.constraint ?? '')) || e?.code === '40P01';
}

export class PostgresEventStore implements EventStore {
  readonly kind: 'postgres' | 'pglite';
  readonly stats: AppendStats = { requests: 0, batches: 0, largestBatch: 0, fallbacks: 0, probedAgain: 0, heldBack: 0 };
  private readonly appended = new EventEmitter();
  private readonly timed = new Set<(timing: AppendTiming) => void>();
  private readonly maxInFlight: number;
  private readonly minConcurrentBatch: number;
  private readonly minConcurrentEvents: number;
  /** Events of the queued requests. */
  private queuedEvents = 0;
  private readonly maxBatchRequests: number;
  private readonly maxBatchEvents: number;
  private readonly maxQueued: number;
  /** Requests not yet sent, in call order; a batch takes them from the front. */
  private readonly queue: QueuedAppend[] = [];
  private inFlight = 0;
  /** The streams of the batches in flight, with how many of them hold each. */
  private readonly inFlightStreams = new Map<string, number>();
  private readonly sendAtTurnEnd: boolean;
  private sendScheduled = false;

  constructor(
    readonly sql: Sql,
    options: PostgresEventStoreOptions = {},
  ) {
    this.kind = sql.kind;
    this.appended.setMaxListeners(0);
    this.maxInFlight = Math.max(1, options.maxInFlight ?? (sql.kind === 'pglite' ? 1 : 4));
    this.minConcurrentBatch = Math.max(1, options.minConcurrentBatch ?? 8);
    this.minConcurrentEvents = Math.max(1, options.minConcurrentEvents ?? 24);
    this.maxBatchRequests = Math.max(1, options.maxBatchRequests ?? 100);
    this.maxBatchEvents = Math.max(1, options.maxBatchEvents ?? 1_000);
    this.maxQueued = Math.max(1, options.maxQueued ?? 20_000);
    this.sendAtTurnEnd = options.sendAtTurnEnd ?? sql.kind === 'pglite';
  }

  static async create(sql: Sql, options: PostgresEventStoreOptions = {}): Promise<PostgresEventStore> {
    await sql.exec(EVENT_LOG_SCHEMA);
    return new PostgresEventStore(sql, options);
  }

  async append(stream: string, events: NewEvent[], expectedRevision: StreamAppend['expectedRevision']): Promise<AppendResult> {
    const [result] = await this.appendMany([{ stream, events, expectedRevision }]);
    return result as AppendResult;
  }

  /**
   * Group commit: the call is queued, and leaves at once when nothing is in flight (a lone call waits
   * for nothing: no timer). While batches are in flight, calls queue and leave together, in one
   * es_append_batch transaction, when a batch finishes (or sooner once enough have queued, see
   * PostgresEventStoreOptions). Each call still succeeds or fails on its own, with its own result or
   * error, exactly as if the calls of a batch had run one after the other in queue order.
   */
  async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (appends.length === 0) return [];
    if (this.queue.length >= this.maxQueued) throw new OverloadedError(`${this.queue.length} appends wait for the event log`);
    const names = new Set<string>();
    let events = 0;
    for (const a of appends) {
      if (a.events.length === 0) throw new Error(`Append to ${a.stream} has no events`);
      if (names.has(a.stream)) throw new Error(`Stream ${a.stream} appears twice in one append`);
      names.add(a.stream);
      events += a.events.length;
    }
    assertStorable(appends);
    const expected = appends.map((a) => String(normalizeExpected(a.expectedRevision)));
    // Events of one command share their metadata object (commands.ts): written out once per call.
    const metadataTexts = new Map<object, string>();
    const prepared = appends.map((a) =>
      a.events.map((e): PreparedEvent => {
        const data = canonicalJson(e.data);
        const metadata = textOnce(metadataTexts, e.metadata ?? {});
        return { data, metadata, digest: eventDigestOfTexts(a.stream, e.id, e.type, data, metadata) };
      }),
    );
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({ appends, expected, prepared, events, queuedAt: performance.now(), resolve, reject });
      this.queuedEvents += events;
      this.flush();
    });
  }

  /**
   * Calls `listener` after every batch that ran in one call, with its timing (the metrics' latency
   * histograms, the benches). Batches retried request by request are not timed. Returns the unsubscribe.
   */
  onAppendTimed(listener: (timing: AppendTiming) => void): () => void {
    this.timed.add(listener);
    return () => this.timed.delete(listener);
  }

  /** Sends queued requests, at once or at the end of the turn (sendAtTurnEnd). */
  private flush(): void {
    if (!this.sendAtTurnEnd) {
      this.send();
      return;
    }
    if (this.sendScheduled) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      this.send();
    });
  }

  /** Sends queued requests: when idle; alongside batches in flight only when enough have queued. */
  private send(): void {
    while (
      this.queue.length > 0 &&
      (this.inFlight === 0 ||
        (this.inFlight < this.maxInFlight && (this.queue.length >= this.minConcurrentBatch || this.queuedEvents >= this.minConcurrentEvents)))
    ) {
      const batch = this.takeBatch(this.inFlight > 0);
      if (batch.length === 0) break;
      // One batch at a time (PGlite): nothing is ever in flight beside it, nothing to count.
      const streams = this.maxInFlight > 1 ? this.hold(batch) : [];
      this.inFlight++;
      void this.sendBatch(batch).finally(() => {
        this.release(streams);
        this.inFlight--;
        this.flush();
      });
    }
  }

  /**
   * The oldest queued requests, up to the bounds (at least one, even when it alone is over them),
   * leaving queued those that share a stream with a batch in flight: in a transaction of their own
   * they would wait for that batch's row locks, held until its commit is flushed, and hold up the
   * rest of their batch meanwhile. Left with them: every later request sharing a stream with one of
   * them, so a stream's requests still leave in queue order. `concurrent` (batches are in flight):
   * empty, and nothing taken, unless what may leave is enough for a batch of its own.
   */
  private takeBatch(concurrent: boolean): QueuedAppend[] {
    const inFlight = this.inFlightStreams;
    /** The streams of the requests left so far (made at the first one left). */
    let leftStreams: Set<string> | null = null;
    const busy = (a: StreamAppend) => inFlight.has(a.stream) || leftStreams?.has(a.stream) === true;
    const taken: QueuedAppend[] = [];
    const left: QueuedAppend[] = [];
    let events = 0;
    let scanned = 0;
    for (const q of this.queue) {
      if (taken.length >= this.maxBatchRequests || (taken.length > 0 && events + q.events > this.maxBatchEvents)) break;
      scanned++;
      if (inFlight.size > 0 && q.appends.some(busy)) {
        leftStreams ??= new Set();
        for (const a of q.appends) leftStreams.add(a.stream);
        left.push(q);
        continue;
      }
      taken.push(q);
      events += q.events;
    }
    if (concurrent && taken.length < this.minConcurrentBatch && events < this.minConcurrentEvents) return [];
    this.stats.heldBack += left.length;
    this.queuedEvents -= events;
    this.queue.splice(0, scanned, ...left);
    return taken;
  }

  /** Counts the batch's streams as in flight; returns them for release. */
  private hold(batch: QueuedAppend[]): string[] {
    const streams = [...new Set(batch.flatMap((q) => q.appends.map((a) => a.stream)))];
    for (const s of streams) this.inFlightStreams.set(s, (this.inFlightStreams.get(s) ?? 0) + 1);
    return streams;
  }

  private release(streams: string[]): void {
    for (const s of streams) {
      const n = (this.inFlightStreams.get(s) ?? 1) - 1;
      if (n === 0) this.inFlightStreams.delete(s);
      else this.inFlightStreams.set(s, n);
    }
  }

  /** Runs one batch and settles every request in it. Never rejects. */
  private async sendBatch(batch: QueuedAppend[]): Promise<void> {
    this.stats.batches++;
    this.stats.requests += batch.length;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
    let rows: BatchRow[];
    const started = performance.now();
    try {
      rows = await this.runBatch(batch);
    } catch (error) {
      if (isConnectionError(error)) {
        for (const q of batch) q.reject(new StoreUnavailableError(error));
        return;
      }
      if (batch.length === 1 && !isEventIdRace(error)) {
        (batch[0] as QueuedAppend).reject(error);
        return;
      }
      // The batch failed as a whole and wrote nothing: another transaction stored one of its ids
      // after our probe (23505), or one request is malformed (e.g. an id that is not a UUID).
      // Retry each request alone, in queue order: a race then finds the winner's events and answers
      // with them, and a bad request fails alone.
      this.stats.fallbacks++;
      let anyWritten = false;
      for (const q of batch) {
        try {
          anyWritten = this.settle(q, await this.appendAlone(q)) || anyWritten;
        } catch (e) {
          q.reject(e);
        }
      }
      if (anyWritten) this.appended.emit('append');
      return;
    }
    const byRequest = new Map<number, BatchRow[]>();
    for (const row of rows) {
      const list = byRequest.get(row.request_no);
      if (list) list.push(row);
      else byRequest.set(row.request_no, [row]);
    }
    let anyWritten = false;
    const ran = performance.now();
    batch.forEach((q, i) => {
      anyWritten = this.settle(q, byRequest.get(i + 1) ?? []) || anyWritten;
    });
    if (anyWritten) this.appended.emit('append');
    if (this.timed.size > 0) this.emitTiming(batch, ran - started);
  }

  private emitTiming(batch: QueuedAppend[], sqlMs: number): void {
    const now = performance.now();
    const timing: AppendTiming = { sqlMs, requestMs: batch.map((q) => now - q.queuedAt) };
    for (const listener of this.timed) {
      try {
        listener(timing);
      } catch {
        // A listener's failure is its own: the batch is settled, and sendBatch never rejects.
      }
    }
  }

  /**
   * A batch's first try does not look its event ids up (es_append_batch, probe = false). When one of
   * them turns out to be stored (a retry appended at any revision), the batch wrote nothing, and it
   * goes once more, looking every id up first: retries are then answered inside the batch.
   */
  private async runBatch(batch: QueuedAppend[]): Promise<BatchRow[]> {
    try {
      return await this.sql.query<BatchRow>(APPEND_BATCH, batchParams(batch, false), 'tally_es_append_batch');
    } catch (error) {
      const e = error as { code?: string; constraint?: string };
      if (e?.code !== '23505' || e.constraint !== 'es_events_event_id') throw error;
      this.stats.probedAgain++;
      return await this.sql.query<BatchRow>(APPEND_BATCH, batchParams(batch, true), 'tally_es_append_batch');
    }
  }

  /** One request as a batch of its own; once more when it lost an id race (it then finds the winner's events). */
  private async appendAlone(q: QueuedAppend): Promise<BatchRow[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sql.query<BatchRow>(APPEND_BATCH, batchParams([q], true), 'tally_es_append_batch');
      } catch (error) {
        if (isEventIdRace(error) && attempt < 1) continue;
        if (isConnectionError(error)) throw new StoreUnavailableError(error);
        throw error;
      }
    }
  }

  /** Resolves or rejects the request from its result rows; true when it succeeded. Never throws. */
  private settle(q: QueuedAppend, rows: BatchRow[]): boolean {
    try {
      const failure = rows.find((r) => r.error !== null);
      if (failure) {
        q.reject(appendError(failure.error ?? '', failure.error_detail, q.appends));
        return false;
      }
      // One result per append, in the caller's order. No row for a stream: its ids are stored elsewhere.
      const byStream = new Map(rows.map((r) => [r.stream, r]));
      const results: AppendResult[] = [];
      for (const a of q.appends) {
        const row = byStream.get(a.stream);
        if (!row) {
          q.reject(new EventIdConflictError(a.events[0]?.id ?? ''));
          return false;
        }
        results.push({ nextRevision: Number(row.next_revision), position: row.position_text ?? '' });
      }
      q.resolve(results);
      return true;
    } catch (error) {
      q.reject(error);
      return false;
    }
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const params: unknown[] = [stream, options.fromRevision ?? 0, options.toRevision ?? Number.MAX_SAFE_INTEGER];
    let where = 'stream_id = $1 AND stream_revision >= $2 AND stream_revision <= $3';
    if (options.untilTime) {
      params.push(options.untilTime.toISOString());
      where += ` AND date_trunc('milliseconds', recorded_at) <= $${params.length}::timestamptz`;
    }
    let limit = '';
    if (options.maxCount !== undefined) {
      params.push(options.maxCount);
      limit = ` LIMIT $${params.length}`;
    }
    const rows = await this.guard(() =>
      this.sql.query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM es_events WHERE ${where} ORDER BY es_events.stream_revision${limit}`, params),
    );
    return toRecorded(rows);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const { columns, where, params } = readAllQuery(options);
    const rows = await this.guard(() =>
      this.sql.query<EventRow>(`SELECT ${columns} FROM es_events WHERE ${where} ORDER BY transaction_id, global_position LIMIT $${params.length}`, params),
    );
    return toRecorded(rows);
  }

  /**
   * One statement, so one snapshot for both: the head (a row even when no event follows) beside the
   * events read as readAll reads them. The join of one row to the ordered read keeps its order, which
   * is checked here rather than sorted again in SQL (a sort of the rows with their data costs the
   * server more than the round trip it saves).
   */
  async readAllWithHead(options: ReadAllOptions = {}): Promise<{ head: string; events: RecordedEvent[] }> {
    const { columns, where, params } = readAllQuery(options);
    const text = `SELECT h.head, e.* FROM (${HEAD}) h
           LEFT JOIN LATERAL (SELECT ${columns} FROM es_events WHERE ${where} ORDER BY transaction_id, global_position LIMIT $${params.length}) e ON true`;
    // Prepared, one name per text (readAllQuery's options make a handful): each batch of the
    // projections and the outbox begins with it, and planning it anew cost postgres about 0.3 ms a
    // batch (docs/performance.md, session 32).
    const name = `tally_read_with_head_${sha256Hex(text).slice(0, 16)}`;
    const rows = await this.guard(() => this.sql.query<EventRow & { head: string | null }>(text, params, name));
    const head = rows[0]?.head ?? '';
    if (rows[0]?.gp == null) return { head, events: [] };
    const events = toRecorded(rows);
    for (let i = 1; i < events.length; i++) {
      if (comparePositions((events[i - 1] as RecordedEvent).position, (events[i] as RecordedEvent).position) >= 0) {
        events.sort((a, b) => comparePositions(a.position, b.position));
        break;
      }
    }
    return { head, events };
  }

  subscribe(options: SubscribeOptions): Subscription {
    return runSubscription(this, options);
  }

  async headPosition(): Promise<string> {
    const rows = await this.guard(() => this.sql.query<{ head: string | null }>(HEAD));
    return rows[0]?.head ?? '';
  }

  /**
   * Sets the instant each named event was recorded at, for a copy of another log only (`tally events
   * seal`): its events keep the instants they were first recorded at. Neither a hash nor a position
   * covers the instant, so the chains and the order stay as appended.
   */
  async restoreRecordedTimes(events: ReadonlyArray<Pick<RecordedEvent, 'id' | 'recordedAt'>>): Promise<void> {
    if (events.length === 0) return;
    await this.guard(() =>
      this.sql.query('UPDATE es_events e SET recorded_at = t.at FROM unnest($1::uuid[], $2::timestamptz[]) AS t(id, at) WHERE e.event_id = t.id', [
        events.map((e) => e.id),
        events.map((e) => e.recordedAt),
      ]),
    );
  }

  /** `listener` runs after every append that wrote events (in this process). */
  onAppended(listener: () => void): void {
    this.appended.on('append', listener);
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
    await this.guard(() => this.sql.query('SELECT 1'));
  }

  async close(): Promise<void> {
    this.appended.emit('append');
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (isConnectionError(error)) throw new StoreUnavailableError(error);
      throw error;
    }
  }
}
