import { DomainError, type Decider } from '../decider';

/**
 * The user's USDC account: opened once, at the first successful login. The ledger builds balances
 * on this stream; here it is only opened.
 */
export const ACCOUNT_ASSET = 'USDC';
export const ACCOUNT_TYPE = 'LIABILITY';

export type AccountEvent = {
  type: 'AccountOpened';
  data: { accountId: number; userId: string; partnerId: string; asset: string; type: string; at: string };
};

/** One per user, appended with "no stream": two concurrent first logins cannot open two accounts. */
export type AccountReservationEvent = { type: 'UserAccountReserved'; data: { userId: string; accountId: number } };

export type AccountCommand = { type: 'OpenAccount'; accountId: number; userId: string; partnerId: string; at: string };

export interface AccountState {
  opened: boolean;
  accountId: number | null;
  userId: string | null;
}

export const accountStream = (accountId: number) => `account-${accountId}`;
export const userAccountStream = (userId: string) => `useraccount-${userId}`;

export const accountDecider: Decider<AccountState, AccountCommand, AccountEvent> = {
  initialState: () => ({ opened: false, accountId: null, userId: null }),
  evolve(state, event) {
    switch (event.type) {
      case 'AccountOpened':
        return { ...state, opened: true, accountId: event.data.accountId, userId: event.data.userId };
    }
  },
  decide(command, state) {
    if (state.opened) throw new DomainError('conflict', 'Account already opened');
    return [
      {
        type: 'AccountOpened',
        data: { accountId: command.accountId, userId: command.userId, partnerId: command.partnerId, asset: ACCOUNT_ASSET, type: ACCOUNT_TYPE, at: command.at },
      },
    ];
  },
};
