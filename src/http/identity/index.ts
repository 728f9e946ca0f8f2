/** Identity over HTTP: partner users, login, profiles, KYC, and the sandbox's identity routes. */
export { kycRoutes, StatusView } from './kyc';
export { loginRoutes } from './login';
export { partnerUserRoutes } from './partner-users';
export { privacyRoutes } from './privacy';
export { profileRoutes } from './profile';
export { sandboxIdentityRoutes } from './sandbox';
