import { expect } from 'chai';
import { accountDecider, assertAccount, available, userAccountDecider } from '../../src/domain/ledger/account';
import { DomainError } from '../../src/platform/decider';
import { limitsAt, NO_LIMITS_GRANTED } from '../../src/domain/ledger/account';
import type { KycEvent } from '../../src/domain/identity/kyc';
import { fixed } from '../../src/domain/ledger/money';
import { decideTransfer, decideTransfers } from '../../src/domain/ledger/transfer';
import { AT, account, credited, kindCodeAndMessage, kyc, limits, opened, refusal, ROOMY, transferRequest, withCredits } from './ledger-support';
import { bucketMapOf } from '../../src/platform/bucket-map';

const request = transferRequest;
const ada = () => withCredits(account(opened(7)), account(credited(7, '100')));
const bob = account(opened(8, 'bob'));

describe('a transfer, decided', () => {
  it('debits the source, credits the destination and records a COMPLETED transaction, for the same amount', () => {
    const decided = decideTransfer(ada(), request(), { destination: bob, limits: ROOMY });
    expect(decided.debit).to.deep.equal([
      { type: 'FundsDebited', data: { accountId: 7, transactionId: 't-1', amount: '25.00000000', reason: 'transfer', pending: false, at: AT } },
    ]);
    expect(decided.credit).to.deep.equal([
      { type: 'FundsCredited', data: { accountId: 8, transactionId: 't-1', amount: '25.00000000', reason: 'transfer', at: AT } },
    ]);
    expect(decided.transaction).to.have.length(1);
    expect(decided.transaction[0]?.data).to.include({
      uuid: 't-1',
      id: 41,
      kind: 'TRANSFER',
      status: 'COMPLETED',
      amount: '25.00000000',
      debitAccountId: 7,
      creditAccountId: 8,
    });
  });

  const refusals: Array<[string, () => unknown, [string, string, string]]> = [
    [
      'to the same account',
      () => decideTransfer(ada(), request({ toAccountId: 7 }), { destination: ada(), limits: ROOMY }),
      ['invalid', 'same_account_transfer', 'Cannot transfer to the same account'],
    ],
    [
      'to an account that does not exist',
      () => decideTransfer(ada(), request({ toAccountId: 9 }), { destination: account(), limits: ROOMY }),
      ['invalid', 'accounts_not_found', 'One or both accounts do not exist'],
    ],
    [
      "to another partner's account",
      () => decideTransfer(ada(), request(), { destination: account(opened(8, 'eve', 'globex')), limits: ROOMY }),
      ['invalid', 'accounts_not_found', 'One or both accounts do not exist'],
    ],
    [
      "out of another partner's account",
      () => decideTransfer(withCredits(account(opened(7, 'ada', 'globex')), account(credited(7, '100'))), request(), { destination: bob, limits: ROOMY }),
      ['invalid', 'accounts_not_found', 'One or both accounts do not exist'],
    ],
    [
      "out of another user's account",
      () => decideTransfer(ada(), request({ userId: 'bob' }), { destination: bob, limits: ROOMY }),
      ['forbidden', 'account_of_another_user', 'Account does not belong to the authenticated user'],
    ],
    [
      'over the balance',
      () => decideTransfer(ada(), request({ amount: '100.00000001' }), { destination: bob, limits: ROOMY }),
      ['invalid', 'insufficient_balance', 'Insufficient balance in account 7'],
    ],
    [
      'over the maximum per transaction',
      () => decideTransfer(ada(), request({ amount: '50.5' }), { destination: bob, limits: limits('50', '1000') }),
      ['invalid', 'amount_exceeds_maximum', 'Amount exceeds maximum transaction amount of 50'],
    ],
    [
      'over the daily limit',
      () => decideTransfer(ada(), request({ amount: '30' }), { destination: bob, limits: limits('50', '20') }),
      ['invalid', 'daily_limit_exceeded', 'Daily transaction limit exceeded'],
    ],
    [
      'before KYC is approved (no limits granted)',
      () => decideTransfer(ada(), request(), { destination: bob, limits: limitsAt(kyc(), AT, ROOMY) }),
      ['invalid', 'amount_exceeds_maximum', 'Amount exceeds maximum transaction amount of 0'],
    ],
  ];
  for (const [name, fn, expected] of refusals) it(`is refused ${name}`, () => expect(kindCodeAndMessage(refusal(fn))).to.deep.equal(expected));

  it('spends the whole balance, to the last unit', () => {
    const decided = decideTransfer(ada(), request({ amount: '100' }), { destination: bob, limits: ROOMY });
    expect(fixed(available(decided.debit.reduce(accountDecider.evolve, ada())))).to.equal('0.00000000');
  });
});

describe('transfers out of one account, decided as a batch', () => {
  it('decides each on what the accepted ones before it left: the one that would overdraw is refused alone', () => {
    const asks = ['60', '50', '40'].map((amount, i) => ({ request: request({ uuid: `t-${i}`, amount }), facts: { destination: bob, limits: ROOMY } }));
    const { outcomes, state } = decideTransfers(ada(), asks);
    expect(outcomes.map((o) => (o instanceof DomainError ? o.message : 'accepted'))).to.deep.equal([
      'accepted',
      'Insufficient balance in account 7',
      'accepted',
    ]);
    expect(fixed(available(state))).to.equal('0.00000000');
  });

  it('counts the batch to the daily limit, in order', () => {
    const asks = ['15', '10', '5'].map((amount, i) => ({
      request: request({ uuid: `t-${i}`, amount }),
      facts: { destination: bob, limits: limits('50', '20') },
    }));
    const { outcomes } = decideTransfers(ada(), asks);
    expect(outcomes.map((o) => (o instanceof DomainError ? o.message : 'accepted'))).to.deep.equal([
      'accepted',
      'Daily transaction limit exceeded',
      'accepted',
    ]);
  });
});

describe('the limits a user moves money under, from their KYC stream', () => {
  const started: KycEvent = {
    type: 'KycVerificationStarted',
    data: {
      userId: 'ada',
      verificationId: 'v1',
      inquiryId: 'inq',
      provider: 'sandbox',
      verificationUrl: 'u',
      verificationLevel: 'basic',
      at: '2026-01-01T00:00:00.000Z',
    },
  };
  const moved = (from: string, to: string, at: string): KycEvent =>
    ({
      type: 'KycStatusChanged',
      data: {
        userId: 'ada',
        verificationId: 'v1',
        inquiryId: 'inq',
        from,
        to,
        riskLevel: null,
        riskScore: null,
        rejectionReasons: null,
        document: null,
        source: 't',
        at,
      },
    }) as KycEvent;

  it('are none before an approval, the approved ones for a year after it, and none once it expired', () => {
    expect(limitsAt(kyc(), AT, ROOMY)).to.equal(NO_LIMITS_GRANTED);
    expect(limitsAt(kyc(started, moved('created', 'completed', '2026-01-02T00:00:00.000Z')), AT, ROOMY)).to.equal(NO_LIMITS_GRANTED);
    const approved = kyc(started, moved('created', 'approved', '2026-01-02T00:00:00.000Z'));
    expect(limitsAt(approved, AT, ROOMY)).to.equal(ROOMY);
    expect(limitsAt(approved, '2027-01-02T00:00:00.001Z', ROOMY)).to.equal(NO_LIMITS_GRANTED);
    expect(limitsAt(kyc(started, moved('created', 'declined', '2026-01-02T00:00:00.000Z')), AT, ROOMY)).to.equal(NO_LIMITS_GRANTED);
  });
});

describe('account invariants, asserted after every decision that moves money', () => {
  it('hold for a consistent account, and throw (a bug, not a refusal) for an overdrawn one or holds that are not its pending debits', () => {
    expect(() => assertAccount(ada())).not.to.throw();
    expect(() => assertAccount({ ...ada(), debitsPosted: ada().creditsPosted.plus('0.00000001') })).to.throw(/Invariant violated: an account is not overdrawn/);
    expect(() => assertAccount({ ...ada(), holds: bucketMapOf({ p: '1.00000000' }) })).to.throw(/holds sum to its pending debits/);
  });
});

describe('an account, opened once per user', () => {
  it('refuses a second opening of the account, and a second account of the user', () => {
    const open = { type: 'OpenAccount' as const, accountId: 7, userId: 'ada', partnerId: 'acme', at: AT };
    expect(kindCodeAndMessage(refusal(() => accountDecider.decide(open, account(opened(7)))))).to.deep.equal([
      'conflict',
      'account_already_opened',
      'Account already opened',
    ]);
    const reserved = userAccountDecider.evolve(userAccountDecider.initialState(), { type: 'UserAccountReserved', data: { userId: 'ada', accountId: 7 } });
    expect(kindCodeAndMessage(refusal(() => userAccountDecider.decide({ type: 'Reserve', userId: 'ada', accountId: 8 }, reserved)))).to.deep.equal([
      'conflict',
      'user_already_has_account',
      'The user already has an account',
    ]);
  });

  it('moves nothing on an account never opened', () => {
    const credit = { type: 'Credit' as const, transactionId: 't-9', amount: '1', reason: 'deposit' as const, at: AT };
    expect(kindCodeAndMessage(refusal(() => accountDecider.decide(credit, account())))).to.deep.equal(['not_found', 'account_not_found', 'Account not found']);
  });
});
