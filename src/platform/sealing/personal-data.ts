import type { Json, JsonObject, NewEvent, RecordedEvent } from '../../eventstore/port';
import { openWith, parseSealed, type SealedParts, sealDeterministic } from './cipher';
import { type DataKey, type DataKeys, ErasedKeyError } from './data-keys';

/**
 * Where an event type carries personal data, as the domain that owns the event declares it
 * (src/domain/<capability>/personal-data.ts); the composition root hands the list to the platform.
 */
export interface PersonalFields {
  type: string;
  /** Paths in the event's data: `email`, `document.idNumber`, or `fields.*` for every key of the object at `fields`. */
  paths: readonly string[];
  /** Whose data key seals them, from the same event's data (`keyOwner.user(data.userId)`). */
  owner(data: JsonObject): string;
}

/** What an erased value reads as: null for the service (a rebuilt row holds null), `[erased]` in the CLI's output. */
export type ErasedAs = null | string;

type Segments = readonly string[];

/**
 * Seals the declared personal fields of events on their way into the log and opens them on the way
 * out. A value is sealed as its JSON text under its owner's data key (AES-256-GCM with a synthetic
 * IV: cipher.ts, sealDeterministic), bound to its stream, event id, type and path, so a sealed value
 * moved to another field, event or stream does not open. Reading, a value opens only if it is a
 * sealed text that opens under its binding; anything else reads as stored (a value written in clear
 * before sealing, or one that only looks sealed); under a destroyed key it reads as `erasedAs`.
 * Event types with nothing declared cost a Map lookup each.
 */
export class PersonalData {
  private readonly byType = new Map<string, { paths: Segments[]; owner: (data: JsonObject) => string }>();

  constructor(
    private readonly keys: DataKeys,
    declared: readonly PersonalFields[],
  ) {
    for (const d of declared) {
      if (this.byType.has(d.type)) throw new Error(`personal fields of ${d.type} are declared twice`);
      this.byType.set(d.type, { paths: d.paths.map((p) => p.split('.')), owner: d.owner });
    }
  }

  /**
   * Whether any of `events` has a value at one of its type's personal paths: an event of a declared
   * type that carries none (a transfer's TransactionCreated: only a payout's names a bank account
   * holder) costs a Map lookup and a walk of its paths, and no await.
   */
  concerns(events: ReadonlyArray<{ type: string; data: JsonObject }>): boolean {
    for (const e of events) {
      const declared = this.byType.get(e.type);
      if (declared && carries(e.data, declared.paths)) return true;
    }
    return false;
  }

  /**
   * The events with their personal fields sealed (new objects; the caller's stay as they were). An
   * owner whose key is destroyed (erased) gets null: a late event about them (a provider's callback)
   * is written without what they were. `keepSealed` (the copy of an old log, `tally events seal`): a
   * value already sealed under its binding, or under a destroyed key, is kept as it is.
   */
  async seal(stream: string, events: NewEvent[], keepSealed = false): Promise<NewEvent[]> {
    const keys = new Map<string, DataKey | null>();
    for (const e of events) {
      const declared = this.byType.get(e.type);
      if (declared && carries(e.data, declared.paths)) {
        const owner = declared.owner(e.data);
        if (!keys.has(owner)) keys.set(owner, await this.keyOf(owner));
      }
    }
    const known = keepSealed ? await this.keysNamedIn(events) : new Map<string, DataKey | 'erased'>();
    return events.map((e) => {
      const declared = this.byType.get(e.type);
      if (!declared) return e;
      const key = keys.get(declared.owner(e.data));
      const data = mapPaths(e.data, declared.paths, (value, path) => {
        const boundTo = binding(stream, e.id, e.type, path);
        if (keepSealed && typeof value === 'string' && opens(value, boundTo, known) !== undefined) return value;
        return key ? sealDeterministic(key.key, key.id, Buffer.from(JSON.stringify(value), 'utf8'), boundTo) : null;
      });
      return data === e.data ? e : { ...e, data };
    });
  }

  /** The events with their personal fields open (new objects where something opened; the others as they are). */
  async open(events: RecordedEvent[], erasedAs: ErasedAs): Promise<RecordedEvent[]> {
    const known = await this.keysNamedIn(events);
    return events.map((e) => {
      const declared = this.byType.get(e.type);
      if (!declared) return e;
      const data = mapPaths(e.data, declared.paths, (value, path) => {
        if (typeof value !== 'string') return value;
        const opened = opens(value, binding(e.stream, e.id, e.type, path), known);
        return opened === undefined ? value : opened === ERASED ? erasedAs : opened;
      });
      return data === e.data ? e : { ...e, data };
    });
  }

  /** The owner's key; null once destroyed. */
  private async keyOf(owner: string): Promise<DataKey | null> {
    try {
      return await this.keys.forOwner(owner);
    } catch (error) {
      if (error instanceof ErasedKeyError) return null;
      throw error;
    }
  }

  /** The data keys the sealed-looking values of `events` name, each looked up once (one await per key, not per value). */
  private async keysNamedIn(events: ReadonlyArray<{ type: string; data: JsonObject }>): Promise<Map<string, DataKey | 'erased'>> {
    const ids = new Set<string>();
    for (const e of events) {
      const declared = this.byType.get(e.type);
      if (!declared) continue;
      mapPaths(e.data, declared.paths, (value) => {
        const parts = typeof value === 'string' ? parseSealed(value) : null;
        if (parts) ids.add(parts.keyId);
        return value;
      });
    }
    const known = new Map<string, DataKey | 'erased'>();
    for (const id of ids) {
      const key = await this.keys.find(id);
      if (key) known.set(id, key);
    }
    return known;
  }
}

const ERASED = Symbol('erased');

const binding = (stream: string, eventId: string, type: string, path: string) => `personal-data:${stream}:${eventId}:${type}:${path}`;

/** The value a stored text holds; ERASED under a destroyed key; undefined when it is not a value sealed under this binding. */
function opens(text: string, boundTo: string, keys: Map<string, DataKey | 'erased'>): Json | typeof ERASED | undefined {
  const parts: SealedParts | null = parseSealed(text);
  const key = parts && keys.get(parts.keyId);
  if (!parts || !key) return undefined;
  if (key === 'erased') return ERASED;
  let plaintext: string;
  try {
    plaintext = openWith(key.key, parts, boundTo).toString('utf8');
  } catch {
    // Not sealed under this binding: a clear value that looks like a sealed one (or one moved here), read as stored.
    return undefined;
  }
  return JSON.parse(plaintext) as Json;
}

/** Whether `data` has a value (not null) at one of the paths. */
function carries(data: JsonObject, paths: Segments[]): boolean {
  let found = false;
  mapPaths(data, paths, (value) => {
    found = true;
    return value;
  });
  return found;
}

/**
 * `data` with `fn` applied to the value at each path (nulls and absent values are left alone),
 * copied along the paths that changed and shared elsewhere.
 */
function mapPaths(data: JsonObject, paths: Segments[], fn: (value: Json, path: string) => Json): JsonObject {
  let out = data;
  for (const path of paths) out = mapAt(out, path, 0, '', fn) as JsonObject;
  return out;
}

function mapAt(node: Json, path: Segments, at: number, prefix: string, fn: (value: Json, path: string) => Json): Json {
  if (at === path.length) return node === null ? node : fn(node, prefix);
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return node;
  const segment = path[at] as string;
  const names = segment === '*' ? Object.keys(node) : [segment];
  let copy: JsonObject | undefined;
  for (const name of names) {
    const value = node[name];
    if (value === undefined) continue;
    const mapped = mapAt(value, path, at + 1, prefix ? `${prefix}.${name}` : name, fn);
    if (mapped === value) continue;
    copy ??= { ...node };
    copy[name] = mapped;
  }
  return copy ?? node;
}
