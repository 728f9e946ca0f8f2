import { expect } from 'chai';
import { type AccountEvent, type AccountState, accountDecider, withCredits } from '../../src/domain/ledger/account';
import { DomainError } from '../../src/platform/decider';
import type { KycEvent, KycState } from '../../src/domain/identity/kyc';
import { kycDecider } from '../../src/domain/identity/kyc';
import { money } from '../../src/domain/ledger/money';
import { type TransactionEvent, type TransactionState, transactionDecider } from '../../src/domain/ledger/transaction';

/** Given these events, the state: what the decision functions are handed. */
export const account = (...events: AccountEvent[]): AccountState => events.reduce(accountDecider.evolve, accountDecider.initialState());
export const transaction = (...events: TransactionEvent[]): TransactionState => events.reduce(transactionDecider.evolve, transactionDecider.initialState());
export const kyc = (...events: KycEvent[]): KycState => events.reduce(kycDecider.evolve, kycDecider.initialState());
export { withCredits };

export const DAY = '2026-11-25';
export const AT = `${DAY}T12:00:00.000Z`;
export const limits = (max: string, daily: string) => ({ maxTransactionAmount: money(max), dailyTransactionLimit: money(daily) });
export const ROOMY = limits('10000', '50000');

export const opened = (accountId: number, userId = 'ada', partnerId = 'acme'): AccountEvent => ({
  type: 'AccountOpened',
  data: { accountId, userId, partnerId, asset: 'USDC', type: 'LIABILITY', at: '2026-11-01T00:00:00.000Z' },
});
export const credited = (accountId: number, amount: string, transactionId = 'seed'): AccountEvent => ({
  type: 'FundsCredited',
  data: { accountId, transactionId, amount, reason: 'deposit', at: '2026-11-01T00:00:00.000Z' },
});

/** The DomainError `fn` throws (fails the test when it throws nothing, or something else). */
export function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    return error as DomainError;
  }
  expect.fail('expected a refusal');
}

export const kindAndMessage = (error: unknown) => {
  expect(error).to.be.instanceOf(DomainError);
  return [(error as DomainError).kind, (error as DomainError).message];
};
