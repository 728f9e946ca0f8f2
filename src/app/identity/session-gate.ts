import { sessionDecider, sessionStream } from '../../domain/identity/session';
import { userDecider, userStream } from '../../domain/identity/user';
import type { EventStore, RecordedEvent } from '../../eventstore/port';
import type { Projections } from '../../platform/consumers/projections';
import { load, type StateCache } from '../../platform/commands/commands';
import { ReadModelMemo } from '../../platform/consumers/read-model-memo';
import type { SessionQueries } from '../../projections/identity';

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
 * comes from the read models (rm_sessions, rm_users); an "active" answer is remembered (see
 * ReadModelMemo), so a request with a known session makes no round trip to the database, and a
 * logout, a suspension or a ban stops the token at once, as with the query on every request.
 *
 * While either projection is stopped on an event it cannot apply, its read model misses every later
 * event (a suspension, a logout): the answer then comes from the session's and the user's streams,
 * as a refresh reads them, and nothing is remembered.
 */
export class SessionGate {
  private readonly memo: ReadModelMemo<Claims>;
  readonly stats = { hits: 0, queries: 0, logReads: 0 };

  constructor(
    private readonly sessions: Pick<SessionQueries, 'state'>,
    private readonly engine: Projections,
    private readonly store: EventStore,
    private readonly cache: StateCache,
  ) {
    this.memo = new ReadModelMemo(engine, NAMES, { ttlMs: TTL_MS, maxEntries: MAX_ENTRIES, staleAfter });
  }

  async isActive(claims: Claims): Promise<boolean> {
    if (NAMES.some((n) => this.engine.isStopped(n))) return this.isActiveInLog(claims);
    const known = this.memo.get(claims.sessionId);
    if (known && known.userId === claims.userId && known.partnerId === claims.partnerId) {
      this.stats.hits++;
      return true;
    }
    const generation = this.memo.generation;
    this.stats.queries++;
    const row = await this.sessions.state(claims);
    const ok = !!row && !row.revoked && row.status === 'active';
    if (ok) this.memo.remember(claims.sessionId, claims, [`session:${claims.sessionId}`, `user:${claims.userId}`], generation);
    return ok;
  }

  /** The same rule as SessionQueries.state, on the states folded from the log. */
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
      user.state.status === 'active' &&
      !user.state.erased
    );
  }
}

/** A revoked session, or any change of its user's status (a suspension, a ban, an erasure). */
function staleAfter(e: RecordedEvent): string[] {
  if (e.type === 'SessionRevoked') return [`session:${(e.data as { sessionId: string }).sessionId}`];
  if (e.type === 'UserStatusChanged' || e.type === 'UserErased') return [`user:${(e.data as { userId: string }).userId}`];
  return [];
}
