/** The ledger read model: its fold (fold.ts) and the queries the routes read it with (queries.ts). */
export { ledgerProjection } from './fold';
export { type AccountRow, createdView, LedgerQueries, type PaymentOf, type TransactionView } from './queries';
