import type { Decider } from '../../platform/decider';
import { AUDIT_REFUSALS as R } from './refusals';

/**
 * An auditor: a read-only credential the operator hands to an outside auditor. Its stream holds its
 * creation (the token only as its SHA-256: the token is shown once), its revocation, and a record of
 * every use of an auditor route, so the log itself says who read what and when.
 */
export type AuditorEvent =
  | { type: 'AuditorCreated'; data: { auditorId: string; name: string; tokenHash: string; expiresAt: string } }
  | { type: 'AuditorRevoked'; data: { auditorId: string } }
  | { type: 'AuditorUsed'; data: { auditorId: string; route: string; at: string } };

export type AuditorCommand =
  | { type: 'CreateAuditor'; auditorId: string; name: string; tokenHash: string; expiresAt: Date; now: Date }
  | { type: 'RevokeAuditor' }
  /** A request to an auditor route with a token of this hash, at `now`: recorded, or refused. */
  | { type: 'RecordUse'; tokenHash: string; route: string; now: Date };

export interface AuditorState {
  auditorId: string | null;
  tokenHash: string | null;
  /** ISO 8601; the token works strictly before it. */
  expiresAt: string | null;
  revoked: boolean;
  uses: number;
}

/** The furthest an auditor token may reach: one calendar year from its creation. */
export function latestExpiry(now: Date): Date {
  const latest = new Date(now);
  latest.setUTCFullYear(latest.getUTCFullYear() + 1);
  return latest;
}

export const auditorStream = (auditorId: string) => `auditor-${auditorId}`;

export const auditorDecider: Decider<AuditorState, AuditorCommand, AuditorEvent> = {
  initialState: () => ({ auditorId: null, tokenHash: null, expiresAt: null, revoked: false, uses: 0 }),

  evolve(state, event) {
    switch (event.type) {
      case 'AuditorCreated':
        return { ...state, auditorId: event.data.auditorId, tokenHash: event.data.tokenHash, expiresAt: event.data.expiresAt };
      case 'AuditorRevoked':
        return { ...state, revoked: true };
      case 'AuditorUsed':
        return { ...state, uses: state.uses + 1 };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreateAuditor': {
        if (state.auditorId) throw R.auditorExists();
        const name = command.name.trim();
        if (!name) throw R.auditorNameEmpty();
        if (command.expiresAt.getTime() <= command.now.getTime()) throw R.expiryNotInFuture();
        if (command.expiresAt.getTime() > latestExpiry(command.now).getTime()) throw R.expiryTooFar();
        const data = { auditorId: command.auditorId, name, tokenHash: command.tokenHash, expiresAt: command.expiresAt.toISOString() };
        return [{ type: 'AuditorCreated', data }];
      }
      case 'RevokeAuditor':
        if (!state.auditorId) throw R.auditorNotFound();
        // Revoking a revoked auditor is the same revocation: nothing more to record.
        return state.revoked ? [] : [{ type: 'AuditorRevoked', data: { auditorId: state.auditorId } }];
      case 'RecordUse': {
        // The hashes are of 256-bit random tokens: comparing them leaks nothing worth timing.
        if (!state.auditorId || state.revoked || state.tokenHash !== command.tokenHash) throw R.tokenInvalid();
        if (state.expiresAt === null || command.now.getTime() >= Date.parse(state.expiresAt)) throw R.tokenExpired();
        return [{ type: 'AuditorUsed', data: { auditorId: state.auditorId, route: command.route, at: command.now.toISOString() } }];
      }
    }
  },

  // Every auditor read lengthens the stream: a load on another node starts from a snapshot.
  snapshot: {
    kind: 'auditor-v1',
    encode: (s) => ({ ...s }),
    decode: (json) => json as unknown as AuditorState,
  },
};
