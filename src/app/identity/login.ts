import { createHash, randomUUID } from 'node:crypto';
import { accountDecider, accountStream, userAccountDecider, userAccountStream } from '../../domain/ledger';
import { TooManyTries } from '../../platform/failures';
import { IDENTITY_REFUSALS } from '../../domain/identity/refusals';
import { loginDecider, loginStream, MAX_SENDS_PER_HOUR } from '../../domain/identity/login';
import { sessionDecider, sessionStream } from '../../domain/identity/session';
import { normalizeEmail, userDecider, userStream } from '../../domain/identity/user';
import { type Append, at as atRevision, type Reads } from '../../platform/commands/command-handler';
import type { CommandContext } from '../../platform/commands/commands';
import { newLoginCode, newRefreshToken, parseRefreshToken } from './tokens';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { Sql } from '../../eventstore/sql';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { Logger } from 'pino';
import type { BuiltProviders } from '../../providers/index';
import type { UserQueries } from '../../projections/identity';
import type { SessionGate } from './session-gate';
import type { TokenService } from './tokens';
import type { BearerRefusal } from '../../platform/http/request-path';
import { requireActiveForLogin } from '../../domain/identity/user';

export const SEND_MESSAGE = 'If the email is registered, a code has been sent';

/** Login codes sent to one email (per partner) in the last hour are at the limit: again in an hour. */
export class TooManySends extends TooManyTries {
  constructor() {
    super('Too many login codes sent', 3_600);
  }
}

export interface LoginResult {
  success: true;
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  user: { id: string; email: string; status: 'active' };
}

/** The send counter: one row per code sent, kept for an hour (created at start by the composition root). */
export const LOGIN_SCHEMA = `CREATE TABLE IF NOT EXISTS login_send_log (email_hash text NOT NULL, sent_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS login_send_log_email ON login_send_log (email_hash, sent_at);
`;

/** The send counter's key: per partner and email, so one partner's sends never use up another's. */
const sendKey = (partnerId: string, email: string) =>
  createHash('sha256')
    .update(`${partnerId}\0${normalizeEmail(email)}`)
    .digest('hex');

export interface LoginServiceDeps {
  commands: CommandHandler;
  sql: Sql;
  readYourWrites: WaitForReadModels;
  log: Logger;
  providers: Pick<BuiltProviders, 'email'>;
  tokens: TokenService;
  sessionGate: Pick<SessionGate, 'isActive'>;
  userQueries: Pick<UserQueries, 'byEmail' | 'emailOf'>;
}

/** Emailed-code login, sessions with rotating refresh tokens, and the account opened at first login. */
export class LoginService {
  constructor(private readonly deps: LoginServiceDeps) {}

  private async partnerUser(partnerId: string, email: string): Promise<{ id: string; email: string } | null> {
    return this.deps.userQueries.byEmail(partnerId, normalizeEmail(email));
  }

  /**
   * Always the same answer (no account enumeration). Sends are counted per partner and email,
   * registered or not, so the 429 gives nothing away either.
   */
  async send(partnerId: string, email: string, ctx: CommandContext): Promise<void> {
    const key = sendKey(partnerId, email);
    const allowed = await this.deps.sql.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [key]);
      await tx.query(`DELETE FROM login_send_log WHERE email_hash = $1 AND sent_at < now() - interval '1 hour'`, [key]);
      const [row] = await tx.query<{ n: string }>('SELECT count(*)::text AS n FROM login_send_log WHERE email_hash = $1', [key]);
      if (Number(row?.n ?? 0) >= MAX_SENDS_PER_HOUR) return false;
      await tx.query('INSERT INTO login_send_log (email_hash, sent_at) VALUES ($1, now())', [key]);
      return true;
    });
    if (!allowed) throw new TooManySends();
    const user = await this.partnerUser(partnerId, email);
    if (!user) return;
    const code = newLoginCode();
    const codeHash = this.deps.tokens.codeHash(user.id, code);
    await this.deps.commands.run(
      ctx,
      async (reads) => {
        const login = await reads.stream(loginStream(user.id), loginDecider);
        const events = loginDecider.decide({ type: 'IssueCode', userId: user.id, codeId: randomUUID(), codeHash, at: new Date().toISOString() }, login.state);
        // Any revision: a new send replaces the code whatever happened in between.
        return { appends: [{ stream: loginStream(user.id), events, expected: 'any' }], result: null };
      },
      { cache: false },
    );
    try {
      await this.deps.providers.email.send({
        to: user.email,
        subject: 'Your login code',
        text: `Your login code is ${code}. It expires in 10 minutes. If you did not ask for it, ignore this email.`,
        tags: { code, kind: 'login_code' },
      });
    } catch (error) {
      // Same answer regardless; the user can ask again. The code itself is never logged.
      this.deps.log.error({ err: error, provider: this.deps.providers.email.name }, 'login code email could not be sent');
    }
  }

  async verify(partnerId: string, email: string, code: string, ctx: CommandContext): Promise<LoginResult> {
    const user = await this.partnerUser(partnerId, email);
    if (!user) throw IDENTITY_REFUSALS.invalidLoginCode();
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const at = new Date().toISOString();
        const sessionId = randomUUID();
        const login = await reads.stream(loginStream(user.id), loginDecider);
        const presentedHash = this.deps.tokens.codeHash(user.id, code);
        const events = loginDecider.decide({ type: 'VerifyCode', userId: user.id, presentedHash, sessionId, at }, login.state);
        const loginAppend: Append = { stream: loginStream(user.id), events, expected: atRevision(login) };
        // The failed try is stored even though the answer is an error: it counts.
        if (events.some((e) => e.type === 'LoginCodeAttemptFailed')) return { appends: [loginAppend], result: null };
        const account = await this.userState(reads, user.id);
        // An erased user is no one (the users read model may not show it yet on this node).
        if (account.erased) throw IDENTITY_REFUSALS.invalidLoginCode();
        requireActiveForLogin(account.status);
        const refresh = newRefreshToken(sessionId);
        const sessionEvents = sessionDecider.decide(
          { type: 'StartSession', sessionId, userId: user.id, partnerId, refreshHash: refresh.hash, userGeneration: account.sessionGeneration, at },
          sessionDecider.initialState(),
        );
        const opening = await this.accountOpening(reads, user.id, partnerId, at);
        return {
          appends: [loginAppend, { stream: sessionStream(sessionId), events: sessionEvents, expected: 'no_stream' }, ...opening],
          result: { sessionId, refresh },
        };
      },
      { cache: false },
    );
    if (!done.result) throw IDENTITY_REFUSALS.invalidLoginCode();
    await this.deps.readYourWrites(done.position, ['sessions', 'ledger']);
    return {
      success: true,
      accessToken: this.deps.tokens.issueAccessToken({ userId: user.id, partnerId, sessionId: done.result.sessionId }),
      refreshToken: done.result.refresh.token,
      tokenType: 'Bearer',
      expiresIn: 900,
      user: { id: user.id, email: user.email, status: 'active' },
    };
  }

  /** The first successful login opens the user's one USDC account, in the same atomic append. */
  private async accountOpening(reads: Reads, userId: string, partnerId: string, at: string): Promise<Append[]> {
    const reservation = await reads.stream(userAccountStream(userId), userAccountDecider);
    if (reservation.state.accountId !== null) return [];
    const [row] = await this.deps.sql.query<{ id: string }>(`SELECT nextval('account_id_seq')::text AS id`);
    const accountId = Number(row?.id);
    return [
      {
        stream: userAccountStream(userId),
        events: userAccountDecider.decide({ type: 'Reserve', userId, accountId }, reservation.state),
        expected: 'no_stream',
      },
      {
        stream: accountStream(accountId),
        events: accountDecider.decide({ type: 'OpenAccount', accountId, userId, partnerId, at }, accountDecider.initialState()),
        expected: 'no_stream',
      },
    ];
  }

  private async userState(reads: Reads, userId: string) {
    const { state } = await reads.stream(userStream(userId), userDecider);
    return { status: state.status ?? 'pending', sessionGeneration: state.sessionGeneration, erased: state.erased };
  }

  /**
   * Rotates the refresh token. A concurrent refresh or logout of the session decides it again on
   * what is stored: a token rotated meanwhile is a reused one, which ends the session.
   */
  async refresh(partnerId: string, refreshToken: string, ctx: CommandContext): Promise<LoginResult> {
    const parsed = parseRefreshToken(refreshToken);
    if (!parsed) throw IDENTITY_REFUSALS.refreshTokenInvalid();
    const next = newRefreshToken(parsed.sessionId);
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const session = await reads.stream(sessionStream(parsed.sessionId), sessionDecider);
        const userId = session.state.userId;
        if (session.state.partnerId !== partnerId || !userId) throw IDENTITY_REFUSALS.refreshTokenInvalid();
        const user = await this.userState(reads, userId);
        if (user.erased) throw IDENTITY_REFUSALS.refreshTokenInvalid();
        const command = { presentedHash: parsed.hash, newHash: next.hash, userStatus: user.status, userGeneration: user.sessionGeneration };
        const events = sessionDecider.decide({ type: 'Refresh', ...command, at: new Date().toISOString() }, session.state);
        const revoked = events.some((e) => e.type === 'SessionRevoked');
        return { appends: [{ stream: sessionStream(parsed.sessionId), events, expected: atRevision(session) }], result: { userId, revoked } };
      },
      { cache: false },
    );
    const { userId, revoked } = done.result;
    if (done.position) await this.deps.readYourWrites(done.position, ['sessions']);
    if (revoked) throw IDENTITY_REFUSALS.refreshTokenInvalid();
    const email = await this.deps.userQueries.emailOf(userId);
    return {
      success: true,
      accessToken: this.deps.tokens.issueAccessToken({ userId, partnerId, sessionId: parsed.sessionId }),
      refreshToken: next.token,
      tokenType: 'Bearer',
      expiresIn: 900,
      user: { id: userId, email: email ?? '', status: 'active' },
    };
  }

  async logout(partnerId: string, refreshToken: string, ctx: CommandContext): Promise<void> {
    const parsed = parseRefreshToken(refreshToken);
    if (!parsed) throw IDENTITY_REFUSALS.refreshTokenInvalid();
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const session = await reads.stream(sessionStream(parsed.sessionId), sessionDecider);
        if (session.state.partnerId !== partnerId) throw IDENTITY_REFUSALS.refreshTokenInvalid();
        const events = sessionDecider.decide({ type: 'Logout', presentedHash: parsed.hash, at: new Date().toISOString() }, session.state);
        return { appends: [{ stream: sessionStream(parsed.sessionId), events, expected: atRevision(session) }], result: null };
      },
      { cache: false },
    );
    if (done.position) await this.deps.readYourWrites(done.position, ['sessions']);
  }

  /**
   * Bearer check on every request: a valid token of a live session of a user who is still active, or
   * why not (`token_expired` for a token of ours past its time; `token_invalid` for anything else,
   * an ended session or a user no longer active among them).
   */
  async authenticateBearer(token: string): Promise<{ userId: string; partnerId: string; sessionId: string } | BearerRefusal> {
    const claims = this.deps.tokens.verifyAccessToken(token);
    if (claims === 'expired') return 'token_expired';
    if (!claims) return 'token_invalid';
    return (await this.deps.sessionGate.isActive(claims)) ? claims : 'token_invalid';
  }
}
