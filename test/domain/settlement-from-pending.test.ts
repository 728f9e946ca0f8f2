import { expect } from 'chai';
import { accountDecider } from '../../src/domain/ledger/account';
import { decideDeposit, decidePaymentVerdict } from '../../src/domain/ledger/deposit';
import { decidePayout, decidePayoutFailed, decidePayoutSettled } from '../../src/domain/ledger/payout';
import type { TransactionEvent } from '../../src/domain/ledger/transaction';
import { AT, account, credited, opened, ROOMY, transaction, withCredits, depositRequest, payoutRequest } from './ledger-support';

/**
 * A provider's report settles a transaction only while it waits for one (PENDING, or PROCESSING for
 * a payout): a late or contrary report on a decided one moves neither its status nor money. Here
 * through the decisions the provider webhooks run, on the states they leave.
 */
describe('settlement only from a pending transaction, through the provider reports', () => {
  const ada = () => withCredits(account(opened(7)), account(credited(7, '100')));

  describe('deposits', () => {
    const deposit = () => decideDeposit(ada(), depositRequest()) as TransactionEvent[];
    const verdict = (outcome: 'confirmed' | 'failed') => ({ eventId: 'e1', outcome, amount: '25', currency: 'USDC', at: AT });

    it('a confirmation of a failed deposit neither completes it nor credits anything', () => {
      const failed = decidePaymentVerdict(transaction(...deposit()), ada(), verdict('failed'));
      expect(failed.transaction.map((e) => e.type === 'TransactionStatusChanged' && e.data.to)).to.deep.equal(['FAILED']);
      expect(decidePaymentVerdict(transaction(...deposit(), ...failed.transaction), ada(), verdict('confirmed'))).to.deep.equal({
        transaction: [],
        credit: [],
      });
    });

    it('a failure reported on a completed deposit changes nothing', () => {
      const completed = decidePaymentVerdict(transaction(...deposit()), ada(), verdict('confirmed'));
      expect(decidePaymentVerdict(transaction(...deposit(), ...completed.transaction), ada(), verdict('failed'))).to.deep.equal({
        transaction: [],
        credit: [],
      });
    });
  });

  describe('payouts', () => {
    const held = () => {
      const d = decidePayout(transaction(), ada(), payoutRequest(), { assetDecimals: 2, rate: '4000', providerKnown: true, limits: ROOMY });
      if (d.kind !== 'held') throw new Error('expected a hold');
      return { events: d.transaction, account: withCredits(account(opened(7), ...d.debit), account(credited(7, '100'))) };
    };
    const failure = { reason: 'bank_rejected', details: {}, at: AT, reversal: { uuid: 'r-1', id: 10 } };

    it('a settlement of a failed payout neither completes it nor posts anything, on the account the failure left', () => {
      const payout = held();
      const failed = decidePayoutFailed(transaction(...payout.events), payout.account, failure);
      const after = [...failed.debit, ...failed.credit].reduce(accountDecider.evolve, payout.account);
      expect(decidePayoutSettled(transaction(...payout.events, ...failed.transaction), after, { eventId: 'e2', at: AT })).to.deep.equal({
        transaction: [],
        debit: [],
      });
    });

    it('a failure reported on a settled payout returns nothing', () => {
      const payout = held();
      const settled = decidePayoutSettled(transaction(...payout.events), payout.account, { eventId: 'e1', at: AT });
      const after = settled.debit.reduce(accountDecider.evolve, payout.account);
      expect(decidePayoutFailed(transaction(...payout.events, ...settled.transaction), after, failure)).to.deep.equal({
        transaction: [],
        debit: [],
        credit: [],
        reversal: [],
      });
    });
  });
});
