import { createHash, randomUUID } from 'node:crypto';
import { DomainError } from '../../platform/decider';
import { normalizeEmail, type UserCommand, type UserStatus, userDecider, userStream } from '../../domain/identity/user';
import { type CommandContext, load } from '../../platform/commands/commands';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { Sql } from '../../eventstore/sql';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';

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

/** The reservation stream of an email: named by a hash, so the address itself is not a stream name. */
export const emailStream = (email: string) => `useremail-${createHash('sha256').update(normalizeEmail(email)).digest('hex')}`;

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
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

export const summary = (u: UserRecord): UserSummary => ({ id: u.id, email: u.email, status: u.status, createdAt: u.createdAt });

export interface UserServiceDeps {
  commands: CommandHandler;
  store: EventStore;
  sql: Sql;
  readYourWrites: WaitForReadModels;
}

export class UserService {
  constructor(private readonly deps: UserServiceDeps) {}

  /** Registers a user; the email reservation stream (appended with "no stream") keeps emails unique. */
  async register(
    partnerId: string,
    input: { email: string; countryCode: string; phoneNumber?: string; language?: string },
    ctx: CommandContext,
  ): Promise<UserRecord> {
    const userId = randomUUID();
    const email = normalizeEmail(input.email);
    const command: UserCommand = {
      type: 'RegisterUser',
      data: {
        userId,
        partnerId,
        email,
        countryCode: input.countryCode.toUpperCase(),
        phoneNumber: input.phoneNumber?.trim() || null,
        language: input.language ?? 'en',
      },
    };
    const result = await this.deps.commands.decide(ctx, userStream(userId), userDecider, command, () => [
      {
        stream: emailStream(email),
        expected: 'no_stream',
        events: [{ type: 'UserEmailReserved', data: { userId } }],
        refuseOnConflict: new DomainError('conflict', 'User with this email already exists'),
      },
    ]);
    await this.deps.readYourWrites(result.position, ['users']);
    const user = await this.get(partnerId, userId);
    if (user) return user;
    // The users read model is behind (stopped on an event, or slow): the answer comes from the log.
    const [registered] = await this.deps.store.readStream(userStream(userId), { maxCount: 1 });
    if (registered?.type !== 'UserRegistered') throw new Error(`user ${userId} was registered but its stream does not start with it`);
    const at = registered.recordedAt;
    const d = command.data;
    return {
      id: userId,
      email,
      status: 'pending',
      createdAt: at,
      updatedAt: at,
      countryCode: d.countryCode,
      phoneNumber: d.phoneNumber,
      language: d.language,
      kycStatus: null,
    };
  }

  /** The user, if it exists and belongs to the partner (otherwise null: callers answer 404). */
  async get(partnerId: string, userId: string): Promise<UserRecord | null> {
    const [row] = await this.deps.sql.query<UserRow>(`SELECT ${USER_COLUMNS} FROM rm_users WHERE user_id = $1 AND partner_id = $2`, [userId, partnerId]);
    return row ? toRecord(row) : null;
  }

  /** For writes that name a user in the body: 404 when unknown, 403 when another partner's. */
  async requireOwned(partnerId: string, userId: string): Promise<UserRecord> {
    const [row] = await this.deps.sql.query<UserRow & { partner_id: string }>(`SELECT ${USER_COLUMNS}, partner_id::text FROM rm_users WHERE user_id = $1`, [
      userId,
    ]);
    if (!row) throw new DomainError('not_found', 'User not found');
    if (row.partner_id !== partnerId) throw new DomainError('forbidden', 'User does not belong to this partner');
    return toRecord(row);
  }

  async list(partnerId: string, query: UserListQuery): Promise<{ items: UserRecord[]; totalItems: number }> {
    const params: unknown[] = [partnerId];
    const where = ['partner_id = $1'];
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
    const [count] = await this.deps.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM rm_users WHERE ${condition}`, params);
    const rows = await this.deps.sql.query<UserRow>(
      `SELECT ${USER_COLUMNS} FROM rm_users WHERE ${condition} ORDER BY created_at DESC, user_id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, query.limit, (query.page - 1) * query.limit],
    );
    return { items: rows.map(toRecord), totalItems: Number(count?.n ?? 0) };
  }

  /** Operator moves: suspend, ban, reinstate. */
  async operatorAction(userId: string, action: 'suspend' | 'ban' | 'reinstate', reason: string, ctx: CommandContext): Promise<UserRecord> {
    const { state } = await load(this.deps.store, userStream(userId), userDecider);
    if (!state.exists || !state.partnerId) throw new DomainError('not_found', 'User not found');
    const command: UserCommand =
      action === 'suspend' ? { type: 'Suspend', reason } : action === 'ban' ? { type: 'Ban', reason } : { type: 'Reinstate', reason };
    const result = await this.deps.commands.decide(ctx, userStream(userId), userDecider, command);
    await this.deps.readYourWrites(result.position, ['users']);
    const user = await this.get(state.partnerId, userId);
    if (!user) throw new Error('an existing user is readable');
    return user;
  }
}
