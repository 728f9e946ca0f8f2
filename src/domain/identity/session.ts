import { timingSafeEqual } from 'node:crypto';
import type { Decider } from '../../platform/decider';
import { IDENTITY_REFUSALS as R } from './refusals';
import type { UserStatus } from './user';

/** A login session: its refresh token rotates on every use; a spent one presented again revokes it all. */
export const REFRESH_TOKEN_LIFETIME_SECONDS = 30 * 24 * 3600;

export type SessionEvent =
  | {
      type: 'SessionStarted';
      /** `userGeneration`: the user's sessionGeneration at the start (absent in sessions started before it was kept: 0). */
      data: { sessionId: string; userId: string; partnerId: string; refreshHash: string; expiresAt: string; at: string; userGeneration?: number };
    }
  | { type: 'SessionRefreshed'; data: { sessionId: string; refreshHash: string; expiresAt: string; at: string } }
  | { type: 'SessionRevoked'; data: { sessionId: string; reason: string; at: string } };

export type SessionCommand =
  | { type: 'StartSession'; sessionId: string; userId: string; partnerId: string; refreshHash: string; userGeneration: number; at: string }
  /** With the user's status and sessionGeneration as they are now. */
  | { type: 'Refresh'; presentedHash: string; newHash: string; userStatus: UserStatus; userGeneration: number; at: string }
  | { type: 'Logout'; presentedHash: string; at: string };

export interface SessionState {
  sessionId: string | null;
  userId: string | null;
  partnerId: string | null;
  refreshHash: string | null;
  spentHashes: string[];
  expiresAt: string | null;
  revoked: boolean;
  /** The user's sessionGeneration when the session started: a suspension or ban since ends it. */
  userGeneration: number;
}

export const sessionStream = (sessionId: string) => `session-${sessionId}`;

/** The message of a refresh token that names no live session (IDENTITY_REFUSALS.refreshTokenInvalid). */
export const INVALID_TOKEN = R.refreshTokenInvalid.template;

const same = (a: string | null, b: string) => {
  if (!a) return false;
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
};

const expiry = (at: string) => new Date(Date.parse(at) + REFRESH_TOKEN_LIFETIME_SECONDS * 1000).toISOString();

export const sessionDecider: Decider<SessionState, SessionCommand, SessionEvent> = {
  initialState: () => ({
    sessionId: null,
    userId: null,
    partnerId: null,
    refreshHash: null,
    spentHashes: [],
    expiresAt: null,
    revoked: false,
    userGeneration: 0,
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'SessionStarted':
        return {
          ...state,
          sessionId: event.data.sessionId,
          userId: event.data.userId,
          partnerId: event.data.partnerId,
          refreshHash: event.data.refreshHash,
          expiresAt: event.data.expiresAt,
          userGeneration: event.data.userGeneration ?? 0,
        };
      case 'SessionRefreshed':
        return {
          ...state,
          spentHashes: state.refreshHash ? [...state.spentHashes, state.refreshHash] : state.spentHashes,
          refreshHash: event.data.refreshHash,
          expiresAt: event.data.expiresAt,
        };
      case 'SessionRevoked':
        return { ...state, revoked: true };
    }
  },

  /**
   * Refresh with a spent token returns SessionRevoked: the caller appends it, then answers 401.
   * While the user is not active, a refresh of a known token changes nothing (the token is not
   * spent); a session its user's suspension or ban ended stays dead after reinstatement.
   */
  decide(command, state) {
    switch (command.type) {
      case 'StartSession':
        if (state.sessionId) throw R.sessionExists();
        return [
          {
            type: 'SessionStarted',
            data: {
              sessionId: command.sessionId,
              userId: command.userId,
              partnerId: command.partnerId,
              refreshHash: command.refreshHash,
              expiresAt: expiry(command.at),
              at: command.at,
              userGeneration: command.userGeneration,
            },
          },
        ];
      case 'Refresh': {
        if (!state.sessionId || state.revoked) throw R.refreshTokenInvalid();
        const spent = state.spentHashes.some((h) => same(h, command.presentedHash));
        if (!spent && !same(state.refreshHash, command.presentedHash)) throw R.refreshTokenInvalid();
        if (command.userStatus !== 'active') throw R.userNotActive(command.userStatus);
        if (state.userGeneration < command.userGeneration) throw R.refreshTokenInvalid();
        if (spent) {
          return [{ type: 'SessionRevoked', data: { sessionId: state.sessionId, reason: 'refresh_token_reuse', at: command.at } }];
        }
        if ((state.expiresAt ?? '') <= command.at) throw R.refreshTokenInvalid();
        return [
          { type: 'SessionRefreshed', data: { sessionId: state.sessionId, refreshHash: command.newHash, expiresAt: expiry(command.at), at: command.at } },
        ];
      }
      case 'Logout': {
        if (!state.sessionId || state.revoked) throw R.refreshTokenInvalid();
        const known = same(state.refreshHash, command.presentedHash) || state.spentHashes.some((h) => same(h, command.presentedHash));
        if (!known) throw R.refreshTokenInvalid();
        return [{ type: 'SessionRevoked', data: { sessionId: state.sessionId, reason: 'logout', at: command.at } }];
      }
    }
  },
};
