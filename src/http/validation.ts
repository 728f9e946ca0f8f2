import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import { HttpError } from './errors';

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

/** Validates (and, for queries, coerces and defaults) in place; throws 400 with a message naming the field. */
export function validate<T>(schema: TSchema, value: unknown, options: { coerce: boolean }): T {
  const fn = compiled(schema, options.coerce);
  if (!fn(value)) {
    // For a property that may take one of several forms, its own message beats a branch's.
    const first = fn.errors?.find((e) => e.keyword === 'anyOf') ?? fn.errors?.[0];
    throw new HttpError(400, first ? describe(first, schema) : 'Invalid request', {
      code: 'validation_error',
      details: (fn.errors ?? []).map((e) => ({ field: fieldName(e) || null, rule: e.keyword })),
    });
  }
  return value as T;
}
