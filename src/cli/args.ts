import { CliError } from './context';

// A time without a zone would be read in the machine's local zone: too easy to get wrong in an audit.
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i;

/** An ISO 8601 instant: a date (UTC midnight) or a date-time with `Z` or an offset. */
export function parseInstant(value: string, option: string): Date {
  const date = new Date(value);
  if (!ISO_INSTANT.test(value.trim()) || Number.isNaN(date.getTime())) {
    throw new CliError(`${option} must be an ISO 8601 instant with a time zone, e.g. 2024-05-01T10:00:00Z (got ${JSON.stringify(value)})`);
  }
  return date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Partner ids are UUIDs; anything else cannot name one (and would be a SQL type error further down). */
export function requirePartnerId(value: string): string {
  if (!UUID.test(value)) throw new CliError(`Partner not found: ${value} is not a partner id (a UUID)`);
  return value.toLowerCase();
}
