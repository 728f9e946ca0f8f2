import { expect } from 'chai';
import { type AccountEvent, type AccountState, accountDecider, withCredits } from '../../src/domain/ledger/account';
import { DomainError } from '../../src/platform/decider';
import type { KycEvent, KycState } from '../../src/domain/identity/kyc';
import { kycDecider } from '../../src/domain/identity/kyc';
import type { DepositRequest } from '../../src/domain/ledger/deposit';
import { money } from '../../src/domain/ledger/money';
import type { PayoutRequest } from '../../src/domain/ledger/payout';
import type { TransferRequest } from '../../src/domain/ledger/transfer';
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

/** A refusal as a client meets it: its kind (hence status), its stable code and its exact message. */
export const kindCodeAndMessage = (error: unknown) => {
  expect(error).to.be.instanceOf(DomainError);
  return [(error as DomainError).kind, (error as DomainError).code, (error as DomainError).message];
};

/** Ada's transfer of 25 from account 7 to account 8, as the ledger's tests ask it; `over` changes a field. */
export const transferRequest = (over: Partial<TransferRequest> = {}): TransferRequest => ({
  uuid: 't-1',
  id: 41,
  userId: 'ada',
  partnerId: 'acme',
  fromAccountId: 7,
  toAccountId: 8,
  amount: '25',
  description: 'rent',
  requestHash: null,
  at: AT,
  ...over,
});

/** Ada's deposit of 25 to account 7 through the mock provider; `over` changes a field. */
export const depositRequest = (over: Partial<DepositRequest> = {}): DepositRequest => ({
  uuid: 'd-1',
  id: 5,
  userId: 'ada',
  partnerId: 'acme',
  toAccountId: 7,
  amount: '25',
  currency: 'USDC',
  description: 'top up',
  requestHash: null,
  payment: { provider: 'mock', paymentId: 'pay-1', payerDocumentType: 'CC' },
  at: AT,
  ...over,
});

/** Ada's payout of 40,000 COP from account 7 through the mock provider; `over` changes a field. */
export const payoutRequest = (over: Partial<PayoutRequest> = {}): PayoutRequest => ({
  uuid: 'p-1',
  id: 9,
  userId: 'ada',
  partnerId: 'acme',
  accountId: 7,
  amount: '40000',
  asset: 'COP',
  provider: 'mock',
  requestHash: 'h1',
  handOver: {},
  at: AT,
  ...over,
});
