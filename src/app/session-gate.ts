import { sessionDecider, sessionStream } from '../domain/sessions/session';
import { userDecider, userStream } from '../domain/users/user';
import type { EventStore, RecordedEvent } from '../eventstore/port';
import type { Sql } from '../eventstore/sql';
import type { ProjectionEngine } from '../projections/runner';
import { load, type StateCache } from './commands';

/** Most remembered sessions; past it, all are forgotten (and checked in SQL again). */
const MAX_ENTRIES = 100_000;
/** A remembered "active" answer is checked in SQL again after this long, whatever happened. */
const TTL_MS = 60_000;
const NAMES = ['sessions', 'users'];

interface Claims {
  userId: string;
  partnerId: string;
  sessionId: string;
}

/**
 * Is the session of a valid access token still usable (not revoked, its user active)? The answer
 * comes from the read models (rm_sessions, rm_users); an "active" answer is remembered, so a
 * request with a known session makes no round trip to the database.
 *
 * Remembered answers are only used while this node's projection runner owns both projections: it
 * then applies every SessionRevoked and UserStatusChanged, and forgets the answers they affect right
 * after the commit, before any read-your-writes wait of the request that revoked returns. So a
 * logout, a suspension or a ban stops the token at once, as with the query on every request. On a
 * node that does not own them (several nodes), every request asks the database, as before. Any
 * doubt (a lease taken or lost, a checkpoint moved by a rebuild or another node) forgets everything.
 *
 * While either projection is stopped on an event it cannot apply, its read model misses every later
 * event (a suspension, a logout): the answer then comes from the session's and the user's streams,
 * as a refresh reads them, and nothing is remembered.
 */
export class SessionGate {
  private readonly active = new Map<string, { userId: string; partnerId: string; until: number }>();
  private readonly sessionsOfUser = new Map<string, Set<string>>();
  /** Moves at every forget, so that an answer read from SQL before it is not remembered after it. */
  private generation = 0;
  readonly stats = { hits: 0, queries: 0, logReads: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly engine: ProjectionEngine,
    private readonly store: EventStore,
    private readonly cache: StateCache,
  ) {
    engine.observe({ names: NAMES, onEvents: (events) => this.onEvents(events), onReset: () => this.clear() });
  }

  async isActive(claims: Claims): Promise<boolean> {
    if (NAMES.some((n) => this.engine.isStopped(n))) return this.isActiveInLog(claims);
    const usable = NAMES.every((n) => this.engine.owns(n));
    if (usable) {
      const known = this.active.get(claims.sessionId);
      if (known && known.userId === claims.userId && known.partnerId === claims.partnerId && known.until > Date.now()) {
        this.stats.hits++;
        return true;
      }
    }
    const generation = this.generation;
    this.stats.queries++;
    const [row] = await this.sql.query<{ status: string; revoked: boolean }>(
      // A session started before its user's last suspension or ban is over, whatever the status now.
      `SELECT u.status, (s.revoked_at IS NOT NULL OR s.user_generation < u.session_generation) AS revoked
         FROM rm_sessions s JOIN rm_users u ON u.user_id = s.user_id
        WHERE s.session_id = $1 AND s.user_id = $2 AND s.partner_id = $3`,
      [claims.sessionId, claims.userId, claims.partnerId],
    );
    const ok = !!row && !row.revoked && row.status === 'active';
    if (ok && usable && generation === this.generation && NAMES.every((n) => this.engine.owns(n))) this.remember(claims);
    return ok;
  }

  /** The same rule as the query above, on the states folded from the log. */
  private async isActiveInLog(claims: Claims): Promise<boolean> {
    this.stats.logReads++;
    const [session, user] = await Promise.all([
      load(this.store, sessionStream(claims.sessionId), sessionDecider, { cache: this.cache }),
      load(this.store, userStream(claims.userId), userDecider, { cache: this.cache }),
    ]);
    const s = session.state;
    return (
      s.sessionId === claims.sessionId &&
      s.userId === claims.userId &&
      s.partnerId === claims.partnerId &&
      !s.revoked &&
      s.userGeneration >= user.state.sessionGeneration &&
      user.state.status === 'active'
    );
  }

  private remember(claims: Claims): void {
    if (this.active.size >= MAX_ENTRIES) this.clear();
    this.active.set(claims.sessionId, { userId: claims.userId, partnerId: claims.partnerId, until: Date.now() + TTL_MS });
    let sessions = this.sessionsOfUser.get(claims.userId);
    if (!sessions) {
      sessions = new Set();
      this.sessionsOfUser.set(claims.userId, sessions);
    }
    sessions.add(claims.sessionId);
  }

  private onEvents(events: RecordedEvent[]): void {
    for (const e of events) {
      if (e.type === 'SessionRevoked') {
        this.generation++;
        this.active.delete((e.data as { sessionId: string }).sessionId);
      } else if (e.type === 'UserStatusChanged') {
        this.generation++;
        const userId = (e.data as { userId: string }).userId;
        for (const sessionId of this.sessionsOfUser.get(userId) ?? []) this.active.delete(sessionId);
        this.sessionsOfUser.delete(userId);
      }
    }
  }

  private clear(): void {
    this.generation++;
    this.active.clear();
    this.sessionsOfUser.clear();
  }
}
