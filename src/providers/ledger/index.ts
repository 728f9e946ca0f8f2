/** The ledger's providers: payments, payouts and rates, each a port and its adapters. */
export * from './payments/port';
export * from './payments/mock';
export * from './payouts/port';
export * from './payouts/mock';
export * from './rates/port';
export * from './rates/table';
