import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import BigNumber from 'bignumber.js';
import { findUnstorable } from '../../eventstore/storable';
import { HttpError } from './errors';
import { LIMITS } from '../limits';

/**
 * JSON Schema validation (ajv) of bodies, queries and path parameters. The schemas are the same
 * objects the OpenAPI document is built from. A property may carry `x-error`: the exact message for
 * any failure of that property (the interface fixes some messages, e.g. `description must be a string`).
 */
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]{2,}$/;

function makeAjv(coerceTypes: boolean) {
  const ajv = new Ajv({ allErrors: false, verbose: true, coerceTypes, useDefaults: true, strict: true, strictTypes: false });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'x-error', schemaType: 'string' });
  // Emails are trimmed (and lower-cased) before use, so surrounding spaces are not an error.
  ajv.addFormat('trimmed-email', (value: string) => EMAIL_RE.test(value.trim()));
  ajv.addKeyword({ keyword: 'x-required-error', schemaType: 'string' });
  // A request header's other name (request-path.ts, declaredHeaders): read there, not a rule here.
  ajv.addKeyword({ keyword: 'x-alias', schemaType: 'string' });
  return ajv;
}

const bodyAjv = makeAjv(false);
const queryAjv = makeAjv(true);
const cache = new WeakMap<object, ValidateFunction>();

function compiled(schema: TSchema, coerce: boolean): ValidateFunction {
  const key = schema as object;
  let fn = cache.get(key);
  if (!fn) {
    fn = (coerce ? queryAjv : bodyAjv).compile(schema);
    cache.set(key, fn);
  }
  return fn;
}

function fieldName(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return path ? `${path}.${missing}` : missing;
  }
  return path;
}

function describe(error: ErrorObject, rootSchema: TSchema): string {
  const field = fieldName(error);
  const subject = field || 'body';
  const at = (error.parentSchema ?? {}) as Record<string, unknown>;
  if (error.keyword === 'required') {
    const required = (at as { 'x-required-error'?: Record<string, string> | string })['x-required-error'];
    const missing = (error.params as { missingProperty: string }).missingProperty;
    const propertySchema = (at.properties as Record<string, Record<string, unknown>> | undefined)?.[missing];
    if (typeof propertySchema?.['x-required-error'] === 'string') return propertySchema['x-required-error'];
    if (typeof required === 'string') return required;
    return `${subject} is required`;
  }
  if (typeof at['x-error'] === 'string') return at['x-error'];
  void rootSchema;
  switch (error.keyword) {
    case 'type': {
      const type = (error.params as { type: string }).type;
      if (type === 'object' && !field) return 'Request body must be a JSON object';
      return `${subject} must be ${type === 'integer' ? 'an integer' : type === 'object' || type === 'array' ? `an ${type}` : `a ${type}`}`;
    }
    case 'minLength':
      return (error.params as { limit: number }).limit === 1
        ? `${subject} must not be empty`
        : `${subject} must be at least ${(error.params as { limit: number }).limit} characters`;
    case 'maxLength':
      return `${subject} must be at most ${(error.params as { limit: number }).limit} characters`;
    case 'format':
      return `${subject} must be a valid ${(error.params as { format: string }).format}`;
    case 'enum':
      return `${subject} must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
    case 'minimum':
      return `${subject} must be at least ${(error.params as { limit: number }).limit}`;
    case 'maximum':
      return `${subject} must be at most ${(error.params as { limit: number }).limit}`;
    case 'pattern':
      return `${subject} has an invalid format`;
    case 'additionalProperties':
      return `${subject ? `${subject}.` : ''}${(error.params as { additionalProperty: string }).additionalProperty} is not allowed`;
    default:
      return `${subject} ${error.message ?? 'is invalid'}`;
  }
}

/** Input nested deeper than this is refused: no field of the interface nests half as deep. */
const MAX_INPUT_DEPTH = LIMITS.http.inputDepth;

/**
 * Validates (and, for queries, coerces and defaults) in place; throws 400 with a message naming the
 * field. First, for every route alike, the text policy: no string (key or value) the store could not
 * hold (see eventstore/storable.ts), nothing nested deeper than MAX_INPUT_DEPTH. Then the schema.
 * Then the properties the schema does not declare are dropped (never stored, never echoed), except
 * inside objects it declares open (`additionalProperties: true`, such as a payout's source.metadata).
 */
export function validate<T>(schema: TSchema, value: unknown, options: { coerce: boolean; jsonText?: string }): T {
  const unstorable = findUnstorable(value, '', MAX_INPUT_DEPTH);
  if (unstorable) {
    const field = unstorable.path || 'body';
    throw new HttpError(
      400,
      unstorable.reason === 'characters'
        ? `${field} contains characters that are not allowed`
        : `${field.split('.')[0]} is nested too deeply (at most ${MAX_INPUT_DEPTH} levels)`,
      { code: 'validation_error', details: [{ field, rule: unstorable.reason === 'characters' ? 'text' : 'depth' }] },
    );
  }
  // A body's numbers, on the text it was parsed from (depth already bounded above).
  if (options.jsonText !== undefined) checkJsonNumbers(options.jsonText);
  const fn = compiled(schema, options.coerce);
  if (!fn(value)) {
    // For a property that may take one of several forms, its own message beats a branch's.
    const first = fn.errors?.find((e) => e.keyword === 'anyOf') ?? fn.errors?.[0];
    throw new HttpError(400, first ? describe(first, schema) : 'Invalid request', {
      code: 'validation_error',
      details: (fn.errors ?? []).map((e) => ({ field: fieldName(e) || null, rule: e.keyword })),
    });
  }
  if (options.coerce) {
    // ajv coerces `Infinity` and `1e400` to numbers and then skips its range checks for them (a
    // number keyword applies to finite numbers only): a query or path number must be finite.
    const field = nonFinite(value, '');
    if (field !== null)
      throw new HttpError(400, `${field || 'query'} must be a finite number`, { code: 'validation_error', details: [{ field: field || null, rule: 'type' }] });
  }
  dropUndeclared(schema as SchemaNode, value);
  return value as T;
}

/** The path of the first number that is not finite (NaN, Infinity) in coerced input, else null. */
function nonFinite(value: unknown, path: string): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Object.entries(value)) {
    const found = nonFinite(item, path ? `${path}.${key}` : key);
    if (found !== null) return found;
  }
  return null;
}

interface SchemaNode {
  type?: unknown;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: unknown;
  items?: SchemaNode;
}

function dropUndeclared(schema: SchemaNode, value: unknown): void {
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) dropUndeclared(schema.items, item);
    return;
  }
  if (value === null || typeof value !== 'object' || !schema.properties) return;
  const open = schema.additionalProperties !== undefined && schema.additionalProperties !== false;
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    const declared = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    if (declared) dropUndeclared(declared, object[key]);
    else if (!open) delete object[key];
  }
}

/**
 * JSON numbers are judged on their own text: one whose text says more than the double it parses to
 * (`1.0000000000000001`, `1e400`) is refused, naming its field, instead of silently becoming
 * another amount. `text` is exactly the JSON text the body was parsed from.
 */
function checkJsonNumbers(text: string): void {
  const token = firstInexactNumber(text);
  if (!token) return;
  // Only on the way to a 400: find which field the token is by parsing again with a marker in its place.
  const marker = `\\u0000inexact-${token.start}`;
  let field = 'body';
  try {
    const marked = JSON.parse(`${text.slice(0, token.start)}"${marker}"${text.slice(token.end)}`) as unknown;
    field = pathOf(marked, JSON.parse(`"${marker}"`) as string, '', 0) ?? 'body';
  } catch {
    // Not where a value stands after all (the scanner is not a parser): the body is named instead.
  }
  throw new HttpError(400, `${field} has more precision than a JSON number can carry; send it as a decimal string`, {
    code: 'validation_error',
    details: [{ field, rule: 'precision' }],
  });
}

function pathOf(value: unknown, marker: string, path: string, depth: number): string | null {
  if (value === marker) return path || null;
  if (value === null || typeof value !== 'object' || depth > MAX_INPUT_DEPTH) return null;
  for (const [key, member] of Object.entries(value)) {
    const found = pathOf(member, marker, path ? `${path}.${key}` : key, depth + 1);
    if (found) return found;
  }
  return null;
}

/** The first number token outside strings whose value its double does not carry exactly. */
function firstInexactNumber(text: string): { start: number; end: number } | null {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else {
          i++;
          if (d === 0x22) break;
        }
      }
      continue;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i++;
      while (i < n && isNumberChar(text.charCodeAt(i))) i++;
      if (!exactDouble(text.slice(start, i))) return { start, end: i };
      continue;
    }
    i++;
  }
  return null;
}

/** Digits, `.`, `e`, `E`, `+`, `-`: what a JSON number token is made of. */
const isNumberChar = (c: number) => (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

/**
 * Up to 15 digits without an exponent always survive the trip through a double, and so does a token
 * the double prints back as itself; only the rest need the exact comparison.
 */
function exactDouble(token: string): boolean {
  if (token.length <= 15 && !/[eE]/.test(token)) return true;
  const parsed = Number(token);
  if (!Number.isFinite(parsed)) return false;
  if (String(parsed) === token) return true;
  return new BigNumber(token).isEqualTo(new BigNumber(String(parsed)));
}
