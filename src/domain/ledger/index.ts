/** The ledger's deciders: accounts, money, limits, deposits, transfers, payouts, transactions. */
export * from './account';
export * from './deposit';
export * from './money';
export * from './payout';
export * from './transaction';
export * from './transfer';
export * from './refusals';
