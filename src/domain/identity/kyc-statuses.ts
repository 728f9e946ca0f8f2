/** KYC status values of the interface (section 3.2). */
export const KYC_STATUSES = [
  'created',
  'pending',
  'in_progress',
  'completed',
  'needs_review',
  'approved',
  'declined',
  'rejected',
  'expired',
  'failed',
] as const;
export type KycStatus = (typeof KYC_STATUSES)[number];

/** Start KYC answers with the existing verification while it is one of these. */
export const KYC_RESUMABLE: readonly KycStatus[] = ['created', 'pending', 'in_progress'];
/** Submitted, awaiting a decision: Start KYC answers 409. */
export const KYC_AWAITING_DECISION: readonly KycStatus[] = ['completed', 'needs_review'];
/** Terminal for Start KYC (422), except `expired`, which starts a new verification. */
export const KYC_FINAL: readonly KycStatus[] = ['approved', 'declined', 'rejected', 'failed', 'expired'];

/**
 * The five values a KYC history item shows (the interface's section 2.4), each a summary of KYC
 * statuses; the status view and the document read keep the full KYC status.
 */
export const KYC_HISTORY_STATUSES = ['created', 'processing', 'manual_review', 'approved', 'failed'] as const;
export type KycHistoryStatus = (typeof KYC_HISTORY_STATUSES)[number];

/** What ended a verification as `failed` in its history: the KYC status names the cause. */
export const KYC_FAILED: readonly KycStatus[] = ['declined', 'rejected', 'failed', 'expired'];

const HISTORY_STATUS: Record<KycStatus, KycHistoryStatus> = {
  created: 'created',
  pending: 'processing',
  in_progress: 'processing',
  // Submitted, awaiting the provider's decision: still being processed.
  completed: 'processing',
  needs_review: 'manual_review',
  approved: 'approved',
  declined: 'failed',
  rejected: 'failed',
  failed: 'failed',
  expired: 'failed',
};

/**
 * A verification as its history item shows it: its summary status and, when `failed`, the reasons,
 * first the KYC status that caused it (`declined`, `rejected`, `failed` or `expired`), then the
 * provider's own reasons, if any; null otherwise.
 */
export function kycHistoryStatus(
  status: KycStatus,
  providerReasons: readonly string[] | null,
): { status: KycHistoryStatus; rejectionReasons: string[] | null } {
  const summary = HISTORY_STATUS[status];
  if (summary !== 'failed') return { status: summary, rejectionReasons: null };
  return { status: summary, rejectionReasons: [status, ...(providerReasons ?? []).filter((reason) => reason !== status)] };
}
