import * as kdb from '@kurrent/kurrentdb-client';
import type { KurrentClientWithFeatures, ServerFeatures } from '../../src/eventstore/kurrentdb';

/**
 * A fake KurrentDB 25.1 behind the client calls the adapter makes, answering as the server and
 * client 1.3.1 do in the cases that matter to the adapter (server: kurrent-io/KurrentDB v25.1.0):
 * - a write at an exact revision is checked as IndexWriter.CheckCommit does: Ok at the stream's
 *   revision, Idempotent when the same ids are stored from revision+1, IdempotentNotReady when they
 *   are written but not yet indexed, WrongExpectedVersion otherwise;
 * - the outcomes are put together as StorageWriterService.VerifyCommitChecks does: a write that
 *   meets IdempotentNotReady is dropped unanswered, and after `writeTimeoutMs` (the server's
 *   WriteTimeoutMs) a single-stream append fails with DeadlineExceededError (v1 Status.Timeout) and
 *   a multi-stream one with UnavailableError (the v2 API maps PrepareTimeout to INTERNAL); a
 *   multi-stream mix of Idempotent with Ok or WrongExpectedVersion, or a corrupted idempotency,
 *   is a WrongExpectedVersion with no failed stream, on which the v2 API's own error mapping fails:
 *   INTERNAL, UnavailableError again;
 * - a write is readable, and answered, `indexLagMs` after it is written (and takes the stream's
 *   revision at once, so a conflicting write in that window is refused before the winner is readable);
 * - reads without requiresLeader see the log as a follower `followerLagWrites` writes behind does;
 * - `loseReplies` writes are applied and never answered.
 */
export interface FakeServerOptions {
  indexLagMs?: number;
  writeTimeoutMs?: number;
  serverVersion?: string;
  multiStreamAppend?: boolean;
}

interface StoredRecord {
  id: string;
  stream: string;
  revision: number;
  seq: number;
  type: string;
  data: unknown;
  metadata: unknown;
  created: Date;
  indexed: boolean;
  write: number;
}

type Decision = { kind: 'ok' | 'wrong' | 'corrupt'; current: number } | { kind: 'idempotent' | 'not_ready'; current: number; last: StoredRecord };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const never = () => new Promise<never>(() => {});

export class FakeKurrentServer {
  readonly indexLagMs: number;
  readonly writeTimeoutMs: number;
  readonly serverVersion: string;
  readonly multiStreamAppend: boolean;
  /** Reads without requiresLeader see only the writes older than the last this many. */
  followerLagWrites = 0;
  /** Runs once, when the next multi-stream append arrives and before it is checked (to change the log under it). */
  beforeNextSession: (() => Promise<void>) | undefined;
  /** The next this many writes are applied but their replies never come. */
  loseReplies = 0;
  /** Every write the server received, by kind, and every stream read's requiresLeader. */
  readonly writes: Array<{ kind: 'single' | 'multi'; streams: string[]; outcome: string }> = [];
  readonly streamReads: Array<{ stream: string; requiresLeader: boolean }> = [];
  private readonly log: StoredRecord[] = [];
  private readonly streams = new Map<string, StoredRecord[]>();
  private writeCount = 0;

  constructor(options: FakeServerOptions = {}) {
    this.indexLagMs = options.indexLagMs ?? 0;
    this.writeTimeoutMs = options.writeTimeoutMs ?? 2_000;
    this.serverVersion = options.serverVersion ?? '25.1.0';
    this.multiStreamAppend = options.multiStreamAppend ?? true;
  }

  client(): KurrentClientWithFeatures {
    const features: ServerFeatures = {
      serverVersion: this.serverVersion,
      supports: (method) => this.multiStreamAppend || !method.path.toLowerCase().endsWith('/appendsession'),
    };
    return {
      capabilities: Promise.resolve(features),
      appendToStream: (stream, events, options) => this.appendToStream(stream, events, options),
      multiStreamAppend: (requests) => this.appendSession(requests),
      readStream: (stream, options) => this.readStream(stream, options),
      readAll: (options) => this.readAll(options),
      dispose: async () => {},
    };
  }

  private async appendToStream(stream: string, events: kdb.EventData[], options: kdb.AppendToStreamOptions): Promise<kdb.AppendResult> {
    const decision = this.check(stream, options.streamState, events);
    this.writes.push({ kind: 'single', streams: [stream], outcome: decision.kind });
    switch (decision.kind) {
      case 'ok': {
        const last = await this.commit([{ stream, events, multi: false }]);
        return { success: true, nextExpectedRevision: BigInt(last[0]?.revision ?? -1), position: position(last[0]) };
      }
      case 'idempotent':
        return { success: true, nextExpectedRevision: BigInt(decision.last.revision), position: position(decision.last) };
      case 'not_ready':
        await sleep(this.writeTimeoutMs);
        throw new kdb.DeadlineExceededError();
      default:
        throw this.conflict(stream, options.streamState ?? kdb.ANY, decision.current);
    }
  }

  private async appendSession(requests: kdb.AppendStreamRequest[]): Promise<kdb.MultiAppendResult> {
    const before = this.beforeNextSession;
    this.beforeNextSession = undefined;
    if (before) await before();
    const decisions = requests.map((r) => this.check(r.streamName, r.expectedState, r.events));
    const outcome = this.combine(decisions);
    this.writes.push({ kind: 'multi', streams: requests.map((r) => r.streamName), outcome });
    switch (outcome) {
      case 'ok': {
        const last = await this.commit(requests.map((r) => ({ stream: r.streamName, events: r.events, multi: true })));
        return { position: BigInt(last.at(-1)?.seq ?? 0), responses: last.map((l) => ({ streamName: l.stream, revision: BigInt(l.revision) })) };
      }
      case 'idempotent':
        return {
          position: BigInt(Math.max(...decisions.map((d) => ('last' in d ? d.last.seq : 0)))),
          responses: requests.map((r, i) => ({ streamName: r.streamName, revision: BigInt((decisions[i] as { current: number }).current) })),
        };
      case 'not_ready':
        await sleep(this.writeTimeoutMs);
        throw new kdb.UnavailableError(undefined, 'Append Session completed in error with unexpected result: PrepareTimeout');
      case 'internal':
        throw new kdb.UnavailableError(undefined, 'Append Session failed to map error: Index was outside the bounds of the array.');
      default: {
        const i = decisions.findIndex((d) => d.kind === 'wrong');
        const r = requests[i] as kdb.AppendStreamRequest;
        throw this.conflict(r.streamName, r.expectedState, (decisions[i] as Decision).current);
      }
    }
  }

  /** VerifyCommitChecks (StorageWriterService.cs:687-792 at v25.1.0), for the v2 API's reply. */
  private combine(decisions: Decision[]): 'ok' | 'idempotent' | 'not_ready' | 'internal' | 'wrong' {
    for (const d of decisions) {
      if (d.kind === 'not_ready') return 'not_ready';
      if (d.kind === 'corrupt') return decisions.length === 1 ? 'wrong' : 'internal';
    }
    const count = (kind: Decision['kind']) => decisions.filter((d) => d.kind === kind).length;
    if (count('ok') === decisions.length) return 'ok';
    if (count('idempotent') === decisions.length) return 'idempotent';
    if (count('idempotent') === 0) return 'wrong';
    return 'internal';
  }

  /** IndexWriter.CheckCommit (IndexWriter.cs:154-258 at v25.1.0) for an exact expected revision. */
  private check(stream: string, state: kdb.AppendStreamState | undefined, events: kdb.EventData[]): Decision {
    if (state !== kdb.NO_STREAM && typeof state !== 'bigint') throw new Error(`the adapter sent ${String(state)}: it only writes at exact revisions`);
    const expected = state === kdb.NO_STREAM ? -1 : Number(state);
    const stored = this.streams.get(stream) ?? [];
    const current = stored.length - 1;
    if (expected === current) return { kind: 'ok', current };
    if (expected > current) return { kind: 'wrong', current };
    let last: StoredRecord | undefined;
    for (const [i, e] of events.entries()) {
      const found = stored[expected + 1 + i];
      if (found?.id !== e.id) return { kind: i === 0 ? 'wrong' : 'corrupt', current };
      last = found;
    }
    if (!last) return { kind: 'wrong', current };
    return { kind: last.indexed ? 'idempotent' : 'not_ready', current, last };
  }

  private conflict(streamName: string, expected: kdb.AppendStreamState, current: number): kdb.WrongExpectedVersionError {
    return new kdb.WrongExpectedVersionError(undefined, { streamName, expected, current: current < 0 ? 'no_stream' : BigInt(current) });
  }

  /** Takes the revisions at once, becomes readable (and answered) after the index lag. */
  private async commit(appends: Array<{ stream: string; events: kdb.EventData[]; multi: boolean }>): Promise<StoredRecord[]> {
    const write = ++this.writeCount;
    const records: StoredRecord[] = [];
    for (const a of appends) {
      const stored = this.streams.get(a.stream) ?? [];
      this.streams.set(a.stream, stored);
      for (const e of a.events) {
        const metadata = a.multi ? { ...(e.metadata as object), '$schema.name': e.type, '$schema.format': 'Json' } : e.metadata;
        const record: StoredRecord = {
          id: e.id as string,
          stream: a.stream,
          revision: stored.length,
          seq: (this.log.length + 1) * 10,
          type: e.type,
          data: JSON.parse(JSON.stringify(e.data)),
          metadata: JSON.parse(JSON.stringify(metadata ?? {})),
          created: new Date(),
          indexed: false,
          write,
        };
        stored.push(record);
        this.log.push(record);
        records.push(record);
      }
    }
    const lose = this.loseReplies > 0;
    if (lose) this.loseReplies--;
    if (this.indexLagMs > 0) await sleep(this.indexLagMs);
    for (const r of records) r.indexed = true;
    if (lose) return never();
    return appends.map((a) => records.filter((r) => r.stream === a.stream).at(-1) as StoredRecord);
  }

  private visible(requiresLeader: boolean | undefined): (r: StoredRecord) => boolean {
    const newestSeen = requiresLeader ? this.writeCount : this.writeCount - this.followerLagWrites;
    return (r) => r.indexed && r.write <= newestSeen;
  }

  private async *readStream(stream: string, options: kdb.ReadStreamOptions): AsyncGenerator<kdb.ResolvedEvent> {
    this.streamReads.push({ stream, requiresLeader: options.requiresLeader === true });
    const events = (this.streams.get(stream) ?? []).filter(this.visible(options.requiresLeader));
    if (events.length === 0) throw new kdb.StreamNotFoundError(undefined, stream);
    const backwards = options.direction === kdb.BACKWARDS;
    const from = options.fromRevision ?? kdb.START;
    let list = backwards ? [...events].reverse() : events;
    if (typeof from === 'bigint') list = list.filter((e) => (backwards ? e.revision <= Number(from) : e.revision >= Number(from)));
    for (const e of list.slice(0, Number(options.maxCount ?? Number.MAX_SAFE_INTEGER))) {
      await Promise.resolve();
      yield { event: recorded(e) as kdb.ResolvedEvent['event'] };
    }
  }

  private async *readAll(options: kdb.ReadAllOptions): AsyncGenerator<kdb.AllStreamResolvedEvent> {
    const backwards = options.direction === kdb.BACKWARDS;
    const from = options.fromPosition ?? kdb.START;
    const filter = options.filter as { filterOn: string; prefixes?: string[]; regex?: string } | undefined;
    const passes = (e: StoredRecord) =>
      !filter ||
      (filter.filterOn === kdb.STREAM_NAME ? (filter.prefixes ?? []).some((p) => e.stream.startsWith(p)) : new RegExp(filter.regex ?? '').test(e.type));
    let list = this.log.filter(this.visible(options.requiresLeader)).filter(passes);
    if (backwards) list = list.reverse();
    if (typeof from === 'object') list = list.filter((e) => (backwards ? e.seq <= Number(from.commit) : e.seq >= Number(from.commit)));
    for (const e of list.slice(0, Number(options.maxCount ?? Number.MAX_SAFE_INTEGER))) {
      await Promise.resolve();
      yield { event: recorded(e) as kdb.AllStreamRecordedEvent };
    }
  }
}

function position(r: StoredRecord | undefined): kdb.Position | undefined {
  return r ? { commit: BigInt(r.seq), prepare: BigInt(r.seq) } : undefined;
}

function recorded(r: StoredRecord) {
  return {
    streamId: r.stream,
    id: r.id,
    revision: BigInt(r.revision),
    type: r.type,
    created: r.created,
    data: r.data,
    metadata: r.metadata,
    isJson: true,
    contentType: 'application/json',
    position: position(r),
  };
}
