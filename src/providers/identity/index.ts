/** Identity's providers: the identity verification port and its adapters, and email. */
export * from './port';
export * from './persona';
export * from './sandbox';
export * from './sandbox-page';
export * from './email/port';
export * from './email/sandbox';
export * from './email/smtp';
