/** Identity's deciders: partners, users, profiles, KYC, login codes, sessions. */
export * from './kyc';
export * from './kyc-statuses';
export * from './login';
export * from './partner';
export * from './profile';
export * from './session';
export * from './user';
export * from './ownership';
export * from './refusals';
