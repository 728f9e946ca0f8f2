import { LedgerQueries } from '../../projections/ledger';
import type { Tally } from '../../compose/tally';
import { LedgerAccounts } from './accounts';
import { Deposits } from './deposits';
import { approvedLimits, TransactionIds } from './facts';
import { IdempotencyKeys } from './idempotency';
import { Payouts } from './payouts';
import { Transfers } from './transfers';

export type { AccountRow, TransactionView } from '../../projections/ledger';
export type { PayoutAnswer, PayoutInput } from './payouts';
export { LedgerProviderFailure } from './provider-failure';

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

  constructor(tally: Tally) {
    this.accounts = new LedgerAccounts(tally);
    const ids = new TransactionIds(tally.sql, tally.log);
    const keys = new IdempotencyKeys();
    this.ids = ids;
    this.keys = keys;
    const limits = approvedLimits(tally.config);
    this.transfers = new Transfers(tally, ids, keys, limits);
    this.deposits = new Deposits(tally, ids, keys);
    this.payouts = new Payouts(tally, ids, keys, limits);
    this.reads = new LedgerQueries(tally.sql);
  }
}
