import type { LedgerQueries } from '../../projections/ledger';
import type { Config } from '../../config';
import type { Sql } from '../../eventstore/sql';
import type { Logger } from 'pino';
import { LedgerAccounts } from './accounts';
import { Deposits, type DepositsDeps } from './deposits';
import { approvedLimits, TransactionIds } from './facts';
import { IdempotencyKeys } from './idempotency';
import { Payouts, type PayoutsDeps } from './payouts';
import { Transfers, type TransfersDeps } from './transfers';

export type { AccountRow, TransactionView } from '../../projections/ledger';
export type { PayoutAnswer, PayoutInput } from './payouts';
export { PAYOUT_REFUSED } from './payouts';
export { LedgerProviderFailure } from './provider-failure';
export * from './facts';
export * from './idempotency';

/** What the ledger's services are built from: the platform's ports and the providers money moves through. */
export type LedgerServiceDeps = DepositsDeps &
  PayoutsDeps &
  TransfersDeps & {
    sql: Sql;
    log: Logger;
    config: Pick<Config, 'kycLimits'>;
    ledgerQueries: LedgerQueries;
  };

/** The ledger's application services, one per kind of movement. */
export class LedgerService {
  readonly accounts: LedgerAccounts;
  readonly transfers: Transfers;
  readonly deposits: Deposits;
  readonly payouts: Payouts;
  readonly reads: LedgerQueries;
  /** Ledger transaction numbers, for every movement (card spends too). */
  readonly ids: TransactionIds;
  /** The one in-flight tracker of every keyed command: transfers, deposits, payouts and card calls. */
  readonly keys: IdempotencyKeys;

  constructor(deps: LedgerServiceDeps) {
    this.accounts = new LedgerAccounts(deps);
    const ids = new TransactionIds(deps.sql, deps.log);
    const keys = new IdempotencyKeys();
    this.ids = ids;
    this.keys = keys;
    const limits = approvedLimits(deps.config);
    this.transfers = new Transfers(deps, ids, keys, limits);
    this.deposits = new Deposits(deps, ids, keys);
    this.payouts = new Payouts(deps, ids, keys, limits);
    this.reads = deps.ledgerQueries;
  }
}
