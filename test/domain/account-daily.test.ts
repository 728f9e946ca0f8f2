import { money } from '../../src/domain/ledger/money';
import { type AccountEvent, accountDecider } from '../../src/domain/ledger/account';
import { deciderSpec } from './spec';

const limits = { maxTransactionAmount: money('100'), dailyTransactionLimit: money('100') };
const opened: AccountEvent = {
  type: 'AccountOpened',
  data: { accountId: 7, userId: 'u', partnerId: 'p', asset: 'USDC', type: 'LIABILITY', at: '2026-11-24T09:00:00.000Z' },
};
const credited: AccountEvent = {
  type: 'FundsCredited',
  data: { accountId: 7, transactionId: 'c', amount: '1000.00000000', reason: 'deposit', at: '2026-11-24T09:00:00.000Z' },
};
const held = (transactionId: string, amount: string, at: string): AccountEvent => ({
  type: 'FundsDebited',
  data: { accountId: 7, transactionId, amount, reason: 'payout', pending: true, at },
});
const returned = (transactionId: string, amount: string, at: string, returnedDay: string): AccountEvent => ({
  type: 'HoldPosted',
  data: { accountId: 7, transactionId, amount, at, returnedDay },
});
const debit = (amount: string, at: string) => ({ type: 'Debit' as const, transactionId: 't', amount, reason: 'transfer' as const, pending: false, at, limits });
const debited = (amount: string, at: string): AccountEvent => ({
  type: 'FundsDebited',
  data: { accountId: 7, transactionId: 't', amount, reason: 'transfer', pending: false, at },
});

describe('the daily limit and money that came back', () => {
  const spec = deciderSpec(accountDecider);

  it('a failed payout returned the same day no longer counts to that day', () => {
    spec
      .given([
        opened,
        credited,
        held('p1', '100.00000000', '2026-11-25T10:00:00.000Z'),
        returned('p1', '100.00000000', '2026-11-25T11:00:00.000Z', '2026-11-25'),
      ])
      .when(debit('100', '2026-11-25T12:00:00.000Z'))
      .then([debited('100.00000000', '2026-11-25T12:00:00.000Z')]);
  });

  it("a payout debited yesterday and returned today does not lower today's total", () => {
    spec
      .given([
        opened,
        credited,
        held('p1', '60.00000000', '2026-11-24T23:00:00.000Z'),
        debited('60.00000000', '2026-11-25T08:00:00.000Z'),
        returned('p1', '60.00000000', '2026-11-25T09:00:00.000Z', '2026-11-24'),
      ])
      .when(debit('40.00000001', '2026-11-25T12:00:00.000Z'))
      .thenThrows('invalid', 'Daily transaction limit exceeded');
  });

  it('a hold posted because the payout settled still counts', () => {
    spec
      .given([
        opened,
        credited,
        held('p1', '100.00000000', '2026-11-25T10:00:00.000Z'),
        { type: 'HoldPosted', data: { accountId: 7, transactionId: 'p1', amount: '100.00000000', at: '2026-11-25T11:00:00.000Z' } },
      ])
      .when(debit('0.00000001', '2026-11-25T12:00:00.000Z'))
      .thenThrows('invalid', 'Daily transaction limit exceeded');
  });
});
