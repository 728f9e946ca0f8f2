import { refusal } from '../../platform/refusals';

/**
 * The identity capability's refusals (partners, users, profiles, KYC, login, sessions): each its
 * stable code, kind (hence status) and exact message. The messages are a contract (docs/decisions.md).
 */
export const IDENTITY_REFUSALS = {
  // Partners (operator routes)
  partnerExists: refusal('partner_exists', 'conflict', 'Partner already exists'),
  partnerNameEmpty: refusal('partner_name_empty', 'invalid', 'name must not be empty', { param: 'name' }),
  partnerNotFound: refusal('partner_not_found', 'not_found', 'Partner not found'),
  apiKeyLimitReached: refusal('api_key_limit_reached', 'conflict', (max: string) => `A partner may hold at most ${max} active keys; revoke one first`, ['max']),
  apiKeyNotFound: refusal('api_key_not_found', 'not_found', 'API key not found'),

  // Users
  userExists: refusal('user_exists', 'conflict', 'User already exists'),
  userNotFound: refusal('user_not_found', 'not_found', 'User not found'),
  userOfAnotherPartner: refusal('user_of_another_partner', 'forbidden', 'User does not belong to this partner'),
  emailTaken: refusal('email_taken', 'conflict', 'User with this email already exists', { param: 'email' }),
  userBanned: refusal('user_banned', 'conflict', 'User is banned'),
  bannedUserNotReinstatable: refusal('banned_user_not_reinstatable', 'conflict', 'A banned user cannot be reinstated'),
  userNotSuspended: refusal('user_not_suspended', 'conflict', (status: string) => `User is not suspended (status ${status})`, ['status']),
  /** Login and refresh: only an active user gets tokens (401). */
  userNotActive: refusal('user_not_active', 'unauthenticated', (status: string) => `User account is ${status}`, ['status']),
  /** A suspended or banned user starts no identity verification (409). */
  userMayNotVerify: refusal('user_suspended_or_banned', 'conflict', (status: string) => `User account is ${status}`, ['status']),
  /** Erasure: money is left on one of the user's accounts (credits != debits). */
  userHasBalance: refusal('user_has_balance', 'conflict', 'User has a non-zero balance'),
  /** Erasure: a deposit, payout or card hold of the user is not settled yet. */
  userHasPendingTransactions: refusal('user_has_pending_transactions', 'conflict', 'User has pending transactions'),

  // Profiles
  profileExists: refusal('profile_exists', 'conflict', (userId: string) => `PersonalProfile already exists: ${userId}`, ['userId']),
  profileNotFound: refusal('profile_not_found', 'not_found', (userId: string) => `PersonalProfile not found: ${userId}`, ['userId']),
  dateOfBirthInvalid: refusal('date_of_birth_invalid', 'invalid', 'dateOfBirth must be a real date in YYYY-MM-DD format', { param: 'dateOfBirth' }),
  dateOfBirthInFuture: refusal('date_of_birth_in_future', 'invalid', 'dateOfBirth must be in the past', { param: 'dateOfBirth' }),
  userUnderAge: refusal('user_under_age', 'invalid', (years: string) => `dateOfBirth: the user must be at least ${years} years old`, ['years'], {
    param: 'dateOfBirth',
  }),
  verifiedFieldsLocked: refusal('verified_fields_locked', 'conflict', (fields: string) => `Verified identity fields cannot be changed: ${fields}`, ['fields']),

  // KYC
  kycInProgress: refusal('kyc_in_progress', 'conflict', 'KYC already in progress'),
  kycFinalized: refusal('kyc_finalized', 'unprocessable', (status: string) => `KYC already finalized with status: ${status}`, ['status']),
  kycNotFound: refusal('kyc_not_found', 'not_found', (userId: string) => `KycVerification not found: ${userId}`, ['userId']),
  /** A provider's callback names an inquiry no verification of ours has. */
  unknownInquiry: refusal('unknown_inquiry', 'not_found', (inquiryId: string) => `Unknown inquiry ${inquiryId}`, ['inquiryId']),
  /** The sandbox's inquiry routes: none of that id, or not the partner's. */
  inquiryNotFound: refusal('inquiry_not_found', 'not_found', 'Inquiry not found'),
  /** The sandbox: a decided inquiry asked for another outcome. */
  inquiryDecided: refusal('inquiry_already_decided', 'conflict', (inquiryId: string, status: string) => `Sandbox inquiry ${inquiryId} is already ${status}`, [
    'inquiryId',
    'status',
  ]),

  // Login and sessions
  invalidLoginCode: refusal('invalid_login_code', 'unauthenticated', 'Invalid or expired code'),
  /** A refresh token that names no live session of the partner, or not its current (or a spent) token. */
  refreshTokenInvalid: refusal('refresh_token_invalid', 'unauthenticated', 'Invalid or expired token'),
  sessionExists: refusal('session_exists', 'conflict', 'Session already exists'),
  loginDeprecated: refusal('login_deprecated', 'gone', 'This endpoint is deprecated. Use /api/v1/partner/auth/send and /api/v1/partner/auth/verify'),
} as const;
