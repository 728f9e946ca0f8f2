import { type TSchema, Type } from '@sinclair/typebox';

/** Shared schema pieces: the same field is spelled and checked the same way everywhere. */
export const Uuid = Type.String({ format: 'uuid' });
export const IsoDateTime = Type.String({ format: 'date-time' });

export const Success = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });

export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
};

export const PageMeta = Type.Object({
  totalItems: Type.Integer(),
  totalPages: Type.Integer(),
  currentPage: Type.Integer(),
  itemsPerPage: Type.Integer(),
});

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function pageMeta(totalItems: number, page: number, limit: number) {
  return { totalItems, totalPages: Math.ceil(totalItems / limit), currentPage: page, itemsPerPage: limit };
}

/** A string of a fixed set: one `enum` (clear errors), typed as the union. */
export const StringEnum = <T extends string>(values: readonly T[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
