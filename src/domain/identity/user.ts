import { type Decider, invariant } from '../../platform/decider';
import { IDENTITY_REFUSALS as R } from './refusals';

export const USER_STATUSES = ['pending', 'kyc_required', 'active', 'suspended', 'banned'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

export interface UserRegisteredData {
  userId: string;
  partnerId: string;
  email: string;
  countryCode: string;
  phoneNumber: string | null;
  language: string;
  [key: string]: string | null;
}

export type UserEvent =
  | { type: 'UserRegistered'; data: UserRegisteredData }
  | { type: 'UserStatusChanged'; data: { userId: string; from: UserStatus; to: UserStatus; reason: string } }
  /**
   * A move the user would have made but for a suspension (KYC started or approved meanwhile): the
   * status stays `suspended`, and reinstatement lands in `to`.
   */
  | { type: 'UserStatusOnReinstatementChanged'; data: { userId: string; from: UserStatus; to: UserStatus; reason: string } }
  /** The user's personal data is erased for good: their data key is destroyed, they are "not found" from then on. */
  | { type: 'UserErased'; data: { userId: string; erasedAt: string } };

/**
 * An email's reservation stream: the log itself keeps an email one user's across the service. The
 * first reservation is appended at "no stream"; after its user's erasure releases it, a new one is
 * appended at the stream's revision, so of two registrations of a released email one wins.
 */
export type EmailReservationEvent = { type: 'UserEmailReserved'; data: { userId: string } } | { type: 'UserEmailReleased'; data: { userId: string } };

export type UserCommand =
  | { type: 'RegisterUser'; data: UserRegisteredData }
  | { type: 'RequireKyc' }
  | { type: 'ActivateAfterKyc' }
  | { type: 'Suspend'; reason: string }
  | { type: 'Ban'; reason: string }
  | { type: 'Reinstate'; reason: string }
  /**
   * Erasure, with the facts of the user's money read from the ledger's write side: `unsettled`,
   * an account whose credits differ from its debits; `pending`, a deposit, payout or card hold not settled.
   */
  | { type: 'Erase'; erasedAt: string; money: { unsettled: boolean; pending: boolean } };

export interface UserState {
  exists: boolean;
  userId: string | null;
  partnerId: string | null;
  status: UserStatus | null;
  /** Where a reinstated user returns to: the status it had, moved on as it would have been meanwhile. */
  statusBeforeSuspension: UserStatus | null;
  /**
   * How many times the user was suspended or banned. Each time ends every session of the user: a
   * session started at a lower count is dead, also after reinstatement (docs/decisions.md, "Login and tokens").
   */
  sessionGeneration: number;
  /**
   * The email registered with: erasure releases its reservation, and a re-run of an erasure cut short
   * scrubs by it (null once the log no longer gives it: sealed, and its key destroyed).
   */
  email: string | null;
  /** Erased: every command on the user is 404 `User not found` from then on, as every read is. */
  erased: boolean;
}

const ENDS_SESSIONS: readonly UserStatus[] = ['suspended', 'banned'];

export const userStream = (userId: string) => `user-${userId}`;

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const change = (state: UserState, to: UserStatus, reason: string): UserEvent[] => {
  invariant(state.userId && state.status, 'a registered user has an id and a status');
  return [{ type: 'UserStatusChanged', data: { userId: state.userId, from: state.status, to, reason } }];
};

/** While suspended, a move the user would have made changes where reinstatement lands instead. */
const changeOnReinstatement = (state: UserState, to: UserStatus, reason: string): UserEvent[] => {
  invariant(state.userId && state.status === 'suspended' && state.statusBeforeSuspension, 'a suspended user has a status to return to');
  return [{ type: 'UserStatusOnReinstatementChanged', data: { userId: state.userId, from: state.statusBeforeSuspension, to, reason } }];
};

export const userDecider: Decider<UserState, UserCommand, UserEvent> = {
  initialState: () => ({
    exists: false,
    userId: null,
    partnerId: null,
    status: null,
    statusBeforeSuspension: null,
    sessionGeneration: 0,
    email: null,
    erased: false,
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'UserRegistered':
        return { ...state, exists: true, userId: event.data.userId, partnerId: event.data.partnerId, status: 'pending', email: event.data.email };
      case 'UserStatusChanged':
        return {
          ...state,
          status: event.data.to,
          statusBeforeSuspension: event.data.to === 'suspended' ? event.data.from : state.statusBeforeSuspension,
          sessionGeneration: ENDS_SESSIONS.includes(event.data.to) ? state.sessionGeneration + 1 : state.sessionGeneration,
        };
      case 'UserStatusOnReinstatementChanged':
        return { ...state, statusBeforeSuspension: event.data.to };
      case 'UserErased':
        // Erasure ends every session, as a suspension does.
        return { ...state, erased: true, sessionGeneration: state.sessionGeneration + 1 };
    }
  },

  decide(command, state) {
    if (command.type === 'RegisterUser') {
      if (state.exists) throw R.userExists();
      return [{ type: 'UserRegistered', data: command.data }];
    }
    if (!state.exists || state.erased) throw R.userNotFound();
    switch (command.type) {
      case 'RequireKyc':
        // Start KYC moves a pending user on; calling it again in later states changes nothing here.
        if (state.status === 'suspended' && state.statusBeforeSuspension === 'pending') return changeOnReinstatement(state, 'kyc_required', 'kyc_started');
        return state.status === 'pending' ? change(state, 'kyc_required', 'kyc_started') : [];
      case 'ActivateAfterKyc': {
        const waiting = (s: UserStatus | null) => s === 'kyc_required' || s === 'pending';
        if (state.status === 'suspended' && waiting(state.statusBeforeSuspension)) return changeOnReinstatement(state, 'active', 'kyc_approved');
        return waiting(state.status) ? change(state, 'active', 'kyc_approved') : [];
      }
      case 'Suspend':
        if (state.status === 'banned') throw R.userBanned();
        if (state.status === 'suspended') return [];
        return change(state, 'suspended', command.reason);
      case 'Ban':
        if (state.status === 'banned') return [];
        return change(state, 'banned', command.reason);
      case 'Reinstate':
        if (state.status === 'banned') throw R.bannedUserNotReinstatable();
        if (state.status !== 'suspended') throw R.userNotSuspended(String(state.status));
        return change(state, state.statusBeforeSuspension ?? 'pending', command.reason);
      case 'Erase':
        // Money is never orphaned: nothing may be left on, or on its way to or from, the user's accounts.
        if (command.money.unsettled) throw R.userHasBalance();
        if (command.money.pending) throw R.userHasPendingTransactions();
        invariant(state.userId, 'a registered user has an id');
        return [{ type: 'UserErased', data: { userId: state.userId, erasedAt: command.erasedAt } }];
    }
  },
};

/** An email is one user's across the service: its reservation stream already exists (409). */
export const emailTaken = () => R.emailTaken();

/** Who holds an email: the user of its latest reservation, until that user's erasure releases it. */
export const emailReservationDecider: Decider<
  { heldBy: string | null },
  { type: 'Reserve'; userId: string } | { type: 'Release'; userId: string },
  EmailReservationEvent
> = {
  initialState: () => ({ heldBy: null }),
  evolve: (_state, event) => ({ heldBy: event.type === 'UserEmailReserved' ? event.data.userId : null }),
  decide(command, state) {
    if (command.type === 'Reserve') {
      if (state.heldBy !== null) throw R.emailTaken();
      return [{ type: 'UserEmailReserved', data: { userId: command.userId } }];
    }
    // Released once, by its holder only: a re-run of an erasure changes nothing.
    return state.heldBy === command.userId ? [{ type: 'UserEmailReleased', data: { userId: command.userId } }] : [];
  },
};

/** Only an active user logs in: a code verified for a user in any other status is refused (401). */
export function requireActiveForLogin(status: UserStatus): void {
  if (status !== 'active') throw R.userNotActive(status);
}

/** A suspended or banned user starts no identity verification (409). */
export function requireMayVerify(status: UserStatus): void {
  if (status === 'suspended' || status === 'banned') throw R.userMayNotVerify(status);
}
