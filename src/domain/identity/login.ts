import { timingSafeEqual } from 'node:crypto';
import type { Decider } from '../../platform/decider';
import { IDENTITY_REFUSALS as R } from './refusals';

/** Login codes: 6 digits, 10 minutes, single use, burned after 5 wrong tries (docs/decisions.md, "Login and tokens"). */
export const CODE_LIFETIME_SECONDS = 600;
export const MAX_WRONG_ATTEMPTS = 5;
export const MAX_SENDS_PER_HOUR = 5;

export type LoginEvent =
  | { type: 'LoginCodeIssued'; data: { userId: string; codeId: string; codeHash: string; expiresAt: string; at: string } }
  | { type: 'LoginCodeAttemptFailed'; data: { userId: string; codeId: string; attempts: number; burned: boolean; at: string } }
  | { type: 'LoginCodeConsumed'; data: { userId: string; codeId: string; sessionId: string; at: string } };

export type LoginCommand =
  | { type: 'IssueCode'; userId: string; codeId: string; codeHash: string; at: string }
  | { type: 'VerifyCode'; userId: string; presentedHash: string; sessionId: string; at: string };

interface ActiveCode {
  codeId: string;
  codeHash: string;
  expiresAt: string;
  attempts: number;
  burned: boolean;
  consumed: boolean;
}

export interface LoginState {
  code: ActiveCode | null;
}

export const loginStream = (userId: string) => `login-${userId}`;

/** The message of a login code that cannot be used (IDENTITY_REFUSALS.invalidLoginCode). */
export const INVALID_CODE = R.invalidLoginCode.template;

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

export const loginDecider: Decider<LoginState, LoginCommand, LoginEvent> = {
  initialState: () => ({ code: null }),

  evolve(state, event) {
    switch (event.type) {
      case 'LoginCodeIssued':
        // A new send replaces the old code.
        return {
          code: { codeId: event.data.codeId, codeHash: event.data.codeHash, expiresAt: event.data.expiresAt, attempts: 0, burned: false, consumed: false },
        };
      case 'LoginCodeAttemptFailed':
        return state.code?.codeId === event.data.codeId ? { code: { ...state.code, attempts: event.data.attempts, burned: event.data.burned } } : state;
      case 'LoginCodeConsumed':
        return state.code?.codeId === event.data.codeId ? { code: { ...state.code, consumed: true } } : state;
    }
  },

  /**
   * VerifyCode with a wrong code returns LoginCodeAttemptFailed: the caller appends it (the count
   * must survive) and then answers 401. An unusable code throws without any event.
   */
  decide(command, state) {
    switch (command.type) {
      case 'IssueCode':
        return [
          {
            type: 'LoginCodeIssued',
            data: {
              userId: command.userId,
              codeId: command.codeId,
              codeHash: command.codeHash,
              expiresAt: new Date(Date.parse(command.at) + CODE_LIFETIME_SECONDS * 1000).toISOString(),
              at: command.at,
            },
          },
        ];
      case 'VerifyCode': {
        const code = state.code;
        if (!code || code.consumed || code.burned || code.expiresAt <= command.at) throw R.invalidLoginCode();
        if (!sameHash(code.codeHash, command.presentedHash)) {
          const attempts = code.attempts + 1;
          return [
            {
              type: 'LoginCodeAttemptFailed',
              data: { userId: command.userId, codeId: code.codeId, attempts, burned: attempts >= MAX_WRONG_ATTEMPTS, at: command.at },
            },
          ];
        }
        return [{ type: 'LoginCodeConsumed', data: { userId: command.userId, codeId: code.codeId, sessionId: command.sessionId, at: command.at } }];
      }
    }
  },
};
