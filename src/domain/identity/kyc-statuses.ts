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
