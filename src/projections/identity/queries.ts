import type { KycDocumentData } from '../../domain/identity/kyc';
import type { KycStatus } from '../../domain/identity/kyc-statuses';
import type { ProfileFields } from '../../domain/identity/profile';
import { normalizeEmail, type UserStatus } from '../../domain/identity/user';
import type { SqlQueryable } from '../../eventstore/sql';

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

export interface UserSummary {
  id: string;
  email: string;
  status: UserStatus;
  createdAt: string;
}

export interface UserRecord extends UserSummary {
  updatedAt: string;
  countryCode: string;
  phoneNumber: string | null;
  language: string;
  kycStatus: string | null;
}

export interface UserListQuery {
  page: number;
  limit: number;
  status?: string;
  email?: string;
  q?: string;
  createdFrom?: string;
  createdTo?: string;
}

const USER_COLUMNS = `user_id::text AS id, email, status, country_code, phone_number, language, kyc_status,
  to_char(created_at AT TIME ZONE 'UTC', ${ISO}) AS created_at, to_char(updated_at AT TIME ZONE 'UTC', ${ISO}) AS updated_at`;

interface UserRow {
  id: string;
  email: string;
  status: UserStatus;
  country_code: string;
  phone_number: string | null;
  language: string;
  kyc_status: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: UserRow): UserRecord => ({
  id: r.id,
  email: r.email,
  status: r.status,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  countryCode: r.country_code,
  phoneNumber: r.phone_number,
  language: r.language,
  kycStatus: r.kyc_status,
});

/** A user as the notifications outbox reads it: an erased one too, its email null (the events before its erasure are still notified). */
export type UserRecordOrErased = Omit<UserRecord, 'email'> & { email: string | null };

/** What is read of the users read model (rm_users). An erased user is not found by any read but `evenErased`. */
export class UserQueries {
  constructor(private readonly sql: SqlQueryable) {}

  /** The user, if it exists, belongs to the partner and is not erased. */
  async get(partnerId: string, userId: string): Promise<UserRecord | null> {
    const [row] = await this.sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM rm_users WHERE user_id = $1 AND partner_id = $2 AND erased_at IS NULL`, [
      userId,
      partnerId,
    ]);
    return row ? toRecord(row) : null;
  }

  /** The partner's user, erased or not (then with its personal fields null). */
  async evenErased(partnerId: string, userId: string): Promise<UserRecordOrErased | null> {
    const [row] = await this.sql.query<Omit<UserRow, 'email'> & { email: string | null }>(
      `SELECT ${USER_COLUMNS} FROM rm_users WHERE user_id = $1 AND partner_id = $2`,
      [userId, partnerId],
    );
    return row ? { ...toRecord({ ...row, email: '' }), email: row.email } : null;
  }

  /** The user, whichever partner's, with its partner (not erased). */
  async withPartner(userId: string): Promise<{ user: UserRecord; partnerId: string } | null> {
    const [row] = await this.sql.query<UserRow & { partner_id: string }>(
      `SELECT ${USER_COLUMNS}, partner_id::text FROM rm_users WHERE user_id = $1 AND erased_at IS NULL`,
      [userId],
    );
    return row ? { user: toRecord(row), partnerId: row.partner_id } : null;
  }

  /** A page of the partner's users, newest first, and how many match the filter. */
  async list(partnerId: string, query: UserListQuery): Promise<{ items: UserRecord[]; totalItems: number }> {
    const params: unknown[] = [partnerId];
    const where = ['partner_id = $1', 'erased_at IS NULL'];
    const add = (condition: (n: number) => string, value: unknown) => {
      params.push(value);
      where.push(condition(params.length));
    };
    if (query.status) add((n) => `status = $${n}`, query.status);
    if (query.email) add((n) => `email = $${n}`, normalizeEmail(query.email));
    if (query.q) add((n) => `strpos(email, $${n}) > 0`, query.q.trim().toLowerCase());
    if (query.createdFrom) add((n) => `created_at >= $${n}::timestamptz`, query.createdFrom);
    if (query.createdTo) add((n) => `created_at <= $${n}::timestamptz`, query.createdTo);
    const condition = where.join(' AND ');
    const [count] = await this.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM rm_users WHERE ${condition}`, params);
    const rows = await this.sql.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM rm_users WHERE ${condition} ORDER BY created_at DESC, user_id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, query.limit, (query.page - 1) * query.limit],
    );
    return { items: rows.map(toRecord), totalItems: Number(count?.n ?? 0) };
  }

  /** The partner's user of a (normalized) email: its id and email, or null. */
  async byEmail(partnerId: string, email: string): Promise<{ id: string; email: string } | null> {
    const [row] = await this.sql.query<{ id: string; email: string }>('SELECT user_id::text AS id, email FROM rm_users WHERE email = $1 AND partner_id = $2', [
      email,
      partnerId,
    ]);
    return row ?? null;
  }

  /** Whether the partner has a user of this (normalized) email. */
  async hasEmail(partnerId: string, email: string): Promise<boolean> {
    const [own] = await this.sql.query('SELECT 1 FROM rm_users WHERE email = $1 AND partner_id = $2', [email, partnerId]);
    return !!own;
  }

  async emailOf(userId: string): Promise<string | null> {
    const [row] = await this.sql.query<{ email: string }>('SELECT email FROM rm_users WHERE user_id = $1', [userId]);
    return row ? row.email : null;
  }

  async partnerOf(userId: string): Promise<string | null> {
    const [row] = await this.sql.query<{ partner_id: string }>('SELECT partner_id::text FROM rm_users WHERE user_id = $1', [userId]);
    return row ? row.partner_id : null;
  }

  /** The partner of each of the users found, by user id. */
  async partnersOf(userIds: string[]): Promise<Map<string, string>> {
    const rows = await this.sql.query<{ user_id: string; partner_id: string }>(
      'SELECT user_id::text, partner_id::text FROM rm_users WHERE user_id = ANY($1::uuid[])',
      [userIds],
    );
    return new Map(rows.map((r) => [r.user_id, r.partner_id]));
  }
}

export interface PartnerRecord {
  id: string;
  name: string;
  sandbox: boolean;
  createdAt: string;
}

/** An unrevoked key as stored: its partner and the hash of its secret. */
export interface StoredKey {
  partner_id: string;
  secret_hash: string;
}

/** What is read of the partners read model (rm_partners, rm_partner_keys). */
export class PartnerQueries {
  constructor(private readonly sql: SqlQueryable) {}

  async get(partnerId: string): Promise<PartnerRecord | null> {
    const [row] = await this.sql.query<{ partner_id: string; name: string; sandbox: boolean; created_at: string }>(
      `SELECT partner_id::text, name, sandbox, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at FROM rm_partners WHERE partner_id = $1`,
      [partnerId],
    );
    return row ? { id: row.partner_id, name: row.name, sandbox: row.sandbox, createdAt: row.created_at } : null;
  }

  /** Every partner, oldest first, with how many of its keys are active. */
  async list(): Promise<Array<PartnerRecord & { activeKeys: number }>> {
    const rows = await this.sql.query<{ partner_id: string; name: string; sandbox: boolean; created_at: string; active_keys: string }>(
      `SELECT p.partner_id::text, p.name, p.sandbox, to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
              (SELECT count(*) FROM rm_partner_keys k WHERE k.partner_id = p.partner_id AND k.revoked_at IS NULL)::text AS active_keys
         FROM rm_partners p ORDER BY p.created_at, p.partner_id`,
    );
    return rows.map((r) => ({ id: r.partner_id, name: r.name, sandbox: r.sandbox, createdAt: r.created_at, activeKeys: Number(r.active_keys) }));
  }

  async count(): Promise<number> {
    const [row] = await this.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_partners');
    return Number(row?.n ?? 0);
  }

  /** The key, if stored and not revoked. */
  async activeKey(apiKey: string): Promise<StoredKey | null> {
    const [row] = await this.sql.query<StoredKey>('SELECT partner_id::text, secret_hash FROM rm_partner_keys WHERE api_key = $1 AND revoked_at IS NULL', [
      apiKey,
    ]);
    return row ?? null;
  }
}

export interface ProfileView extends ProfileFields {
  userId: string;
  createdAt: string;
  updatedAt: string;
}

/** What is read of the profiles read model (rm_profiles). */
export class ProfileQueries {
  constructor(private readonly sql: SqlQueryable) {}

  async get(userId: string): Promise<ProfileView | null> {
    const [row] = await this.sql.query<{ fields: ProfileFields; created_at: string; updated_at: string }>(
      `SELECT fields, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
              to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
         FROM rm_profiles WHERE user_id = $1`,
      [userId],
    );
    return row ? { userId, ...row.fields, createdAt: row.created_at, updatedAt: row.updated_at } : null;
  }
}

/**
 * The holder of another read model's row, joined in that read model's own statement (one round
 * trip, not two): `columns` (email, first_name, last_name) to select, `joins` to follow its FROM,
 * `userId` the row's user id column. The aliases u and p are taken. An erased holder (email null)
 * has null for each; any other has first_name '' when their profile has none.
 */
export const holderJoin = (userId: string) => ({
  columns: `u.email, CASE WHEN u.email IS NULL THEN NULL ELSE coalesce(p.fields->>'firstName', '') END AS first_name, p.fields->>'lastName' AS last_name`,
  joins: `LEFT JOIN rm_users u ON u.user_id = ${userId} LEFT JOIN rm_profiles p ON p.user_id = ${userId}`,
});

const ts = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', ${ISO}) AS ${column}`;

export interface VerificationRow {
  verification_id: string;
  inquiry_id: string;
  provider: string;
  verification_url: string;
  verification_level: string;
  status: KycStatus;
  risk_level: string | null;
  risk_score: string | null;
  rejection_reasons: string[] | null;
  document: KycDocumentData | null;
  created_at: string;
  submitted_at: string | null;
  reviewed_at: string | null;
  approved_at: string | null;
  expires_at: string | null;
}

const VERIFICATION_COLUMNS = `verification_id::text, inquiry_id, provider, verification_url, verification_level, status, risk_level, risk_score::text,
  rejection_reasons, document, ${['created_at', 'submitted_at', 'reviewed_at', 'approved_at', 'expires_at'].map(ts).join(', ')}`;

/** What is read of the KYC read model (rm_kyc_verifications). */
export class KycQueries {
  constructor(private readonly sql: SqlQueryable) {}

  async userOfInquiry(inquiryId: string): Promise<string | null> {
    const [row] = await this.sql.query<{ user_id: string }>('SELECT user_id::text FROM rm_kyc_verifications WHERE inquiry_id = $1', [inquiryId]);
    return row ? row.user_id : null;
  }

  /** The partner of the inquiry's user (rm_users is identity's too), or null. */
  async partnerOfInquiry(inquiryId: string): Promise<string | null> {
    const [row] = await this.sql.query<{ partner_id: string }>(
      'SELECT u.partner_id::text FROM rm_kyc_verifications k JOIN rm_users u ON u.user_id = k.user_id WHERE k.inquiry_id = $1',
      [inquiryId],
    );
    return row ? row.partner_id : null;
  }

  /** The user's verifications, newest first (at most 100). */
  async history(userId: string): Promise<VerificationRow[]> {
    return this.sql.query<VerificationRow>(
      `SELECT ${VERIFICATION_COLUMNS} FROM rm_kyc_verifications WHERE user_id = $1 ORDER BY created_at DESC, verification_id DESC LIMIT 100`,
      [userId],
    );
  }

  async latest(userId: string): Promise<VerificationRow | null> {
    const [row] = await this.sql.query<VerificationRow>(
      `SELECT ${VERIFICATION_COLUMNS} FROM rm_kyc_verifications WHERE user_id = $1 ORDER BY created_at DESC, verification_id DESC LIMIT 1`,
      [userId],
    );
    return row ?? null;
  }
}

/** What is read of the sessions read model (rm_sessions, with its users' status from rm_users). */
export class SessionQueries {
  constructor(private readonly sql: SqlQueryable) {}

  /** The session's user's status, and whether the session is over; null when no such session. */
  async state(claims: { userId: string; partnerId: string; sessionId: string }): Promise<{ status: string; revoked: boolean } | null> {
    const [row] = await this.sql.query<{ status: string; revoked: boolean }>(
      // A session started before its user's last suspension or ban is over, whatever the status now.
      // An erased user's sessions are over, whatever their generation.
      `SELECT u.status, (s.revoked_at IS NOT NULL OR s.user_generation < u.session_generation OR u.erased_at IS NOT NULL) AS revoked
         FROM rm_sessions s JOIN rm_users u ON u.user_id = s.user_id
        WHERE s.session_id = $1 AND s.user_id = $2 AND s.partner_id = $3`,
      [claims.sessionId, claims.userId, claims.partnerId],
    );
    return row ?? null;
  }
}

/** Every query of identity's read models, one object each, built once on the service's Sql. */
export class IdentityQueries {
  readonly users: UserQueries;
  readonly partners: PartnerQueries;
  readonly profiles: ProfileQueries;
  readonly kyc: KycQueries;
  readonly sessions: SessionQueries;

  constructor(sql: SqlQueryable) {
    this.users = new UserQueries(sql);
    this.partners = new PartnerQueries(sql);
    this.profiles = new ProfileQueries(sql);
    this.kyc = new KycQueries(sql);
    this.sessions = new SessionQueries(sql);
  }
}
