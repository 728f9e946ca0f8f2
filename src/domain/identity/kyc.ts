import { type Decider, invariant } from '../../platform/decider';
import { IDENTITY_REFUSALS as R } from './refusals';
import { KYC_AWAITING_DECISION, KYC_FINAL, KYC_RESUMABLE, type KycStatus } from './kyc-statuses';

export interface KycDocumentData {
  issuingCountry: string | null;
  type: string | null;
  issuedDate: string | null;
  idNumber: string | null;
  expiryDate: string | null;
  imageFront: string | null;
  imageBack: string | null;
  [key: string]: string | null;
}

export interface Verification {
  id: string;
  inquiryId: string;
  provider: string;
  verificationUrl: string;
  verificationLevel: string;
  status: KycStatus;
  riskLevel: string | null;
  riskScore: number | null;
  rejectionReasons: string[] | null;
  document: KycDocumentData | null;
  createdAt: string;
  submittedAt: string | null;
  reviewedAt: string | null;
  approvedAt: string | null;
  expiresAt: string | null;
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export type KycEvent =
  | {
      type: 'KycVerificationStarted';
      data: { userId: string; verificationId: string; inquiryId: string; provider: string; verificationUrl: string; verificationLevel: string; at: string };
    }
  | {
      type: 'KycStatusChanged';
      data: {
        userId: string;
        verificationId: string;
        inquiryId: string;
        from: KycStatus;
        to: KycStatus;
        riskLevel: string | null;
        riskScore: number | null;
        rejectionReasons: string[] | null;
        document: KycDocumentData | null;
        source: string;
        at: string;
        [key: string]: Json;
      };
    };

export type KycCommand =
  | {
      type: 'RecordVerificationStarted';
      userId: string;
      verificationId: string;
      inquiryId: string;
      provider: string;
      verificationUrl: string;
      at: string;
    }
  | {
      type: 'ApplyProviderStatus';
      inquiryId: string;
      status: KycStatus;
      riskLevel: string | null;
      riskScore: number | null;
      reasons: string[] | null;
      document: KycDocumentData | null;
      source: string;
      at: string;
    };

export interface KycState {
  userId: string | null;
  /** Oldest first. */
  verifications: Verification[];
}

export const VERIFICATION_LEVEL = 'basic';
/** How long an approval stands before a periodic review. */
export const APPROVAL_VALIDITY_DAYS = 365;

export const kycStream = (userId: string) => `kyc-${userId}`;

export const latest = (state: KycState): Verification | null => state.verifications[state.verifications.length - 1] ?? null;

export type StartDecision = { kind: 'existing'; verification: Verification } | { kind: 'new' };

/** The start rules of docs/decisions.md ("KYC"): resume, 409, 422, or (none yet / expired) a new verification. */
export function decideStart(state: KycState): StartDecision {
  const current = latest(state);
  if (!current || current.status === 'expired') return { kind: 'new' };
  if (KYC_RESUMABLE.includes(current.status)) return { kind: 'existing', verification: current };
  if (KYC_AWAITING_DECISION.includes(current.status)) throw R.kycInProgress();
  invariant(KYC_FINAL.includes(current.status), `status ${current.status} is final`);
  throw R.kycFinalized(current.status);
}

export const canStartNewKyc = (state: KycState): boolean => {
  const current = latest(state);
  return !current || current.status === 'expired';
};

const addDays = (iso: string, days: number) => new Date(Date.parse(iso) + days * 86_400_000).toISOString();

function applyStatus(v: Verification, e: Extract<KycEvent, { type: 'KycStatusChanged' }>['data']): Verification {
  const to = e.to;
  return {
    ...v,
    status: to,
    riskLevel: e.riskLevel ?? v.riskLevel,
    riskScore: e.riskScore ?? v.riskScore,
    rejectionReasons: ['declined', 'rejected', 'failed'].includes(to) ? (e.rejectionReasons ?? v.rejectionReasons ?? []) : v.rejectionReasons,
    document: e.document ?? v.document,
    submittedAt: v.submittedAt ?? (['completed', 'needs_review', 'approved', 'declined', 'rejected', 'failed'].includes(to) ? e.at : null),
    reviewedAt: ['approved', 'declined', 'rejected', 'needs_review'].includes(to) ? e.at : v.reviewedAt,
    approvedAt: to === 'approved' ? e.at : v.approvedAt,
    expiresAt: to === 'approved' ? addDays(e.at, APPROVAL_VALIDITY_DAYS) : v.expiresAt,
  };
}

/**
 * A provider may report out of order or twice. A verification only moves forward: once final it
 * stays (a late "pending" after "approved" changes nothing); the same status again is no event.
 */
function mayMove(from: KycStatus, to: KycStatus): boolean {
  if (from === to) return false;
  if (KYC_FINAL.includes(from)) return false;
  const rank: Record<KycStatus, number> = {
    created: 0,
    pending: 1,
    in_progress: 2,
    completed: 3,
    needs_review: 4,
    approved: 5,
    declined: 5,
    rejected: 5,
    expired: 5,
    failed: 5,
  };
  return rank[to] >= rank[from];
}

export const kycDecider: Decider<KycState, KycCommand, KycEvent> = {
  initialState: () => ({ userId: null, verifications: [] }),

  evolve(state, event) {
    switch (event.type) {
      case 'KycVerificationStarted': {
        const d = event.data;
        const v: Verification = {
          id: d.verificationId,
          inquiryId: d.inquiryId,
          provider: d.provider,
          verificationUrl: d.verificationUrl,
          verificationLevel: d.verificationLevel,
          status: 'created',
          riskLevel: null,
          riskScore: null,
          rejectionReasons: null,
          document: null,
          createdAt: d.at,
          submittedAt: null,
          reviewedAt: null,
          approvedAt: null,
          expiresAt: null,
        };
        return { userId: d.userId, verifications: [...state.verifications, v] };
      }
      case 'KycStatusChanged':
        return { ...state, verifications: state.verifications.map((v) => (v.id === event.data.verificationId ? applyStatus(v, event.data) : v)) };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'RecordVerificationStarted': {
        if (decideStart(state).kind !== 'new') throw R.kycInProgress();
        return [
          {
            type: 'KycVerificationStarted',
            data: {
              userId: command.userId,
              verificationId: command.verificationId,
              inquiryId: command.inquiryId,
              provider: command.provider,
              verificationUrl: command.verificationUrl,
              verificationLevel: VERIFICATION_LEVEL,
              at: command.at,
            },
          },
        ];
      }
      case 'ApplyProviderStatus': {
        const v = state.verifications.find((x) => x.inquiryId === command.inquiryId);
        if (!v || !state.userId) throw R.unknownInquiry(command.inquiryId);
        if (!mayMove(v.status, command.status)) return [];
        return [
          {
            type: 'KycStatusChanged',
            data: {
              userId: state.userId,
              verificationId: v.id,
              inquiryId: v.inquiryId,
              from: v.status,
              to: command.status,
              riskLevel: command.riskLevel,
              riskScore: command.riskScore,
              rejectionReasons: command.reasons,
              document: command.document,
              source: command.source,
              at: command.at,
            },
          },
        ];
      }
    }
  },
};
