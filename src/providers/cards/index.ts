/** Cards' provider: the card issuer port, its adapters and the sandbox's vault. */
export * from './port';
export * from './rain';
export * from './sandbox';
export * from './vault';
