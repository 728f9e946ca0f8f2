import type { KycEvent } from '../domain/kyc/kyc';
import type { ProfileEvent } from '../domain/profiles/profile';
import type { SessionEvent } from '../domain/sessions/session';
import type { Projection } from './projection';

/** Personal profiles, one row per user, fields as JSON. */
export const profilesProjection: Projection = {
  name: 'profiles',
  version: 1,
  tables: ['rm_profiles'],
  eventTypes: ['ProfileCreated', 'ProfileUpdated'],
  createTables: (t) => `
    CREATE TABLE ${t.rm_profiles} (
      user_id     uuid PRIMARY KEY,
      partner_id  uuid NOT NULL,
      fields      jsonb NOT NULL,
      created_at  timestamptz NOT NULL,
      updated_at  timestamptz NOT NULL
    );`,
  async apply(tx, events, t) {
    for (const recorded of events) {
      const e = { type: recorded.type, data: recorded.data } as ProfileEvent;
      if (e.type === 'ProfileCreated') {
        await tx.query(
          `INSERT INTO ${t.rm_profiles} (user_id, partner_id, fields, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT DO NOTHING`,
          [e.data.userId, e.data.partnerId, JSON.stringify(e.data.fields), recorded.recordedAt],
        );
      } else {
        await tx.query(`UPDATE ${t.rm_profiles} SET fields = fields || $2::jsonb, updated_at = $3 WHERE user_id = $1`, [
          e.data.userId,
          JSON.stringify(e.data.changes),
          recorded.recordedAt,
        ]);
      }
    }
  },
};

/** Every KYC verification (history), newest readable by created_at. */
export const kycProjection: Projection = {
  name: 'kyc',
  version: 1,
  tables: ['rm_kyc_verifications'],
  eventTypes: ['KycVerificationStarted', 'KycStatusChanged'],
  createTables: (t) => `
    CREATE TABLE ${t.rm_kyc_verifications} (
      verification_id    uuid PRIMARY KEY,
      user_id            uuid NOT NULL,
      inquiry_id         text NOT NULL UNIQUE,
      provider           text NOT NULL,
      verification_url   text NOT NULL,
      verification_level text NOT NULL,
      status             text NOT NULL,
      risk_level         text,
      risk_score         numeric,
      rejection_reasons  jsonb,
      document           jsonb,
      created_at         timestamptz NOT NULL,
      submitted_at       timestamptz,
      reviewed_at        timestamptz,
      approved_at        timestamptz,
      expires_at         timestamptz,
      updated_at         timestamptz NOT NULL
    );
    CREATE INDEX ${t.rm_kyc_verifications}_user ON ${t.rm_kyc_verifications} (user_id, created_at DESC);`,
  async apply(tx, events, t) {
    for (const recorded of events) {
      const e = { type: recorded.type, data: recorded.data } as KycEvent;
      if (e.type === 'KycVerificationStarted') {
        const d = e.data;
        await tx.query(
          `INSERT INTO ${t.rm_kyc_verifications} (verification_id, user_id, inquiry_id, provider, verification_url, verification_level, status, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'created', $7, $7) ON CONFLICT DO NOTHING`,
          [d.verificationId, d.userId, d.inquiryId, d.provider, d.verificationUrl, d.verificationLevel, d.at],
        );
      } else {
        const d = e.data;
        const final = ['declined', 'rejected', 'failed'].includes(d.to);
        const submitted = ['completed', 'needs_review', 'approved', 'declined', 'rejected', 'failed'].includes(d.to);
        const reviewed = ['approved', 'declined', 'rejected', 'needs_review'].includes(d.to);
        await tx.query(
          `UPDATE ${t.rm_kyc_verifications} SET
             status = $2,
             risk_level = COALESCE($3, risk_level),
             risk_score = COALESCE($4::numeric, risk_score),
             rejection_reasons = CASE WHEN $5 THEN COALESCE($6::jsonb, rejection_reasons, '[]'::jsonb) ELSE rejection_reasons END,
             document = COALESCE($7::jsonb, document),
             submitted_at = COALESCE(submitted_at, CASE WHEN $8 THEN $10::timestamptz END),
             reviewed_at = CASE WHEN $9 THEN $10::timestamptz ELSE reviewed_at END,
             approved_at = CASE WHEN $2 = 'approved' THEN $10::timestamptz ELSE approved_at END,
             expires_at = CASE WHEN $2 = 'approved' THEN $10::timestamptz + interval '365 days' ELSE expires_at END,
             updated_at = $10::timestamptz
           WHERE verification_id = $1`,
          [
            d.verificationId,
            d.to,
            d.riskLevel,
            d.riskScore === null ? null : String(d.riskScore),
            final,
            d.rejectionReasons ? JSON.stringify(d.rejectionReasons) : null,
            d.document ? JSON.stringify(d.document) : null,
            submitted,
            reviewed,
            d.at,
          ],
        );
      }
    }
  },
};

/** Sessions, for checking a bearer token's session on every request. */
export const sessionsProjection: Projection = {
  name: 'sessions',
  version: 1,
  tables: ['rm_sessions'],
  eventTypes: ['SessionStarted', 'SessionRefreshed', 'SessionRevoked'],
  createTables: (t) => `
    CREATE TABLE ${t.rm_sessions} (
      session_id  uuid PRIMARY KEY,
      user_id     uuid NOT NULL,
      partner_id  uuid NOT NULL,
      expires_at  timestamptz NOT NULL,
      revoked_at  timestamptz,
      revoked_reason text,
      started_at  timestamptz NOT NULL
    );
    CREATE INDEX ${t.rm_sessions}_user ON ${t.rm_sessions} (user_id);`,
  async apply(tx, events, t) {
    for (const recorded of events) {
      const e = { type: recorded.type, data: recorded.data } as SessionEvent;
      switch (e.type) {
        case 'SessionStarted':
          await tx.query(
            `INSERT INTO ${t.rm_sessions} (session_id, user_id, partner_id, expires_at, started_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
            [e.data.sessionId, e.data.userId, e.data.partnerId, e.data.expiresAt, e.data.at],
          );
          break;
        case 'SessionRefreshed':
          await tx.query(`UPDATE ${t.rm_sessions} SET expires_at = $2 WHERE session_id = $1`, [e.data.sessionId, e.data.expiresAt]);
          break;
        case 'SessionRevoked':
          await tx.query(`UPDATE ${t.rm_sessions} SET revoked_at = $2, revoked_reason = $3 WHERE session_id = $1`, [
            e.data.sessionId,
            e.data.at,
            e.data.reason,
          ]);
          break;
      }
    }
  },
};
