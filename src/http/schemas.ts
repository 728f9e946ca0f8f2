import { type TSchema, Type } from '@sinclair/typebox';
import { USER_STATUSES } from '../domain/identity';
import { isValid as isValidCountry } from 'i18n-iso-countries';
import { HttpError } from '../platform/http/errors';

/** Shared schema pieces: the same field is spelled and checked the same way everywhere. */
export const Uuid = Type.String({ format: 'uuid' });
export const IsoDateTime = Type.String({ format: 'date-time' });

export const Success = <T extends TSchema>(data: T) =>
  Type.Object({
    success: Type.Literal(true, { description: 'Always true on a success answer (errors carry `success: false`)' }),
    // A named shape is described where it is named; an unnamed one gets a word here (a copy, with its TypeBox kind).
    data: data.description || data.$id ? data : ({ ...data, description: 'The answer' } as T),
  });

/** The largest id a JSON number carries exactly (ids are bigint columns; none comes near it). */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/** Page numbers stop well before an OFFSET leaves bigint or a slice leaves safe integers. */
export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'The page to answer, from 1; each page holds `limit` items' }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1-100' }),
};

export const PageMeta = Type.Object(
  {
    totalItems: Type.Integer({ description: 'Items matching the filters, on every page' }),
    totalPages: Type.Integer({ description: 'Pages of `itemsPerPage` items' }),
    currentPage: Type.Integer({ description: 'This page, from 1' }),
    itemsPerPage: Type.Integer({ description: 'The `limit` asked (or its default)' }),
  },
  { $id: 'PageMeta' },
);

/** The `cursor` query parameter of a cursor-paginated list. */
export const CursorParam = () =>
  Type.Optional(Type.String({ maxLength: 100, description: "The previous page's `nextCursor` (opaque); omitted: the first page" }));

/** A page of a cursor-paginated list: `items`, and `nextCursor` to pass as `cursor` (null on the last page). */
export const CursorPage = <T extends TSchema>(item: T, itemsDescription: string, $id: string) =>
  Type.Object(
    {
      items: Type.Array(item, { description: itemsDescription }),
      nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last' }),
    },
    { $id },
  );

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function pageMeta(totalItems: number, page: number, limit: number) {
  return { totalItems, totalPages: Math.ceil(totalItems / limit), currentPage: page, itemsPerPage: limit };
}

/** A string of a fixed set: one `enum` (clear errors), typed as the union. */
/** Text that must say something: not empty, not only whitespace, at most `maxLength` characters (400 naming the field). */
export const FilledText = (name: string, maxLength: number) =>
  Type.String({ minLength: 1, maxLength, pattern: '\\S', 'x-error': `${name} must be a non-empty string of at most ${maxLength} characters` });

export const StringEnum = <T extends string>(values: readonly T[], options: Record<string, unknown> = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

/** The instants a request may name: years 1970-9999 in UTC, what every store and read model can hold. */
const MIN_INSTANT_MS = Date.UTC(1970, 0, 1);
/** The last of them, 9999-12-31T23:59:59.999Z. */
export const LAST_INSTANT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

const invalidField = (name: string, message: string, rule: string) =>
  new HttpError(400, message, { code: 'validation_error', details: [{ field: name, rule }] });

/**
 * An ISO 8601 date or date-time as an instant (without an offset, UTC), checked as the calendar
 * has it (2024-02-30 and hour 25 do not exist) and, after its offset, within years 1970-9999: 400
 * naming the field otherwise, never the database's error. `dateOnly` when no time was given.
 */
export function parseInstant(value: string, name: string): { ms: number; dateOnly: boolean } {
  const m = ISO_INSTANT.exec(value);
  const bad = () => invalidField(name, `${name} must be an ISO 8601 date`, 'format');
  if (!m) throw bad();
  const [y, mo, d, h, mi, sec, frac, zone] = m.slice(1) as Array<string | undefined>;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h ?? 0);
  const minute = Number(mi ?? 0);
  const second = Number(sec ?? 0);
  const millis = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second, millis));
  date.setUTCFullYear(year);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) throw bad();
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.replace(':', '');
    const oh = Number(digits.slice(1, 3));
    const om = Number(digits.slice(3, 5));
    if (oh > 23 || om > 59) throw bad();
    offsetMinutes = (digits[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = date.getTime() - offsetMinutes * 60_000;
  if (ms < MIN_INSTANT_MS || ms > LAST_INSTANT_MS) throw invalidField(name, `${name} must be a date between 1970-01-01 and 9999-12-31 (UTC)`, 'range');
  return { ms, dateOnly: h === undefined };
}

/** The instant a date-time names, as an ISO string in UTC (see parseInstant). */
export const instantOf = (value: string, name: string): string => new Date(parseInstant(value, name).ms).toISOString();

/** What a date filter's text may look like before parseInstant checks the calendar and the range. */
const DATE_FILTER_PATTERN = '^\\d{4}-\\d{2}-\\d{2}([Tt ]\\d{2}(:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?)?([Zz]|[+-]\\d{2}:?\\d{2})?)?$';

/**
 * A list's date filter (`createdFrom`, `createdTo`...): a full ISO 8601 date-time, or a date alone,
 * which means the start of that day in UTC, for an upper bound too (`createdTo=2026-11-01` stops at
 * 2026-11-01T00:00:00Z, leaving that day out). Read it with instantOf, which also refuses a date
 * the calendar does not have or one outside 1970-9999 (400 naming the field).
 */
export const DateFilter = (name: string, bound: 'lower' | 'upper') =>
  Type.String({
    pattern: DATE_FILTER_PATTERN,
    'x-error': `${name} must be an ISO 8601 date`,
    description:
      bound === 'lower'
        ? 'Inclusive lower bound: an ISO 8601 date-time (UTC when it has no offset), or a date alone, meaning 00:00 UTC of that day'
        : 'Inclusive upper bound: an ISO 8601 date-time (UTC when it has no offset), or a date alone, meaning 00:00 UTC of that day (so that day itself is left out; send the next day to include it)',
  });

/** The message of a country field that is not an assigned ISO 3166-1 alpha-2 code. */
export const countryMessage = (name: string) => `${name} must be an ISO 3166-1 alpha-2 country code`;

/**
 * Whether `value` is an ISO 3166-1 alpha-2 code in use, in any case (i18n-iso-countries' list). Two
 * letters only: the package's isValid also takes alpha-3 and numeric codes, which a field of ours never does.
 */
export const isCountryCode = (value: string): boolean => /^[A-Za-z]{2}$/.test(value) && isValidCountry(value.toUpperCase());

/**
 * A country field: two letters here, then checkCountries (after validation) refuses a code ISO 3166-1
 * has not assigned (`ZZ`) with 400 `<name> must be an ISO 3166-1 alpha-2 country code`.
 */
export const CountryField = (name: string) => Type.String({ pattern: '^[A-Za-z]{2}$', 'x-error': countryMessage(name), description: COUNTRY_DESCRIPTION });

export const COUNTRY_DESCRIPTION = 'An assigned ISO 3166-1 alpha-2 country code (e.g. `CO`), in any case; stored upper-cased';

/** 400 `validation_error` naming the first of `names` in `input` that is a string but no assigned country code. */
export function checkCountries(input: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = input[name];
    if (typeof value === 'string' && !isCountryCode(value)) throw invalidField(name, countryMessage(name), 'country');
  }
}

/* Response schemas shared by several routes (documentation only: answers are not validated against them). */

/** Every failure: `{success: false, error}`, with `code` and `details` on validation errors. */
export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false, { description: 'Always false on an error answer' }),
    error: Type.String({ description: 'The message, exactly as documented for the operation: for people, not for switching on' }),
    code: Type.String({
      description:
        'The stable snake_case code of the rule that refused (e.g. `insufficient_balance`, `token_expired`, `validation_error`): what a client switches on',
    }),
    requestId: Type.String({ description: 'The `X-Request-Id` of the answer: quote it when asking about a request' }),
    param: Type.Optional(Type.String({ description: 'The refused field, when the error is about one' })),
    details: Type.Optional(Type.Unknown({ description: 'For validation errors: the fields and rules that failed' })),
  },
  { $id: 'Error', description: 'A failure' },
);

/** `{success, message}` answers (login code sent, logged out). */
export const MessageBody = Type.Object(
  {
    success: Type.Boolean({ description: 'Always true' }),
    message: Type.String({ description: 'What was done, for people: a fixed text per operation (e.g. `Logged out`)' }),
  },
  { $id: 'Message' },
);

/** An HTML page (the hosted sandbox pages, /docs): the builder documents it as text/html. */
export const HtmlPage = Type.String({ contentMediaType: 'text/html', description: 'An HTML page' });
export const JavaScriptText = Type.String({ contentMediaType: 'text/javascript', description: 'A script' });

/** Prometheus' text exposition format: documented as text/plain. */
export const PrometheusText = Type.String({ contentMediaType: 'text/plain', description: 'Prometheus text exposition format 0.0.4' });

export const UserStatus = StringEnum(USER_STATUSES, {
  description:
    'The user’s status: `pending` when registered, `kyc_required` once identity verification started, `active` once it was approved (only active users log in and operate), `suspended` or `banned` by the operator',
});

/** The user as registration answers it (docs/interface.md, "Resources"). */
export const UserSummary = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The user’s id, made by the service at registration' }),
    email: Type.String({ description: 'The user’s email, trimmed and lower-cased; unique across the service' }),
    status: UserStatus,
    createdAt: Type.String({ format: 'date-time', description: 'When the user was registered (ISO 8601, UTC)' }),
  },
  { $id: 'UserSummary' },
);

/** The full user record of the single-user read, the list and the operator actions. */
export const User = Type.Composite(
  [
    UserSummary,
    Type.Object({
      updatedAt: Type.String({
        format: 'date-time',
        description: 'When the user last changed: registration, a status change or a KYC status change (ISO 8601, UTC)',
      }),
      countryCode: Type.String({ description: 'The ISO 3166-1 alpha-2 country code given at registration, upper-cased' }),
      phoneNumber: Type.Union([Type.String(), Type.Null()], {
        description: 'The phone number given at registration, in E.164 format (e.g. `+573001234567`); null when none was given',
      }),
      language: Type.String({ description: 'The language code given at registration (e.g. `en`, `es-CO`); `en` when none was given' }),
      kycStatus: Type.Union([Type.String(), Type.Null()], {
        description:
          'The status of the user’s latest identity verification (`created`, `pending`, `in_progress`, `completed`, `needs_review`, `approved`, `declined`, `rejected`, `expired`, `failed`); null before any',
      }),
    }),
  ],
  { $id: 'User' },
);
