import type { Tally } from '../tally';
import { LedgerAccounts } from './accounts';
import { Deposits } from './deposits';
import { IdempotencyKeys } from './idempotency';
import { Payouts } from './payouts';
import { LedgerReads, ledgerScope } from './reads';
import { Transfers } from './transfers';

export { type AccountRow, LedgerProviderFailure } from './accounts';
export type { PayoutAnswer, PayoutInput } from './payouts';
export type { TransactionView } from './reads';

/** The ledger's application services, one per kind of movement, over shared account access. */
export class LedgerService {
  readonly accounts: LedgerAccounts;
  readonly transfers: Transfers;
  readonly deposits: Deposits;
  readonly payouts: Payouts;
  readonly reads: LedgerReads;

  constructor(private readonly tally: Tally) {
    this.accounts = new LedgerAccounts(tally);
    const keys = new IdempotencyKeys();
    this.transfers = new Transfers(tally, this.accounts, keys);
    this.deposits = new Deposits(tally, this.accounts, keys);
    this.payouts = new Payouts(tally, this.accounts);
    this.reads = new LedgerReads(tally);
  }

  /** Before a read of the ledger read model: waits (bounded) for the partner's last transfers to be in it. */
  async caughtUp(partnerId: string): Promise<void> {
    await this.tally.readAfterWrites(ledgerScope(partnerId), ['ledger']);
  }
}
