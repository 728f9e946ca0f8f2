import { randomBytes } from 'node:crypto';
import type { Sql } from '../../eventstore/sql';
import { isoOrNull, objectAt, parseJson, stringAt } from '../identity/json';
import { ProviderError } from '../identity/port';
import { DEFAULT_TOLERANCE_SECONDS, headerValue, verifySignature } from '../identity/signature';
import { throughStore, type WebhookDelivery } from '../delivery';

/**
 * What the mock payment and payout providers share: how they deliver a signed webhook over real
 * HTTP (timeout, bounded retries), how they name things, and how they check the amounts and codes
 * a real provider would refuse. The payout mock imports this module too.
 */

/** A plain positive-or-zero decimal as text: no sign, exponent, leading zeros or spaces. */
const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ASSET_CODE = /^[A-Z][A-Z0-9]{1,9}$/;

/** A decimal string greater than zero, written plainly (`100`, `0.5`, `12.30`). */
export function isPositiveDecimal(value: unknown): value is string {
  return typeof value === 'string' && PLAIN_DECIMAL.test(value) && /[1-9]/.test(value);
}

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

export function isAssetCode(value: unknown): value is string {
  return typeof value === 'string' && ASSET_CODE.test(value);
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

export function randomId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/** ISO 8601 UTC with milliseconds, as Postgres renders it in the sandboxes' SELECTs. */
export const ISO_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * Sends a decision's recorded webhook again, byte for byte with the SAME event id (a provider
 * retrying a delivery). Both mocks keep `last_event_id`/`last_event` beside `payment_id`.
 */
export async function redeliverRecorded(options: {
  provider: string;
  label: string;
  sql: Sql;
  table: string;
  paymentId: string;
  delivery: WebhookDelivery;
  notFound: (paymentId: string) => Error;
}): Promise<string> {
  const rows = await throughStore(options.provider, options.label, () =>
    options.sql.query<{ last_event_id: string | null; last_event: string | null }>(
      `SELECT last_event_id, last_event FROM ${options.table} WHERE payment_id = $1`,
      [options.paymentId],
    ),
  );
  const row = rows[0];
  if (row === undefined) throw options.notFound(options.paymentId);
  if (row.last_event_id === null || row.last_event === null)
    throw new ProviderError(`${options.label} ${options.paymentId} is not decided yet`, options.provider);
  await options.delivery.deliver(row.last_event_id, row.last_event);
  return row.last_event_id;
}

/** The part of a mock provider's webhook both mocks share: signature, envelope, ids. */
export interface MockEnvelope {
  type: string | null;
  eventId: string;
  occurredAt: string;
  paymentId: string;
  transactionId: string;
  data: Record<string, unknown> | null;
}

export function verifiedEnvelope(
  options: { provider: string; label: string; secret: string; toleranceSeconds?: number; nowSeconds: number },
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
): MockEnvelope {
  verifySignature(options.secret, rawBody, headerValue(headers, 'x-signature'), {
    toleranceSeconds: options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
    nowSeconds: options.nowSeconds,
  });
  const body = parseJson(rawBody.toString('utf8'));
  const data = objectAt(body, 'data');
  const eventId = stringAt(body, 'id');
  const occurredAt = isoOrNull(stringAt(body, 'createdAt'));
  const paymentId = stringAt(data, 'paymentId');
  const transactionId = stringAt(data, 'transactionId');
  if (!isNonEmptyString(eventId) || occurredAt === null || !isNonEmptyString(paymentId) || !isUuid(transactionId)) {
    throw new ProviderError(`Malformed ${options.label} webhook`, options.provider);
  }
  return { type: stringAt(body, 'type'), eventId, occurredAt, paymentId, transactionId, data };
}
