import { type AccountState, accountCreditStream, accountDecider, accountStream, requireOwnAccount, withCredits } from '../../domain/ledger/account';
import { fixed } from '../../domain/ledger/money';
import { type Loaded, load } from '../../platform/commands/commands';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../../platform/commands/commands';

export interface LedgerAccountsDeps {
  store: EventStore;
  stateCache: StateCache;
}

/** The write side's view of an account: who may act on it, and its balance at a past instant. */
export class LedgerAccounts {
  constructor(private readonly deps: LedgerAccountsDeps) {}

  /** An account the token user may act on (404 unknown or another partner's, 403 another user's), from its stream. */
  async ownAccount(userId: string, partnerId: string, accountId: number): Promise<number> {
    const { state } = await load(this.deps.store, accountStream(accountId), accountDecider, { cache: this.deps.stateCache });
    return requireOwnAccount(state, { userId, partnerId });
  }

  /** A balance as it was at an instant, folded from the account's streams (not a read model). */
  async balanceAt(accountId: number, at: Date): Promise<{ credits: string; debits: string }> {
    const [main, credits] = await Promise.all(
      [accountStream(accountId), accountCreditStream(accountId)].map((stream) => load(this.deps.store, stream, accountDecider, { untilTime: at })),
    );
    const state = withCredits((main as Loaded<AccountState>).state, (credits as Loaded<AccountState>).state);
    return { credits: fixed(state.creditsPosted), debits: fixed(state.debitsPosted.plus(state.debitsPending)) };
  }
}
