import { GENESIS_HASH } from '../../eventstore/hash';
import type { EventMetadata, EventStore, JsonObject, RecordedEvent } from '../../eventstore/port';

/** Events per read of the log: a page is read, written out, and dropped before the next. */
export const LOG_PAGE_SIZE = 1_000;
/** Streams whose last hash a reader of the log remembers; past it the oldest is forgotten (and read again if needed). */
const REMEMBERED_HEADS = 10_000;

/**
 * An event as an auditor gets it, the same from every route and from `tally events export`: where it
 * is (stream, revision, position), what it is (id, type, data and metadata as stored, personal data
 * included), when it was recorded, and both ends of its link in the stream's hash chain, so a
 * reader can check the chain (hash.ts) from any event without the one before it.
 */
export interface AuditEvent {
  stream: string;
  revision: number;
  position: string;
  id: string;
  type: string;
  data: JsonObject;
  metadata: EventMetadata;
  recordedAt: string;
  hash: string;
  /** The hash of the stream's event before it (64 zeros for revision 0). */
  previousHash: string;
}

export const auditEvent = (e: RecordedEvent, previousHash: string): AuditEvent => ({
  stream: e.stream,
  revision: e.revision,
  position: e.position,
  id: e.id,
  type: e.type,
  data: e.data,
  metadata: e.metadata,
  recordedAt: e.recordedAt,
  hash: e.hash,
  previousHash,
});

/** A stream's events from its revision 0, each with its previous hash. */
export function chained(events: RecordedEvent[]): AuditEvent[] {
  let previous = GENESIS_HASH;
  return events.map((e) => {
    const event = auditEvent(e, e.revision === 0 ? GENESIS_HASH : previous);
    previous = e.hash;
    return event;
  });
}

/** The whole log (or what follows `fromPosition`), page by page, in global order. */
export async function* logPages(store: EventStore, fromPosition?: string, signal?: AbortSignal): AsyncGenerator<RecordedEvent[]> {
  let position = fromPosition || undefined;
  while (!signal?.aborted) {
    const page = await store.readAll({ fromPosition: position, maxCount: LOG_PAGE_SIZE });
    if (page.length === 0) return;
    yield page;
    position = page[page.length - 1]?.position;
  }
}

/**
 * The log's events recorded in [fromMs, toMs), in log order, a page at a time, each with its previous
 * hash. Record times are not in position order across concurrent writers, so the whole log is read,
 * not cut off at the first event past `toMs`. Memory stays bounded whatever the log's size: one page,
 * and the last hash of at most REMEMBERED_HEADS streams (an event whose predecessor was forgotten
 * has it read from its stream).
 */
export async function* eventsRecordedBetween(store: EventStore, fromMs: number, toMs: number, signal?: AbortSignal): AsyncGenerator<AuditEvent[]> {
  const heads = new Map<string, { revision: number; hash: string }>();
  for await (const page of logPages(store, undefined, signal)) {
    const out: AuditEvent[] = [];
    for (const e of page) {
      const t = Date.parse(e.recordedAt);
      if (t >= fromMs && t < toMs) out.push(auditEvent(e, await previousHash(store, heads, e)));
      heads.delete(e.stream);
      heads.set(e.stream, { revision: e.revision, hash: e.hash });
      if (heads.size > REMEMBERED_HEADS) heads.delete(heads.keys().next().value as string);
    }
    if (out.length > 0) yield out;
  }
}

async function previousHash(store: EventStore, heads: Map<string, { revision: number; hash: string }>, e: RecordedEvent): Promise<string> {
  if (e.revision === 0) return GENESIS_HASH;
  const head = heads.get(e.stream);
  if (head && head.revision === e.revision - 1) return head.hash;
  const [before] = await store.readStream(e.stream, { fromRevision: e.revision - 1, toRevision: e.revision - 1, maxCount: 1 });
  return before?.hash ?? '';
}
