import type { KycEvent } from '../../domain/identity/kyc';
import type { ProfileEvent } from '../../domain/identity/profile';
import type { SessionEvent } from '../../domain/identity/session';
import type { UserEvent } from '../../domain/identity/user';
import { rowProjection } from '../../platform/consumers/rows';
import { scrubbedOnErasure } from './erased';

/** Personal profiles, one row per user, fields as JSON (null once the user is erased: every field is personal data). */
export const profilesProjection = rowProjection({
  name: 'profiles',
  // 3: UserErased (fields may be null).
  version: 3,
  eventTypes: ['ProfileCreated', 'ProfileUpdated', 'UserErased'],
  tables: {
    rm_profiles: {
      key: 'user_id',
      columns: {
        user_id: { type: 'uuid' },
        partner_id: { type: 'uuid', notNull: true },
        fields: { type: 'jsonb' },
        created_at: { type: 'timestamptz', notNull: true },
        updated_at: { type: 'timestamptz', notNull: true },
      },
    },
  },
  creates: ['ProfileCreated'],
  touches: (recorded) => [{ table: 'rm_profiles', key: (recorded.data as { userId: string }).userId }],
  apply(rows, recorded) {
    const e = recorded as unknown as ProfileEvent | Extract<UserEvent, { type: 'UserErased' }>;
    const current = rows.get('rm_profiles', e.data.userId);
    if (e.type === 'UserErased') {
      if (current) rows.put('rm_profiles', { ...current, fields: null, updated_at: recorded.recordedAt });
    } else if (e.type === 'ProfileCreated') {
      if (!current) {
        rows.put('rm_profiles', {
          user_id: e.data.userId,
          partner_id: e.data.partnerId,
          fields: e.data.fields,
          created_at: recorded.recordedAt,
          updated_at: recorded.recordedAt,
        });
      }
    } else if (current) {
      rows.put('rm_profiles', { ...current, fields: { ...(current.fields as object), ...e.data.changes }, updated_at: recorded.recordedAt });
    }
  },
});

const SUBMITTED = ['completed', 'needs_review', 'approved', 'declined', 'rejected', 'failed'];
const REVIEWED = ['approved', 'declined', 'rejected', 'needs_review'];
const REJECTED = ['declined', 'rejected', 'failed'];
const APPROVAL_VALIDITY_MS = 365 * 86_400_000;

/** Every KYC verification (history), newest readable by created_at; an erased user's documents are null. */
export const kycProjection = scrubbedOnErasure(
  rowProjection({
    name: 'kyc',
    // 3: UserErased (scrubbedOnErasure).
    version: 3,
    eventTypes: ['KycVerificationStarted', 'KycStatusChanged'],
    tables: {
      rm_kyc_verifications: {
        key: 'verification_id',
        columns: {
          verification_id: { type: 'uuid' },
          user_id: { type: 'uuid', notNull: true },
          inquiry_id: { type: 'text', notNull: true, unique: true },
          provider: { type: 'text', notNull: true },
          verification_url: { type: 'text', notNull: true },
          verification_level: { type: 'text', notNull: true },
          status: { type: 'text', notNull: true },
          risk_level: { type: 'text' },
          risk_score: { type: 'numeric' },
          rejection_reasons: { type: 'jsonb' },
          document: { type: 'jsonb' },
          created_at: { type: 'timestamptz', notNull: true },
          submitted_at: { type: 'timestamptz' },
          reviewed_at: { type: 'timestamptz' },
          approved_at: { type: 'timestamptz' },
          expires_at: { type: 'timestamptz' },
          updated_at: { type: 'timestamptz', notNull: true },
        },
        indexes: [['user_id', 'created_at DESC']],
      },
    },
    creates: ['KycVerificationStarted'],
    touches: (recorded) => [{ table: 'rm_kyc_verifications', key: (recorded.data as { verificationId: string }).verificationId }],
    apply(rows, recorded) {
      const e = recorded as unknown as KycEvent;
      const current = rows.get('rm_kyc_verifications', e.data.verificationId);
      if (e.type === 'KycVerificationStarted') {
        if (current) return;
        const d = e.data;
        rows.put('rm_kyc_verifications', {
          verification_id: d.verificationId,
          user_id: d.userId,
          inquiry_id: d.inquiryId,
          provider: d.provider,
          verification_url: d.verificationUrl,
          verification_level: d.verificationLevel,
          status: 'created',
          risk_level: null,
          risk_score: null,
          rejection_reasons: null,
          document: null,
          created_at: d.at,
          submitted_at: null,
          reviewed_at: null,
          approved_at: null,
          expires_at: null,
          updated_at: d.at,
        });
        return;
      }
      if (!current) return;
      const d = e.data;
      const at = new Date(d.at).toISOString();
      rows.put('rm_kyc_verifications', {
        ...current,
        status: d.to,
        risk_level: d.riskLevel ?? current.risk_level ?? null,
        risk_score: d.riskScore === null ? (current.risk_score ?? null) : String(d.riskScore),
        rejection_reasons: REJECTED.includes(d.to) ? (d.rejectionReasons ?? current.rejection_reasons ?? []) : (current.rejection_reasons ?? null),
        document: d.document ?? current.document ?? null,
        submitted_at: current.submitted_at ?? (SUBMITTED.includes(d.to) ? at : null),
        reviewed_at: REVIEWED.includes(d.to) ? at : (current.reviewed_at ?? null),
        approved_at: d.to === 'approved' ? at : (current.approved_at ?? null),
        expires_at: d.to === 'approved' ? new Date(Date.parse(at) + APPROVAL_VALIDITY_MS).toISOString() : (current.expires_at ?? null),
        updated_at: at,
      });
    },
  }),
  { table: 'rm_kyc_verifications', userColumn: 'user_id', set: { document: null } },
);

/** Sessions, for checking a bearer token's session on every request. */
export const sessionsProjection = rowProjection({
  name: 'sessions',
  version: 3,
  eventTypes: ['SessionStarted', 'SessionRefreshed', 'SessionRevoked'],
  tables: {
    rm_sessions: {
      key: 'session_id',
      columns: {
        session_id: { type: 'uuid' },
        user_id: { type: 'uuid', notNull: true },
        partner_id: { type: 'uuid', notNull: true },
        expires_at: { type: 'timestamptz', notNull: true },
        revoked_at: { type: 'timestamptz' },
        revoked_reason: { type: 'text' },
        started_at: { type: 'timestamptz', notNull: true },
        /** The user's sessionGeneration at the start: a later suspension or ban ends the session. */
        user_generation: { type: 'integer', notNull: true, default: '0' },
      },
      indexes: [['user_id']],
    },
  },
  creates: ['SessionStarted'],
  touches: (recorded) => [{ table: 'rm_sessions', key: (recorded.data as { sessionId: string }).sessionId }],
  apply(rows, recorded) {
    const e = recorded as unknown as SessionEvent;
    const current = rows.get('rm_sessions', e.data.sessionId);
    switch (e.type) {
      case 'SessionStarted':
        if (!current) {
          rows.put('rm_sessions', {
            session_id: e.data.sessionId,
            user_id: e.data.userId,
            partner_id: e.data.partnerId,
            expires_at: e.data.expiresAt,
            revoked_at: null,
            revoked_reason: null,
            started_at: e.data.at,
            user_generation: e.data.userGeneration ?? 0,
          });
        }
        break;
      case 'SessionRefreshed':
        if (current) rows.put('rm_sessions', { ...current, expires_at: e.data.expiresAt });
        break;
      case 'SessionRevoked':
        if (current) rows.put('rm_sessions', { ...current, revoked_at: e.data.at, revoked_reason: e.data.reason });
        break;
    }
  },
});
