/** Small readers for untrusted JSON (provider answers, webhook bodies): no casts, no `any`. */
export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function objectAt(value: unknown, key: string): JsonObject | null {
  if (!isObject(value)) return null;
  const inner = value[key];
  return isObject(inner) ? inner : null;
}

export function stringAt(value: unknown, key: string): string | null {
  if (!isObject(value)) return null;
  const inner = value[key];
  return typeof inner === 'string' ? inner : null;
}

export function numberAt(value: unknown, key: string): number | null {
  if (!isObject(value)) return null;
  const inner = value[key];
  return typeof inner === 'number' && Number.isFinite(inner) ? inner : null;
}

export function arrayAt(value: unknown, key: string): unknown[] {
  if (!isObject(value)) return [];
  const inner = value[key];
  return Array.isArray(inner) ? inner : [];
}

export function stringArray(value: unknown): string[] | null {
  if (!Array.isArray(value)) return null;
  return value.every((item) => typeof item === 'string') ? value : null;
}

/** Parses a JSON text; null when it is not JSON (the caller decides what that means). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (error instanceof SyntaxError) return null;
    throw error;
  }
}

/** A timestamp normalised to ISO 8601 UTC, or null when absent or not a date. */
export function isoOrNull(value: string | null): string | null {
  if (value === null) return null;
  const time = Date.parse(value);
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}
