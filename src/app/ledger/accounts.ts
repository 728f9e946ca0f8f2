import { type AccountState, accountCreditStream, accountDecider, accountStream, requireOwnAccount, withCredits } from '../../domain/accounts/account';
import { fixed, money } from '../../domain/ledger/money';
import { type Loaded, load } from '../commands';
import type { Tally } from '../tally';

export interface AccountRow {
  id: number;
  asset: string;
  type: string;
  credits: string;
  debits: string;
}

/** The user's accounts as the routes show them. */
export class LedgerAccounts {
  constructor(private readonly tally: Tally) {}

  async accountsOf(userId: string): Promise<AccountRow[]> {
    const rows = await this.tally.sql.query<{ account_id: string; asset: string; type: string; credits: string; debits: string }>(
      'SELECT account_id::text, asset, type, credits::text, debits::text FROM rm_accounts WHERE user_id = $1 ORDER BY account_id',
      [userId],
    );
    return rows.map((r) => ({ id: Number(r.account_id), asset: r.asset, type: r.type, credits: fixed(money(r.credits)), debits: fixed(money(r.debits)) }));
  }

  /** An account the token user may act on (404 unknown or another partner's, 403 another user's), from its stream. */
  async ownAccount(userId: string, partnerId: string, accountId: number): Promise<number> {
    const { state } = await load(this.tally.store, accountStream(accountId), accountDecider, { cache: this.tally.stateCache });
    return requireOwnAccount(state, { userId, partnerId });
  }

  /** A balance as it was at an instant, folded from the account's streams (not a read model). */
  async balanceAt(accountId: number, at: Date): Promise<{ credits: string; debits: string }> {
    const [main, credits] = await Promise.all(
      [accountStream(accountId), accountCreditStream(accountId)].map((stream) => load(this.tally.store, stream, accountDecider, { untilTime: at })),
    );
    const state = withCredits((main as Loaded<AccountState>).state, (credits as Loaded<AccountState>).state);
    return { credits: fixed(state.creditsPosted), debits: fixed(state.debitsPosted.plus(state.debitsPending)) };
  }
}
