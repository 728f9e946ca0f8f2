import type { Sql } from '../../../eventstore/sql';
import { isoOrNull, objectAt, parseJson, stringAt } from '../../json';
import { ProviderError } from '../../errors';
import { DEFAULT_TOLERANCE_SECONDS, headerValue, verifySignature } from '../../signature';
import { deliveryFor, type SandboxWebhookOptions, throughStore, type WebhookDelivery } from '../../delivery';
import type { SqlQueryable } from '../../../eventstore/sql';
import { currentUnixSeconds } from '../../signature';

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

/** ISO 8601 UTC with milliseconds, as Postgres renders it in the sandboxes' SELECTs. */
export const ISO_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * Sends a decision's recorded webhook again, byte for byte with the SAME event id (a provider
 * retrying a delivery). Both mocks keep `last_event_id`/`last_event` beside `payment_id`.
 */
async function redeliverRecorded(options: {
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
interface MockEnvelope {
  type: string | null;
  eventId: string;
  occurredAt: string;
  paymentId: string;
  transactionId: string;
  data: Record<string, unknown> | null;
}

function verifiedEnvelope(
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

/** What tells the mock payment provider and the mock payout provider apart. */
export interface MockKind<Row, Item> {
  label: 'Mock payment' | 'Mock payout';
  userAgent: string;
  table: string;
  /** The SELECT list that reads a row. */
  columns: string;
  toItem(row: Row): Item;
  notFound(paymentId: string): Error;
}

/**
 * The shape both mock providers share: a table of their own (not our event log) keyed by their
 * payment id and unique by our transaction uuid, created once per transaction uuid however often
 * asked, decided by a tester, and each decision reported by a signed webhook POSTed over real HTTP
 * (and re-sent on demand, byte for byte).
 */
export abstract class MockProviderTable<Row, Item> {
  readonly name = 'mock';
  protected readonly delivery: WebhookDelivery;
  protected readonly nowSeconds: () => number;

  constructor(
    protected readonly options: SandboxWebhookOptions,
    private readonly kind: MockKind<Row, Item>,
  ) {
    if (!options.webhookSecret) throw new Error(`${kind.label.toLowerCase()} webhookSecret is required`);
    this.nowSeconds = options.nowSeconds ?? currentUnixSeconds;
    this.delivery = deliveryFor({ provider: this.name, label: kind.label, userAgent: kind.userAgent }, { ...options, nowSeconds: this.nowSeconds });
  }

  /** Creates the table (its columns as DDL). Idempotent; serialised so several nodes can start at once. */
  protected async prepareTable(columnsDdl: string): Promise<void> {
    await this.options.sql.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('tally.${this.kind.table}'))`);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${this.kind.table} (${columnsDdl})`);
    });
  }

  /**
   * Inserts the item, or answers the one already made for its transaction uuid when `sameAs` (a SQL
   * condition over $2, $3 ...) holds of it; `refused` otherwise (the uuid reused for another one).
   */
  protected createOnce(
    transactionId: string,
    insert: { columns: string; values: string; params: unknown[] },
    sameAs: { condition: string; params: unknown[] },
    refused: () => Error,
  ): Promise<Item> {
    const { table, columns } = this.kind;
    return this.store(async () => {
      const inserted = await this.options.sql.query<Row>(
        `INSERT INTO ${table} (${insert.columns}) VALUES (${insert.values}) ON CONFLICT (transaction_id) DO NOTHING RETURNING ${columns}`,
        insert.params,
      );
      if (inserted[0] !== undefined) return this.kind.toItem(inserted[0]);
      const existing = await this.options.sql.query<Row & { same: boolean }>(
        `SELECT ${columns}, (${sameAs.condition}) AS same FROM ${table} WHERE transaction_id = $1`,
        [transactionId, ...sameAs.params],
      );
      const row = existing[0];
      if (row === undefined) throw new ProviderError(`${this.kind.label} for ${transactionId} vanished`, this.name);
      if (!row.same) throw refused();
      return this.kind.toItem(row);
    });
  }

  /** The item by its payment id, or null when unknown. */
  protected async find(paymentId: string): Promise<Item | null> {
    return this.findWhere('payment_id', paymentId);
  }

  /** The item made for our transaction uuid, or null. */
  async findByTransaction(transactionId: string): Promise<Item | null> {
    return isUuid(transactionId) ? this.findWhere('transaction_id', transactionId) : null;
  }

  private async findWhere(column: 'payment_id' | 'transaction_id', value: string): Promise<Item | null> {
    const rows = await this.store(() => this.options.sql.query<Row>(`SELECT ${this.kind.columns} FROM ${this.kind.table} WHERE ${column} = $1`, [value]));
    return rows[0] === undefined ? null : this.kind.toItem(rows[0]);
  }

  /** Records a decision (in one transaction, the row locked) and delivers its signed webhook; its event id. */
  protected async decideAndDeliver<Body extends { id: string }>(
    paymentId: string,
    decideIn: (tx: SqlQueryable, current: Item) => Promise<Body>,
  ): Promise<string> {
    const body = await this.store(() =>
      this.options.sql.transaction(async (tx) => {
        const rows = await tx.query<Row>(`SELECT ${this.kind.columns} FROM ${this.kind.table} WHERE payment_id = $1 FOR UPDATE`, [paymentId]);
        if (rows[0] === undefined) throw this.kind.notFound(paymentId);
        return decideIn(tx, this.kind.toItem(rows[0]));
      }),
    );
    await this.delivery.deliver(body.id, JSON.stringify(body));
    return body.id;
  }

  /**
   * Sends the last decision's webhook again, byte for byte with the SAME event id (a provider retrying
   * a delivery). Resolves with that id; throws ProviderError when the item is unknown or undecided.
   */
  async redeliver(paymentId: string): Promise<string> {
    const { label, table, notFound } = this.kind;
    return redeliverRecorded({ provider: this.name, label, sql: this.options.sql, table, paymentId, delivery: this.delivery, notFound });
  }

  /** A webhook of this mock, its signature checked, its envelope read. */
  protected envelope(rawBody: Buffer, headers: Record<string, string | string[] | undefined>): MockEnvelope {
    const { webhookSecret: secret, webhookToleranceSeconds: toleranceSeconds } = this.options;
    return verifiedEnvelope(
      { provider: this.name, label: this.kind.label.toLowerCase(), secret, toleranceSeconds, nowSeconds: this.nowSeconds() },
      rawBody,
      headers,
    );
  }

  protected store<T>(fn: () => Promise<T>): Promise<T> {
    return throughStore(this.name, this.kind.label, fn);
  }
}
