/** The ledger over HTTP: accounts, deposits, transfers, payouts, transactions, exchange, and the sandbox's ledger routes. */
export { exchangeRoutes } from './exchange';
export {
  Account,
  AmountField,
  asNumber,
  IdempotencyHeader,
  idempotencyKeyOf,
  ledgerRoutes,
  REPLAYED,
  requireAmount,
  Transaction,
  TransactionListItem,
} from './routes';
export { SandboxReasonBody, sandboxLedgerRoutes } from './sandbox';
