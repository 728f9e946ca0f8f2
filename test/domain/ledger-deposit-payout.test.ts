import { expect } from 'chai';
import { decideDeposit, decidePaymentVerdict } from '../../src/domain/ledger/deposit';
import { decidePayout, decidePayoutFailed, decidePayoutSettled, type PayoutFacts, payoutStatusAtAcceptance } from '../../src/domain/ledger/payout';
import { type TransactionEvent, transactionDecider } from '../../src/domain/ledger/transaction';
import { deciderSpec } from './spec';
import {
  AT,
  account,
  credited,
  DAY,
  kindCodeAndMessage,
  limits,
  opened,
  refusal,
  ROOMY,
  transaction,
  withCredits,
  depositRequest,
  payoutRequest,
} from './ledger-support';

/** Status moves as [to, reason]. */
const moves = (events: TransactionEvent[]) => events.map((e) => (e.type === 'TransactionStatusChanged' ? [e.data.to, e.data.reason] : [e.type]));

const ada = () => withCredits(account(opened(7)), account(credited(7, '100')));

describe('a deposit, decided', () => {
  const ask = depositRequest;

  it('is a PENDING transaction that credits nothing yet', () => {
    const events = decideDeposit(ada(), ask());
    expect(events).to.have.length(1);
    expect(events[0]?.data).to.deep.include({ kind: 'DEPOSIT', status: 'PENDING', amount: '25.00000000', debitAccountId: null, creditAccountId: 7 });
    expect(events[0]?.data).to.have.nested.property('details.paymentId', 'pay-1');
  });

  it('is refused in another currency, to an unknown or foreign account, and to another user’s', () => {
    expect(kindCodeAndMessage(refusal(() => decideDeposit(ada(), ask({ currency: 'COP' }))))).to.deep.equal([
      'invalid',
      'currency_mismatch',
      'currency must match the account asset (USDC)',
    ]);
    expect(kindCodeAndMessage(refusal(() => decideDeposit(account(), ask())))).to.deep.equal(['not_found', 'account_not_found', 'Account not found']);
    expect(kindCodeAndMessage(refusal(() => decideDeposit(ada(), ask({ partnerId: 'globex' }))))).to.deep.equal([
      'not_found',
      'account_not_found',
      'Account not found',
    ]);
    expect(kindCodeAndMessage(refusal(() => decideDeposit(ada(), ask({ userId: 'bob' }))))).to.deep.equal([
      'forbidden',
      'account_of_another_user',
      'Account does not belong to the authenticated user',
    ]);
  });

  const pending = () => transaction(...(decideDeposit(ada(), ask()) as TransactionEvent[]));
  const verdict = (outcome: 'confirmed' | 'failed', amount = '25', currency = 'USDC') => ({ eventId: 'e1', outcome, amount, currency, at: AT });

  it('is completed and credited once the provider confirms the amount asked for; a second confirmation changes nothing', () => {
    const first = decidePaymentVerdict(pending(), ada(), verdict('confirmed', '25.000'));
    expect(first.transaction.map((e) => e.data)).to.deep.equal([
      { uuid: 'd-1', from: 'PENDING', to: 'COMPLETED', reason: null, details: { providerEventId: 'e1' }, at: AT },
    ]);
    expect(first.credit).to.deep.equal([
      { type: 'FundsCredited', data: { accountId: 7, transactionId: 'd-1', amount: '25.00000000', reason: 'deposit', at: AT } },
    ]);
    const completed = transaction(...(decideDeposit(ada(), ask()) as TransactionEvent[]), ...first.transaction);
    expect(decidePaymentVerdict(completed, ada(), verdict('confirmed'))).to.deep.equal({ transaction: [], credit: [] });
  });

  it('fails, crediting nothing, when the provider pays another amount or currency, or reports a failure', () => {
    for (const [v, reason] of [
      [verdict('confirmed', '24.99'), 'amount_mismatch'],
      [verdict('confirmed', '25', 'EUR'), 'amount_mismatch'],
      [verdict('failed'), 'payment_failed'],
    ] as const) {
      const decided = decidePaymentVerdict(pending(), ada(), v);
      expect(moves(decided.transaction)).to.deep.equal([['FAILED', reason]]);
      expect(decided.credit).to.deep.equal([]);
    }
  });

  it('is not found for a transaction that is not a deposit', () => {
    expect(kindCodeAndMessage(refusal(() => decidePaymentVerdict(transaction(), ada(), verdict('confirmed'))))).to.deep.equal([
      'not_found',
      'transaction_not_found',
      'Transaction not found',
    ]);
  });
});

describe('a payout, decided', () => {
  const ask = payoutRequest;
  const facts = (over: Partial<PayoutFacts> = {}): PayoutFacts => ({ assetDecimals: 2, rate: '4000', providerKnown: true, limits: ROOMY, ...over });
  const held = () => {
    const d = decidePayout(transaction(), ada(), ask(), facts());
    if (d.kind !== 'held') throw new Error('expected a hold');
    return d;
  };

  it('holds the USDC the amount converts to (rounded up), on a PENDING payout', () => {
    const d = decidePayout(transaction(), ada(), ask({ amount: '40000.01' }), facts());
    expect(d.kind).to.equal('held');
    if (d.kind !== 'held') return;
    expect(d.debit).to.deep.equal([
      { type: 'FundsDebited', data: { accountId: 7, transactionId: 'p-1', amount: '10.00000250', reason: 'payout', pending: true, at: AT } },
    ]);
    expect(d.transaction[0]?.data).to.deep.include({ kind: 'PAYOUT', status: 'PENDING', amount: '10.00000250', debitAccountId: 7 });
  });

  it('refuses, without storing anything, what no rule can take: too many decimals, an unknown provider or asset', () => {
    expect(kindCodeAndMessage(refusal(() => decidePayout(transaction(), ada(), ask({ amount: '1.001' }), facts())))).to.deep.equal([
      'invalid',
      'amount_too_precise_for_asset',
      'amount must have at most 2 decimal places for COP',
    ]);
    expect(kindCodeAndMessage(refusal(() => decidePayout(transaction(), ada(), ask(), facts({ providerKnown: false }))))).to.deep.equal([
      'invalid',
      'unsupported_payout_provider',
      'Unsupported payout provider: mock',
    ]);
    expect(kindCodeAndMessage(refusal(() => decidePayout(transaction(), ada(), ask(), facts({ rate: null }))))).to.deep.equal([
      'invalid',
      'unsupported_asset',
      'Unsupported asset: COP',
    ]);
  });

  it('keeps a refusal for the balance or the limits under its key, so the same retry gets the same refusal', () => {
    const d = decidePayout(transaction(), ada(), ask({ amount: '400004' }), facts());
    expect(d.kind).to.equal('refused');
    if (d.kind !== 'refused') return;
    expect(kindCodeAndMessage(d.refusal)).to.deep.equal(['invalid', 'insufficient_balance', 'Insufficient balance in account 7']);
    const kept = transaction(...d.transaction);
    const again = decidePayout(kept, ada(), ask({ amount: '400004' }), facts());
    expect(again.kind === 'stored' && again.stored.kind === 'refused' && kindCodeAndMessage(again.stored.refusal)).to.deep.equal([
      'invalid',
      'insufficient_balance',
      'Insufficient balance in account 7',
    ]);
    const limited = decidePayout(transaction(), ada(), ask(), facts({ limits: limits('5', '100') }));
    expect(limited.kind === 'refused' && kindCodeAndMessage(limited.refusal)).to.deep.equal([
      'invalid',
      'amount_exceeds_maximum',
      'Amount exceeds maximum transaction amount of 5',
    ]);
    const daily = decidePayout(transaction(), ada(), ask(), facts({ limits: limits('100', '5') }));
    expect(daily.kind === 'refused' && kindCodeAndMessage(daily.refusal)).to.deep.equal([
      'invalid',
      'daily_limit_exceeded',
      'Daily transaction limit exceeded',
    ]);
  });

  it('gives a refusal kept before refusals had codes its code again, known by its message', () => {
    const rejected: TransactionEvent = {
      type: 'TransactionRejected',
      data: { uuid: 'p-1', requestHash: 'h1', status: 400, error: 'Daily transaction limit exceeded', userId: 'ada', at: AT },
    };
    const again = decidePayout(transaction(rejected), ada(), ask(), facts());
    expect(again.kind === 'stored' && again.stored.kind === 'refused' && kindCodeAndMessage(again.stored.refusal)).to.deep.equal([
      'invalid',
      'daily_limit_exceeded',
      'Daily transaction limit exceeded',
    ]);
  });

  it('answers the same request again with what is stored, and another request under the key with 409', () => {
    const txn = transaction(...held().transaction);
    expect(decidePayout(txn, ada(), ask(), facts())).to.deep.equal({ kind: 'stored', stored: { kind: 'held' } });
    const accepted = transaction(...held().transaction, ...transactionDecider.decide({ type: 'RecordAcceptance', paymentId: 'po-1', at: AT }, txn));
    expect(decidePayout(accepted, ada(), ask(), facts())).to.deep.equal({
      kind: 'stored',
      stored: { kind: 'accepted', paymentId: 'po-1', status: 'PROCESSING' },
    });
    for (const other of [ask({ requestHash: 'h2' }), ask({ userId: 'bob' })])
      expect(kindCodeAndMessage(refusal(() => decidePayout(accepted, ada(), other, facts())))).to.deep.equal([
        'conflict',
        'transaction_id_reused',
        'transactionId already used with different parameters',
      ]);
  });

  it('is PENDING while held and not taken by its provider, PROCESSING once taken, whatever status the provider reported', () => {
    const txn = transaction(...held().transaction);
    expect(txn.status).to.equal('PENDING');
    expect(payoutStatusAtAcceptance(txn)).to.equal('PENDING');
    const acceptance = transactionDecider.decide({ type: 'RecordAcceptance', paymentId: 'po-1', at: AT }, txn);
    expect(acceptance).to.deep.equal([{ type: 'PayoutAccepted', data: { uuid: 'p-1', paymentId: 'po-1', from: 'PENDING', to: 'PROCESSING', at: AT } }]);
    const taken = transaction(...held().transaction, ...acceptance);
    expect([taken.status, payoutStatusAtAcceptance(taken)]).to.deep.equal(['PROCESSING', 'PROCESSING']);
    // Settled before its acceptance was recorded: it stays COMPLETED, and its acceptance still answers PROCESSING.
    const settled = transaction(...held().transaction, ...transactionDecider.decide({ type: 'ChangeStatus', to: 'COMPLETED', reason: null, at: AT }, txn));
    const late = transaction(
      ...held().transaction,
      ...transactionDecider.decide({ type: 'ChangeStatus', to: 'COMPLETED', reason: null, at: AT }, txn),
      ...transactionDecider.decide({ type: 'RecordAcceptance', paymentId: 'po-1', at: AT }, settled),
    );
    expect([late.status, payoutStatusAtAcceptance(late)]).to.deep.equal(['COMPLETED', 'PROCESSING']);
  });

  it('is settled by its provider: COMPLETED and the hold posted, once', () => {
    const d = held();
    const heldAccount = withCredits(account(opened(7), ...d.debit), account(credited(7, '100')));
    const txn = transaction(...d.transaction);
    const settled = decidePayoutSettled(txn, heldAccount, { eventId: 'e9', at: AT });
    expect(moves(settled.transaction)).to.deep.equal([['COMPLETED', null]]);
    expect(settled.debit).to.deep.equal([{ type: 'HoldPosted', data: { accountId: 7, transactionId: 'p-1', amount: '10.00000000', at: AT } }]);
    expect(decidePayoutSettled(transaction(...d.transaction, ...settled.transaction), heldAccount, { eventId: 'e9', at: AT })).to.deep.equal({
      transaction: [],
      debit: [],
    });
  });

  it('is failed by its provider: FAILED, the hold posted as returned that day, and a REVERSED credit of its own, once', () => {
    const d = held();
    const heldAccount = withCredits(account(opened(7), ...d.debit), account(credited(7, '100')));
    const txn = transaction(...d.transaction);
    const failed = decidePayoutFailed(txn, heldAccount, { reason: 'bank_rejected', details: {}, at: AT, reversal: { uuid: 'r-1', id: 10 } });
    expect(moves(failed.transaction)).to.deep.equal([['FAILED', 'bank_rejected']]);
    expect(failed.debit).to.deep.equal([{ type: 'HoldPosted', data: { accountId: 7, transactionId: 'p-1', amount: '10.00000000', at: AT, returnedDay: DAY } }]);
    expect(failed.credit).to.deep.equal([
      { type: 'FundsCredited', data: { accountId: 7, transactionId: 'r-1', amount: '10.00000000', reason: 'payout_reversal', at: AT } },
    ]);
    expect(failed.reversal[0]?.data).to.deep.include({ uuid: 'r-1', kind: 'REVERSAL', status: 'REVERSED', creditAccountId: 7, amount: '10.00000000' });
    const again = decidePayoutFailed(transaction(...d.transaction, ...failed.transaction), heldAccount, {
      reason: 'x',
      details: {},
      at: AT,
      reversal: { uuid: 'r-1', id: 11 },
    });
    expect(again).to.deep.equal({ transaction: [], debit: [], credit: [], reversal: [] });
  });
});

describe('transaction statuses: only the moves of the interface', () => {
  const spec = deciderSpec(transactionDecider);
  const created = (kind: 'DEPOSIT' | 'TRANSFER' | 'PAYOUT', status: 'PENDING' | 'COMPLETED'): TransactionEvent => ({
    type: 'TransactionCreated',
    data: {
      uuid: 'x',
      id: 1,
      kind,
      status,
      amount: '1.00000000',
      debitAccountId: 1,
      creditAccountId: 2,
      description: '',
      userId: 'u',
      partnerId: 'p',
      requestHash: null,
      details: {},
      at: AT,
    },
  });
  const moved = (from: string, to: string): TransactionEvent =>
    ({ type: 'TransactionStatusChanged', data: { uuid: 'x', from, to, reason: null, details: {}, at: AT } }) as TransactionEvent;
  const change = (to: 'PROCESSING' | 'COMPLETED' | 'FAILED') => ({ type: 'ChangeStatus' as const, to, reason: null, at: AT });

  it('a deposit goes PENDING to COMPLETED or FAILED, and no further', () => {
    spec
      .given([created('DEPOSIT', 'PENDING')])
      .when(change('COMPLETED'))
      .then([moved('PENDING', 'COMPLETED')]);
    spec
      .given([created('DEPOSIT', 'PENDING')])
      .when(change('FAILED'))
      .then([moved('PENDING', 'FAILED')]);
    spec
      .given([created('DEPOSIT', 'PENDING')])
      .when(change('PROCESSING'))
      .thenNothingHappens();
    spec
      .given([created('DEPOSIT', 'PENDING'), moved('PENDING', 'COMPLETED')])
      .when(change('FAILED'))
      .thenNothingHappens();
  });

  it('a transfer is COMPLETED at once, for good', () => {
    spec
      .given([created('TRANSFER', 'COMPLETED')])
      .when(change('FAILED'))
      .thenNothingHappens();
  });

  it('a payout goes PENDING to PROCESSING, COMPLETED or FAILED, PROCESSING to COMPLETED or FAILED; final statuses stay', () => {
    spec
      .given([created('PAYOUT', 'PENDING')])
      .when(change('PROCESSING'))
      .then([moved('PENDING', 'PROCESSING')]);
    spec
      .given([created('PAYOUT', 'PENDING'), moved('PENDING', 'PROCESSING')])
      .when(change('COMPLETED'))
      .then([moved('PROCESSING', 'COMPLETED')]);
    spec
      .given([created('PAYOUT', 'PENDING'), moved('PENDING', 'PROCESSING')])
      .when(change('FAILED'))
      .then([moved('PROCESSING', 'FAILED')]);
    spec
      .given([created('PAYOUT', 'PENDING'), moved('PENDING', 'FAILED')])
      .when(change('COMPLETED'))
      .thenNothingHappens();
    spec
      .given([created('PAYOUT', 'PENDING'), moved('PENDING', 'COMPLETED')])
      .when(change('FAILED'))
      .thenNothingHappens();
  });

  it('a transaction is created once, and nothing moves one that does not exist', () => {
    spec
      .given([created('PAYOUT', 'PENDING')])
      .when({ type: 'Create', data: created('PAYOUT', 'PENDING').data as never })
      .thenThrows('conflict', 'Transaction already exists');
    spec.given([]).when(change('COMPLETED')).thenThrows('not_found', 'Transaction not found');
    const payout = transaction(created('PAYOUT', 'PENDING'));
    expect(refusal(() => transactionDecider.decide({ type: 'Create', data: created('PAYOUT', 'PENDING').data as never }, payout)).code).to.equal(
      'transaction_exists',
    );
  });
});
