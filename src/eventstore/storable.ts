import { LIMITS } from '../platform/limits';
/**
 * What the log and every read model can hold, defined once: the API's edge refuses exactly this
 * (400 naming the field) and every store adapter refuses to append it (a bug if it gets that far).
 *
 * Refused in any string, keys included: U+0000 (Postgres text and jsonb cannot hold it), lone
 * surrogates (not encodable as UTF-8), and the other control characters of Unicode's Cc category
 * (C0, DEL, C1) except tab, line feed and carriage return, which text fields legitimately carry.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSTORABLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Deeper than this, a value is refused: no field of ours nests so deep, and walking it costs stack. */
export const MAX_STORABLE_DEPTH = LIMITS.store.storableDepth;

export type Unstorable = { path: string; reason: 'characters' | 'depth' };

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/**
 * The first place in `value` that no store can hold, or null. `path` names it the way validation
 * messages name fields (`source.metadata.note`, `items.2`); a bad key is named by its object's path.
 */
export function findUnstorable(value: unknown, path = '', maxDepth = MAX_STORABLE_DEPTH): Unstorable | null {
  return walk(value, path, 0, maxDepth);
}

function walk(value: unknown, path: string, depth: number, maxDepth: number): Unstorable | null {
  if (typeof value === 'string') return isStorableText(value) ? null : { path, reason: 'characters' };
  if (value === null || typeof value !== 'object') return null;
  if (depth >= maxDepth) return { path, reason: 'depth' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], join(path, String(i)), depth + 1, maxDepth);
      if (found) return found;
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    if (!isStorableText(key)) return { path, reason: 'characters' };
    const found = walk((value as Record<string, unknown>)[key], join(path, key), depth + 1, maxDepth);
    if (found) return found;
  }
  return null;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Thrown by every adapter before it writes anything: a caller tried to log what no store can hold. */
export class UnstorableEventError extends Error {
  constructor(stream: string, type: string, where: Unstorable) {
    super(
      `Refusing to append ${type} to ${stream}: ${where.path || 'its text'} ${where.reason === 'characters' ? 'contains characters no store can hold' : 'is nested too deeply'}`,
    );
    this.name = 'UnstorableEventError';
  }
}

/** The append guard of every adapter: the whole append is refused when one event could not be held. */
export function assertStorable(appends: ReadonlyArray<{ stream: string; events: ReadonlyArray<{ type: string; data: unknown; metadata?: unknown }> }>): void {
  // The events of one command share their metadata object: it is checked once.
  const checkedMetadata = new Set<unknown>();
  for (const a of appends) {
    for (const e of a.events) {
      const metadata = e.metadata ?? {};
      const where =
        (isStorableText(a.stream) && isStorableText(e.type) ? null : { path: 'stream or type', reason: 'characters' as const }) ??
        findUnstorable(e.data, 'data') ??
        (checkedMetadata.has(metadata) ? null : findUnstorable(metadata, 'metadata'));
      if (where) throw new UnstorableEventError(a.stream, e.type, where);
      checkedMetadata.add(metadata);
    }
  }
}

/** `text` with whatever no store can hold replaced by U+FFFD (for messages that quote input). */
export function storableText(text: string): string {
  return text.replace(new RegExp(UNSTORABLE.source, 'g'), '\uFFFD');
}
