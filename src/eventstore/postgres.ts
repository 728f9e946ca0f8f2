import { EventEmitter } from 'node:events';
import { eventDigest } from './hash';
import { EVENT_LOG_SCHEMA } from './postgres-schema';
import {
  type AppendResult,
  EventIdConflictError,
  type EventMetadata,
  type EventStore,
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
import type { Sql } from './sql';
import { runSubscription } from './subscription';

const MAX_READ_BATCH = 1_000;

interface EventRow {
  position: string;
  stream_id: string;
  stream_revision: string;
  event_id: string;
  type: string;
  data: JsonObject;
  metadata: EventMetadata;
  recorded_at: string;
  hash: string;
}

const EVENT_COLUMNS = `lpad(transaction_id::text, 20, '0') || ':' || lpad(global_position::text, 20, '0') AS position,
  stream_id, stream_revision::text, event_id::text, type, data, metadata,
  to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at, hash`;

/** Only rows of transactions older than every running one: see postgres-schema.ts. */
const VISIBLE = 'transaction_id < pg_snapshot_xmin(pg_current_snapshot())';

function toRecorded(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    stream: row.stream_id,
    revision: Number(row.stream_revision),
    position: row.position,
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    recordedAt: row.recorded_at,
    hash: row.hash,
  };
}

function parsePosition(position: string): [string, string] {
  const [xid, gp] = position.split(':');
  if (!xid || !gp || !/^\d{20}$/.test(xid) || !/^\d{20}$/.test(gp)) throw new Error(`Invalid position ${position}`);
  return [xid.replace(/^0+(?=\d)/, ''), gp.replace(/^0+(?=\d)/, '')];
}

function escapeLike(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Connection-level failures (server down, refused, reset) become StoreUnavailableError. */
function isConnectionError(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (typeof e?.code === 'string' && (e.code.startsWith('08') || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P03'].includes(e.code)))
    return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(e?.message ?? '');
}

export class PostgresEventStore implements EventStore {
  readonly kind: 'postgres' | 'pglite';
  private readonly appended = new EventEmitter();

  constructor(readonly sql: Sql) {
    this.kind = sql.kind;
    this.appended.setMaxListeners(0);
  }

  static async create(sql: Sql): Promise<PostgresEventStore> {
    await sql.exec(EVENT_LOG_SCHEMA);
    return new PostgresEventStore(sql);
  }

  async append(stream: string, events: NewEvent[], expectedRevision: StreamAppend['expectedRevision']): Promise<AppendResult> {
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
    const request = appends.map((a) => {
      const expected = normalizeExpected(a.expectedRevision);
      return {
        stream: a.stream,
        expected: String(expected),
        events: a.events.map((e) => {
          const metadata = e.metadata ?? {};
          return { id: e.id, type: e.type, data: e.data, metadata, digest: eventDigest({ stream: a.stream, id: e.id, type: e.type, data: e.data, metadata }) };
        }),
      };
    });
    const rows = await this.callAppend(request, appends);
    const byStream = new Map(rows.map((r) => [r.stream, r]));
    const results = appends.map((a) => {
      const row = byStream.get(a.stream);
      if (!row) throw new EventIdConflictError(a.events[0]?.id ?? '');
      return { nextRevision: Number(row.next_revision), position: row.position_text };
    });
    this.appended.emit('append');
    return results;
  }

  private async callAppend(request: unknown, appends: StreamAppend[]) {
    type Row = { stream: string; next_revision: string; position_text: string };
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sql.query<Row>('SELECT stream, next_revision::text, position_text FROM es_append($1::jsonb)', [JSON.stringify(request)]);
      } catch (error) {
        const e = error as { message?: string; detail?: string; code?: string; constraint?: string };
        if (e.message === 'WRONG_EXPECTED_REVISION') {
          const detail = JSON.parse(e.detail ?? '{}') as { stream: string; actual: number };
          const append = appends.find((a) => a.stream === detail.stream);
          throw new WrongExpectedRevisionError(detail.stream, append?.expectedRevision ?? 'any', Number(detail.actual));
        }
        if (e.message === 'EVENT_ID_CONFLICT') throw new EventIdConflictError(appends[0]?.events[0]?.id ?? '');
        // Two identical retries raced past the id check: the loser sees the unique index. Once more
        // and it finds the winner's events and answers with them.
        if (e.code === '23505' && e.constraint === 'es_events_event_id' && attempt < 1) continue;
        if (isConnectionError(error)) throw new StoreUnavailableError(error);
        throw error;
      }
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
    return rows.map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const params: unknown[] = [];
    const conditions = [VISIBLE];
    if (options.fromPosition) {
      const [xid, gp] = parsePosition(options.fromPosition);
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
    const rows = await this.guard(() =>
      this.sql.query<EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM es_events WHERE ${conditions.join(' AND ')} ORDER BY transaction_id, global_position LIMIT $${params.length}`,
        params,
      ),
    );
    return rows.map(toRecorded);
  }

  subscribe(options: SubscribeOptions): Subscription {
    return runSubscription(this, options);
  }

  async headPosition(): Promise<string> {
    const rows = await this.guard(() =>
      this.sql.query<{ position: string }>(
        `SELECT lpad(transaction_id::text, 20, '0') || ':' || lpad(global_position::text, 20, '0') AS position
           FROM es_events WHERE ${VISIBLE} ORDER BY transaction_id DESC, global_position DESC LIMIT 1`,
      ),
    );
    return rows[0]?.position ?? '';
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
