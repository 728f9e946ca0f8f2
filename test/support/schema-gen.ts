import fc from 'fast-check';

/**
 * Request data from a route's own JSON schemas (TypeBox), for the fuzz test: values the schema
 * accepts, and mutants of them (wrong types, missing and extra fields, text no store can hold, numbers
 * at the edges, huge and deep values). Bodies are written as JSON text by `jsonText`, so a mutant can
 * carry number tokens no double can (`1e400`, `-0`, `9223372036854775808`) through `RawJson`.
 */

/** The subset of JSON Schema the route table uses. */
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  default?: unknown;
}

/** JSON text put into a body as it is (a number token, a deep value written by hand). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** Field name -> realistic values (ids of things that exist), mixed into the valid generator. */
export type Hints = (name: string, schema: Schema) => fc.Arbitrary<unknown> | undefined;

const noHints: Hints = () => undefined;

/** What the service takes as text (decisions, "Input and hardening"): no U+0000, lone surrogate or C0/C1/DEL but tab, LF, CR. */
export function isStorableText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
    if (c >= 0x7f && c <= 0x9f) return false;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}

const codePoints = (s: string) => [...s].length;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]{2,}$/;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function typeOf(schema: Schema): string | undefined {
  if (Array.isArray(schema.type)) return schema.type[0];
  if (schema.type) return schema.type;
  if (schema.properties) return 'object';
  return undefined;
}

function intArb(min: number, max: number): fc.Arbitrary<number> {
  const lo = Math.max(min, -MAX_SAFE);
  const hi = Math.min(max, MAX_SAFE);
  const small = fc.integer({ min: Math.max(lo, -1000), max: Math.min(hi, 1000) });
  const wide = fc.bigInt({ min: BigInt(lo), max: BigInt(hi) }).map(Number);
  return lo <= 1000 && hi >= -1000 && Math.max(lo, -1000) <= Math.min(hi, 1000)
    ? fc.oneof({ weight: 3, arbitrary: small }, { weight: 1, arbitrary: wide })
    : wide;
}

function stringArb(schema: Schema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Math.max(min, 40);
  const fits = (s: string) => codePoints(s) >= min && codePoints(s) <= max && isStorableText(s);
  if (schema.enum) return fc.constantFrom(...(schema.enum as string[]));
  if (schema.const !== undefined) return fc.constant(schema.const as string);
  switch (schema.format) {
    case 'uuid':
      return fc.uuid();
    case 'email':
    case 'trimmed-email':
      return fc
        .tuple(fc.emailAddress(), fc.constantFrom('', ' ', '  '), fc.boolean())
        .map(([e, pad, upper]) => `${pad}${upper ? e.toUpperCase() : e}${pad}`)
        .filter((e) => EMAIL_RE.test(e.trim()) && fits(e));
    case 'date-time':
      return fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString());
    case 'date':
      return fc
        .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-12-31T00:00:00Z'), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 10));
  }
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  return fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 60) }).filter(fits);
}

function numberArb(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + (integer ? 1 : 1e-8) : -1e12);
  const max = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - (integer ? 1 : 1e-8) : 1e12);
  if (integer) return intArb(Math.ceil(min), Math.floor(max));
  return fc.oneof(
    intArb(Math.ceil(min), Math.floor(max)),
    fc
      .integer({ min: 0, max: 10_000_000 })
      .map((n) => n / 100)
      .filter((n) => n >= min && n <= max),
    fc.double({ min, max, noNaN: true, noDefaultInfinity: true }),
  );
}

/** Values the schema accepts (before the handler's own rules). */
export function valid(schema: Schema, hints: Hints = noHints, name = '', depth = 0): fc.Arbitrary<unknown> {
  const hinted = name ? hints(name, schema) : undefined;
  const plain = validPlain(schema, hints, depth);
  return hinted ? fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: plain }) : plain;
}

function validPlain(schema: Schema, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return fc.oneof(...branches.map((b) => valid(b, hints, '', depth)));
  if (schema.allOf) return valid(Object.assign({}, ...schema.allOf) as Schema, hints, '', depth);
  switch (typeOf(schema)) {
    case 'string':
      return stringArb(schema);
    case 'integer':
      return numberArb(schema, true);
    case 'number':
      return numberArb(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? valid(schema.items, hints, '', depth + 1) : fc.jsonValue({ maxDepth: 2 }), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'object': {
      const properties = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [key, sub] of Object.entries(properties)) model[key] = valid(sub, hints, key, depth + 1);
      const record = fc.record(model, { requiredKeys: [...required].filter((k) => k in properties) });
      if (schema.additionalProperties === undefined || schema.additionalProperties === false || depth > 3) return record;
      const extra = fc.dictionary(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter(isStorableText),
        fc.jsonValue({ maxDepth: 2 }).filter((v) => isStorableText(JSON.stringify(v))),
        { maxKeys: 4 },
      );
      return fc.tuple(record, extra).map(([r, e]) => ({ ...e, ...r }));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// ---------------------------------------------------------------- the nasty parts

/** Any UTF-16 code unit: lone surrogates included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
/** Any code point of Unicode, astral ones as their pair. */
const codePoint = fc.integer({ min: 0, max: 0x10ffff }).map((c) => (c >= 0xd800 && c <= 0xdfff ? String.fromCharCode(c) : String.fromCodePoint(c)));
const controls = [...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)), ...Array.from({ length: 0x21 }, (_, i) => String.fromCharCode(0x7f + i))];
const SPECIAL_CHARS = [
  ...controls,
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ufeff',
  '\ufffe',
  '\uffff',
  '\u2028',
  '\u2029',
  '\u200b',
  '\u202e',
  '\u{1F600}',
  '\u{10FFFF}',
  'é',
  'e\u0301',
  '\\',
  '"',
  "'",
  '%',
  '&',
  '=',
  '?',
  '#',
  '/',
];
export const specialChar = fc.oneof(fc.constantFrom(...SPECIAL_CHARS), codeUnit, codePoint);

/** Text from all of Unicode, biased to what hurts: U+0000, lone surrogates, C0/C1 controls. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: codeUnit, maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: codePoint, maxLength: 24 }) },
  { weight: 3, arbitrary: fc.array(specialChar, { minLength: 1, maxLength: 12 }).map((a) => a.join('')) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.string({ unit: 'grapheme-ascii', maxLength: 10 }), specialChar, fc.string({ unit: 'grapheme-ascii', maxLength: 10 }))
      .map(([a, c, b]) => `${a}${c}${b}`),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\t',
      '   x   ',
      '0',
      '-0',
      '-1',
      '1e400',
      'NaN',
      'Infinity',
      '-Infinity',
      'null',
      'true',
      'undefined',
      '0x10',
      '1_000',
      '١٢٣',
      '9223372036854775808',
      '00000000-0000-0000-0000-000000000000',
      'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
      '__proto__',
      'constructor',
      "'; DROP TABLE events; --",
      '<script>alert(1)</script>',
      '{{7*7}}',
      '#{7*7}',
      '../../etc/passwd',
      'a@b',
      '@',
      'x'.repeat(1000),
    ),
  },
);

/** Number tokens at the edges, as JSON text. */
export const EDGE_NUMBERS = [
  '0',
  '-0',
  '0.0',
  '-0.0',
  '1',
  '-1',
  '0.5',
  '-0.5',
  '0.1',
  '0.00000001',
  '0.000000001',
  '1e-400',
  '1e400',
  '-1e400',
  '1E2',
  '1e21',
  '2147483647',
  '2147483648',
  '4294967296',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '1.0000000000000001',
  '123456789012345678.12345678',
  '1234567890123456789012345678901234567890',
  '99999999999999999999.99999999',
  '1.7976931348623157e308',
  '5e-324',
];

/** Number-like text, for JSON strings, queries and path segments. */
export const NUMBERISH_TEXT = [...EDGE_NUMBERS, 'NaN', 'Infinity', '-Infinity', '+1', ' 1', '1 ', '1,5', '0x1F', '0b1', '1e', '.5', '5.', '--1', '١'];

export const edgeNumber: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...EDGE_NUMBERS).map((t) => new RawJson(t)) },
  { weight: 1, arbitrary: fc.constantFrom(...NUMBERISH_TEXT) },
  { weight: 1, arbitrary: fc.double().map((d) => (Number.isFinite(d) ? d : new RawJson(String(d)))) },
  { weight: 1, arbitrary: fc.integer().map((n) => new RawJson(String(n))) },
);

/** `depth` levels of arrays or objects, written as text (JSON.stringify runs out of stack near 5,000). */
export function deepText(depth: number, kind: 'array' | 'object', leaf = '1'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;
}

export const deepValue: fc.Arbitrary<RawJson> = fc
  .tuple(fc.constantFrom(17, 64, 1_000, 5_000, 20_000, 40_000), fc.constantFrom<'array' | 'object'>('array', 'object'))
  .map(([depth, kind]) => new RawJson(deepText(depth, kind)));

/** Strings whose JSON text is 45-110 kB (the body limit is 100 kB), of characters of 1 to 6 bytes there. */
const HUGE_UNITS: Array<[string, number]> = [
  ['a', 1],
  ['é', 2],
  [' ', 1],
  ['\u0000', 6],
  ['\ud800', 6],
  ['😀', 4],
];
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 45_000, max: 110_000 }), fc.constantFrom(...HUGE_UNITS))
  .map(([n, [c, bytes]]) => c.repeat(Math.ceil(n / bytes)));

/** A value of the wrong kind, or a nasty one of the right kind. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  { weight: 3, arbitrary: edgeNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [null], { '': null }, [[[]]]) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(nastyString, nastyString, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.array(nastyString, { maxLength: 3 }) },
  { weight: 1, arbitrary: deepValue },
);

export const nastyKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'isAdmin', 'status', 'partnerId', 'userId', 'id'),
  nastyString,
);

type Path = Array<string | number>;

/** The paths of every value inside `value` (itself first). */
function pathsOf(value: unknown, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (value instanceof RawJson || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) pathsOf(v, [...at, i], out);
  } else for (const [k, v] of Object.entries(value)) pathsOf(v, [...at, k], out);
  return out;
}

function clone<T>(value: T): T {
  if (value instanceof RawJson || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(clone) as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: clone(v), enumerable: true, writable: true, configurable: true });
  return out as T;
}

function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  // defineProperty: a key such as __proto__ becomes an own property, as JSON.parse makes it.
  Object.defineProperty(node, path[path.length - 1] as string | number, { value, enumerable: true, writable: true, configurable: true });
  return root;
}

function deleteAt(root: unknown, path: Path): unknown {
  if (path.length === 0) return root;
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (Array.isArray(node)) node.splice(last as number, 1);
  else delete node[last];
  return root;
}

export type Mutation = 'replace' | 'drop' | 'extra' | 'many-extra' | 'whole';

/**
 * Mutants of values the schema accepts: one value replaced by a nasty one (or one of the wrong type),
 * a field dropped, extra fields (nasty keys too), or the whole value replaced.
 */
export function invalid(schema: Schema, hints: Hints = noHints): fc.Arbitrary<{ value: unknown; mutation: Mutation }> {
  return fc
    .tuple(
      valid(schema, hints),
      fc.constantFrom<Mutation>('replace', 'replace', 'replace', 'drop', 'extra', 'many-extra', 'whole'),
      fc.nat(),
      nastyValue,
      nastyKey,
      fc.integer({ min: 2, max: 3_000 }),
    )
    .map(([base, mutation, pick, nasty, key, many]) => {
      const value = clone(base);
      const paths = pathsOf(value);
      const containers = paths.filter((p) => {
        const v = p.reduce<unknown>((node, k) => (node as Record<string | number, unknown>)[k], value);
        return v !== null && typeof v === 'object' && !(v instanceof RawJson);
      });
      switch (mutation) {
        case 'replace':
          return { value: setAt(value, paths[pick % paths.length] as Path, nasty), mutation };
        case 'drop': {
          const inner = paths.filter((p) => p.length > 0);
          return { value: inner.length ? deleteAt(value, inner[pick % inner.length] as Path) : value, mutation };
        }
        case 'extra': {
          const target = containers[pick % Math.max(containers.length, 1)];
          if (!target) return { value: nasty, mutation: 'whole' as Mutation };
          const node = target.reduce<unknown>((n, k) => (n as Record<string | number, unknown>)[k], value);
          if (Array.isArray(node)) node.push(nasty);
          else setAt(value, [...target, key], nasty);
          return { value, mutation };
        }
        case 'many-extra': {
          if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof RawJson) return { value, mutation };
          for (let i = 0; i < many; i++) setAt(value, [`k${i}`], i % 2 ? i : `v${i}`);
          return { value, mutation };
        }
        default:
          return { value: nasty, mutation };
      }
    });
}

/** JSON text of a generated value: RawJson as written, strings escaped (lone surrogates as \uXXXX). */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  return `{${Object.entries(value)
    .map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`)
    .join(',')}}`;
}

/** A query or path text of a value: strings as they are, everything else as its JSON text. */
export function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof RawJson) return value.text;
  return jsonText(value);
}

/**
 * Percent-encoding of any JS string, lone surrogates included (as the bytes UTF-8 would give them,
 * which are not valid UTF-8: the server sees U+FFFD or refuses), where encodeURIComponent throws.
 */
export function percentEncode(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2));
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += `%${(0xe0 | (c >> 12)).toString(16).toUpperCase()}%${(0x80 | ((c >> 6) & 0x3f)).toString(16).toUpperCase()}%${(0x80 | (c & 0x3f)).toString(16).toUpperCase()}`;
    } else out += encodeURIComponent(text[i] as string);
  }
  return out;
}

/** Percent texts that are themselves broken or decode to something nasty. */
export const RAW_PERCENT = ['%', '%%', '%zz', '%E0%A4%A', '%C0%80', '%00', '%ED%A0%80', '%FF', '%C2%85', '%2F', '%2e%2e', '%25', '%u0000', '+', '%20'];
