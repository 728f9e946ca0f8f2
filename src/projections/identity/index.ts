/** Identity's read models: partners, users, profiles, KYC verifications and sessions (their folds), and the queries they are read with (queries.ts). */
export { partnersProjection } from './partners';
export { kycProjection, profilesProjection, sessionsProjection } from './profiles-kyc-sessions';
export { usersProjection } from './users';
export {
  holderJoin,
  IdentityQueries,
  KycQueries,
  PartnerQueries,
  type PartnerRecord,
  ProfileQueries,
  type ProfileView,
  SessionQueries,
  type StoredKey,
  type UserListQuery,
  UserQueries,
  type UserRecord,
  type UserRecordOrErased,
  type UserSummary,
  type VerificationRow,
} from './queries';
