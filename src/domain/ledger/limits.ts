import type { Amount } from './money';
import { ZERO } from './money';
import { type KycState, latest } from '../identity';

/** What a user may move: per transaction, and per UTC day (outgoing). */
export interface Limits {
  maxTransactionAmount: Amount;
  dailyTransactionLimit: Amount;
}

export const NO_LIMITS_GRANTED: Limits = { maxTransactionAmount: ZERO, dailyTransactionLimit: ZERO };

/** True while the user's latest verification is approved and its approval has not expired at `at`. */
export function isApprovedAt(kyc: KycState, at: string): boolean {
  const current = latest(kyc);
  return current?.status === 'approved' && (current.expiresAt === null || Date.parse(current.expiresAt) > Date.parse(at));
}

/**
 * The operating limits of the KYC state (docs/decisions.md, "KYC"): the approved level's limits while approved,
 * nothing before an approval or once it expired. A stale state can only be less approved than the
 * stored one (statuses only move forward), so a decision on it refuses at worst, never allows more.
 */
export function limitsAt(kyc: KycState, at: string, approved: Limits): Limits {
  return isApprovedAt(kyc, at) ? approved : NO_LIMITS_GRANTED;
}
