import type { LoggerOptions } from 'pino';

/**
 * What the logs never carry: personal data (emails, phone numbers, names, dates of birth, document
 * numbers, addresses, salaries, IP addresses of applications) and secrets (tokens, login codes, API
 * and webhook secrets, passwords, card numbers, CVCs, PINs). Two nets, both cheap on the request line:
 *
 * - By name, at any depth (up to MAX_DEPTH): a field named below is replaced by `[redacted]` wherever
 *   it is in a logged object (a request body logged whole, an event's data). The walk copies only the
 *   objects it changes and costs the request line a loop over its five fields; pino's own `redact`
 *   needs one path per depth and per name (`*.email`, `*.*.email`, ...), and its wildcards cost every
 *   log call a walk per path.
 * - Errors (`err`): only their type, message, stack and a few descriptive fields (`code`,
 *   `constraint`, ...) are logged, never the rest (a Postgres error's `detail` quotes the row's
 *   values, PGlite's carries the query's parameters, an HTTP client's the response body); emails and
 *   long numbers (phones, card numbers) in the message and stack are masked.
 */
const REDACTED = '[redacted]';
const MAX_DEPTH = 6;
const MAX_CAUSES = 3;

const PERSONAL = [
  'email',
  'phone',
  'phoneNumber',
  'firstName',
  'middleName',
  'lastName',
  'fullName',
  'holderName',
  'cardholderName',
  'nameOnCard',
  'dateOfBirth',
  'birthDate',
  'documentNumber',
  'governmentIdNumber',
  'taxId',
  'nationalId',
  'address',
  'addressLine1',
  'addressLine2',
  'street',
  'postalCode',
  'salary',
  'annualSalary',
  'ipAddress',
];
const SECRETS = [
  'token',
  'accessToken',
  'refreshToken',
  'idToken',
  'identityShareToken',
  'code',
  'loginCode',
  'otp',
  'secret',
  'apiSecret',
  'webhookSecret',
  'password',
  'pin',
  'cvc',
  'cvv',
  'pan',
  'cardNumber',
  'authorization',
  'cookie',
  'x-api-secret',
];
/** Matched as written and in lower case (HTTP headers arrive lower-cased). */
const REDACTED_FIELDS = new Set([...PERSONAL, ...SECRETS].flatMap((name) => [name, name.toLowerCase()]));

/** The fields of an error that describe it without quoting data (Node's, Postgres's, ours). */
const ERROR_FIELDS = ['code', 'errno', 'syscall', 'status', 'statusCode', 'provider', 'kind', 'severity', 'routine', 'constraint', 'table', 'column', 'schema'];

const EMAIL = /[^\s@"'<>()[\],;:]+@[^\s@"'<>()[\],;:]+\.[A-Za-z]{2,}/g;
/** Seven digits or more, spaces allowed between them, not inside a word: a phone or card number (dates, times and ids are not). */
const LONG_NUMBER = /(?<![\w-])\+?\d(?: ?\d){6,}(?!\w)/g;

/** An error's message or stack with emails and long numbers masked. */
export const maskText = (text: string): string => text.replace(EMAIL, '[email]').replace(LONG_NUMBER, '[number]');

/** `value` with every field named in REDACTED_FIELDS replaced, copying only the objects it changes. */
export function redactFields(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || value instanceof Error || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const items = value.map((item) => {
      const after = redactFields(item, depth + 1);
      changed ||= after !== item;
      return after;
    });
    return changed ? items : value;
  }
  let copy: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const before = record[key];
    const after = REDACTED_FIELDS.has(key) ? REDACTED : redactFields(before, depth + 1);
    if (after !== before) {
      copy ??= { ...record };
      copy[key] = after;
    }
  }
  return copy ?? value;
}

/** How an error is logged: what it is and where it was thrown, not the data it was about. */
export function serializeError(error: unknown, causes = 0): unknown {
  if (!(error instanceof Error)) return typeof error === 'string' ? maskText(error) : redactFields(error);
  const out: Record<string, unknown> = { type: error.constructor?.name ?? error.name, message: maskText(error.message) };
  if (error.stack) out.stack = maskText(error.stack);
  const fields = error as unknown as Record<string, unknown>;
  for (const field of ERROR_FIELDS) {
    const value = fields[field];
    if (typeof value === 'string' || typeof value === 'number') out[field] = typeof value === 'string' ? maskText(value) : value;
  }
  if (error.cause !== undefined && causes < MAX_CAUSES) out.cause = serializeError(error.cause, causes + 1);
  if (error instanceof AggregateError && causes < MAX_CAUSES) out.errors = error.errors.slice(0, 5).map((e: unknown) => serializeError(e, causes + 1));
  return out;
}

/** The options of every logger of the service (the server's and the CLI's). */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    serializers: { err: serializeError, error: serializeError },
    formatters: { log: (object) => redactFields(object) as Record<string, unknown> },
  };
}
