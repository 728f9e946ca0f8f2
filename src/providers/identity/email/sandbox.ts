import { randomUUID } from 'node:crypto';
import type { Sql } from '../../../eventstore/sql';
import type { EmailMessage, EmailSender } from './port';

/**
 * The sandbox email adapter: an outbox table instead of a mail server, read back through
 * GET /sandbox/v1/emails so tests and partners can pick up login codes. It is the sandbox's own
 * table, not a read model: the messages are not events and are never rebuilt.
 */
export interface SandboxEmail {
  id: string;
  to: string;
  subject: string;
  text: string;
  /** ISO 8601 */
  createdAt: string;
  /** `tags.code` when the message carried one (login codes), else null. */
  code: string | null;
}

const TABLE = 'sandbox_emails';
/** Bounds one read whatever the caller asks for. */
export const SANDBOX_OUTBOX_MAX_LIST = 200;

interface EmailRow {
  id: string;
  to_address: string;
  subject: string;
  text: string;
  tags: unknown;
  created_at: string;
}

function codeOf(tags: unknown): string | null {
  if (typeof tags !== 'object' || tags === null || Array.isArray(tags)) return null;
  const code: unknown = Reflect.get(tags, 'code');
  return typeof code === 'string' ? code : null;
}

/** Addresses are matched case-insensitively, as the service stores emails lower-cased. */
function normalise(address: string): string {
  return address.trim().toLowerCase();
}

export interface SandboxOutboxOptions {
  sql: Sql;
}

export class SandboxOutbox implements EmailSender {
  readonly name = 'sandbox';
  private readonly sql: Sql;

  constructor(options: SandboxOutboxOptions) {
    this.sql = options.sql;
  }

  /** Creates the outbox table. Idempotent; serialised so several nodes can start at once. */
  async prepare(): Promise<void> {
    await this.sql.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('tally.${TABLE}'))`);
      // `seq` orders messages stored within the same microsecond (codes sent back to back).
      await tx.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (
        id uuid PRIMARY KEY,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        to_address text NOT NULL,
        subject text NOT NULL,
        text text NOT NULL,
        tags jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`);
      await tx.query(`CREATE INDEX IF NOT EXISTS ${TABLE}_to_idx ON ${TABLE} (to_address, created_at DESC, seq DESC)`);
    });
  }

  async send(message: EmailMessage): Promise<void> {
    const to = normalise(message.to);
    if (to === '') throw new Error('email recipient is required');
    await this.sql.query(`INSERT INTO ${TABLE} (id, to_address, subject, text, tags) VALUES ($1, $2, $3, $4, $5::jsonb)`, [
      randomUUID(),
      to,
      message.subject,
      message.text,
      JSON.stringify(message.tags ?? {}),
    ]);
  }

  /** Erasure: every message sent to the address is dropped (they name the user and carry their login codes). */
  async forget(to: string): Promise<void> {
    await this.sql.query(`DELETE FROM ${TABLE} WHERE to_address = $1`, [normalise(to)]);
  }

  /** Messages sent to `to`, newest first, at most `limit` (1..200). */
  async list(to: string, limit = 50): Promise<SandboxEmail[]> {
    const bounded = Math.min(Math.max(Math.trunc(Number.isFinite(limit) ? limit : 50), 1), SANDBOX_OUTBOX_MAX_LIST);
    const rows = await this.sql.query<EmailRow>(
      `SELECT id::text AS id, to_address, subject, text, tags,
              to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
         FROM ${TABLE} WHERE to_address = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`,
      [normalise(to), bounded],
    );
    return rows.map((row) => ({ id: row.id, to: row.to_address, subject: row.subject, text: row.text, createdAt: row.created_at, code: codeOf(row.tags) }));
  }
}
