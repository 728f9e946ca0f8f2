import type { Sql } from '../../eventstore/sql';
import { OPTIONAL_PROFILE_FIELDS, REQUIRED_PROFILE_FIELDS } from '../../domain/identity';

/**
 * The keys of a notification's data that hold personal data (docs/decisions.md, "Personal data"):
 * the user's email and phone, every profile field, the identity document, the holder's names and
 * email on card transactions. Ids, statuses and amounts stay.
 */
const PERSONAL_KEYS = new Set<string>([
  'email',
  'phoneNumber',
  'document',
  'userEmail',
  'userFirstName',
  'userLastName',
  ...REQUIRED_PROFILE_FIELDS,
  ...OPTIONAL_PROFILE_FIELDS,
]);

/** The tables whose `body` is a notification as sent: what the outbox made, and what the sandbox receiver got. */
const TABLES = ['notification_events', 'webhook_deliveries', 'sandbox_webhook_inbox'] as const;
/** Rows changed per statement. */
const BATCH = 500;

/** The value with every personal key's value null, at any depth. */
export function withoutPersonalData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutPersonalData);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, PERSONAL_KEYS.has(k) ? null : withoutPersonalData(v)]));
}

/**
 * Erasure: the notifications about the user (those whose body names their id) keep their shape and
 * lose their personal fields, those not yet delivered included (they go out so). Idempotent.
 */
export async function scrubNotificationsOf(sql: Sql, partnerId: string, userId: string): Promise<void> {
  for (const table of TABLES) {
    const key = table === 'sandbox_webhook_inbox' ? 'seq' : 'id';
    for (let after = ''; ; ) {
      const rows = await sql.query<{ key: string; body: string }>(
        `SELECT ${key}::text AS key, body FROM ${table} WHERE partner_id = $1 AND strpos(body, $2) > 0 AND ${key}::text > $3 ORDER BY ${key}::text LIMIT ${BATCH}`,
        [partnerId, userId, after],
      );
      const changed = rows
        .map((r) => ({ key: r.key, body: JSON.stringify(withoutPersonalData(JSON.parse(r.body))) }))
        .filter((r, i) => r.body !== rows[i]?.body);
      if (changed.length > 0)
        await sql.query(`UPDATE ${table} t SET body = u.body FROM unnest($1::text[], $2::text[]) AS u(key, body) WHERE t.${key}::text = u.key`, [
          changed.map((r) => r.key),
          changed.map((r) => r.body),
        ]);
      const last = rows[rows.length - 1];
      if (!last || rows.length < BATCH) break;
      after = last.key;
    }
  }
}
