/** Identity's use cases, as the other capabilities and the HTTP layer take them. */
export { KycService, type KycServiceDeps, ProviderFailure } from './kyc';
export { type LoginResult, LoginService, type LoginServiceDeps, SEND_MESSAGE, TooManySends } from './login';
export { type PartnerRecord, PartnerService, type PartnerServiceDeps } from './partners';
export { ProfileService, type ProfileServiceDeps, type ProfileView } from './profiles';
export { TooManySecretChecks } from './secret-checks';
export { SessionGate } from './session-gate';
export { type AccessClaims, TokenService } from './tokens';
export { type ErasedUser, type ErasureDeps, UserErasure } from './erasure';
export { emailStream, summary, type UserListQuery, type UserRecord, UserService, type UserServiceDeps, type UserSummary } from './users';
