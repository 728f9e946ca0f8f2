import { expect } from 'chai';
import { type AccountEvent, type AccountState, accountDecider, assertAccount, available } from '../../src/domain/ledger/account';
import {
  type AuthorizationRequest,
  decideAuthorization,
  decideAuthorizations,
  decideClearing,
  decideReversal,
  type SettlementDecided,
} from '../../src/domain/cards/authorization';
import { type CardEvent, type CardState, cardDecider } from '../../src/domain/cards/card';
import { allSpends, spendOf } from '../../src/domain/cards/spend-book';
import { DomainError } from '../../src/platform/decider';
import { fixed, money } from '../../src/domain/ledger/money';
import { type TransactionState, transactionDecider } from '../../src/domain/ledger/transaction';
import { AT, canceled, issued, locked, refused } from './cards-support';

const ACCOUNT = 1001;
const opened: AccountEvent = {
  type: 'AccountOpened',
  data: { accountId: ACCOUNT, userId: 'ada', partnerId: 'acme', asset: 'USDC', type: 'LIABILITY', at: AT },
};
const credited = (amount: string): AccountEvent => ({
  type: 'FundsCredited',
  data: { accountId: ACCOUNT, transactionId: `dep-${amount}`, amount: fixed(money(amount)), reason: 'deposit', at: AT },
});
const accountWith = (balance: string): AccountState => [opened, credited(balance)].reduce(accountDecider.evolve, accountDecider.initialState());
const cardAfter = (events: CardEvent[]): CardState => events.reduce(cardDecider.evolve, cardDecider.initialState());

const HOUR_MS = 3_600_000;
const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

let ids = 0;
const authorization = (amount: string, at = AT): AuthorizationRequest => ({
  transactionId: `ctx-${++ids}`,
  ledgerId: ids,
  amount,
  currency: 'USD',
  localAmount: null,
  localCurrency: null,
  merchantName: 'Corner Shop',
  merchantCategoryCode: '5411',
  authorizationMethod: 'contactless',
  at,
});

/** Given a card and its account, when authorizations come in order, then each outcome, the states they leave. */
function given(card: CardEvent[], balance: string) {
  return {
    whenAuthorized(...requests: AuthorizationRequest[]) {
      const decided = decideAuthorizations(
        new Map([['card-1', cardAfter(card)]]),
        accountWith(balance),
        requests.map((request) => ({ cardId: 'card-1', request })),
      );
      return {
        ...decided,
        outcomes: decided.outcomes.map((o) => (o.outcome === 'declined' ? o.reason : 'approved')),
        card: decided.cards.get('card-1') as CardState,
      };
    },
  };
}

function refusal(decide: () => unknown): [string, string] {
  try {
    decide();
  } catch (error) {
    if (error instanceof DomainError) return [error.kind, error.message];
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('card authorizations (decider)', () => {
  describe('the decision, in order: card status, available balance, spending limit', () => {
    it('approves within the balance and the limit: a card transaction, a hold on the account and a PENDING CARD ledger transaction', () => {
      const request = authorization('25.5');
      const decided = decideAuthorization(cardAfter([issued()]), accountWith('100'), request);
      if (decided.outcome !== 'approved') throw new Error('expected an approval');
      expect(decided.card).to.deep.equal([
        {
          type: 'CardSpendAuthorized',
          data: {
            cardId: 'card-1',
            transactionId: request.transactionId,
            userId: 'ada',
            partnerId: 'acme',
            accountId: ACCOUNT,
            cardType: 'virtual',
            amount: '25.50000000',
            currency: 'USD',
            localAmount: null,
            localCurrency: null,
            merchantName: 'Corner Shop',
            merchantCategoryCode: '5411',
            authorizationMethod: 'contactless',
            at: AT,
          },
        },
      ]);
      expect(decided.debit).to.deep.equal([
        {
          type: 'FundsDebited',
          data: { accountId: ACCOUNT, transactionId: request.transactionId, amount: '25.50000000', reason: 'card', pending: true, at: AT },
        },
      ]);
      expect(decided.transaction[0]?.type).to.equal('TransactionCreated');
      expect(decided.transaction[0]?.data).to.include({
        uuid: request.transactionId,
        kind: 'CARD',
        status: 'PENDING',
        amount: '25.50000000',
        debitAccountId: ACCOUNT,
      });
    });

    it('declines CARD_NOT_ACTIVE on a locked, canceled or not yet activated card, before looking at funds or the limit', () => {
      for (const card of [[issued(), locked()], [issued(), canceled()], [issued('physical')]]) {
        expect(given(card, '0').whenAuthorized(authorization('5000')).outcomes).to.deep.equal(['CARD_NOT_ACTIVE']);
      }
    });

    it('declines INSUFFICIENT_FUNDS before the limit is asked', () => {
      expect(given([issued()], '10').whenAuthorized(authorization('5000')).outcomes).to.deep.equal(['INSUFFICIENT_FUNDS']);
    });

    it('declines SPEND_LIMIT_EXCEEDED past the limit; reaching it exactly is allowed', () => {
      const outcome = given([issued()], '5000').whenAuthorized(authorization('600'), authorization('400'), authorization('0.00000001'));
      expect(outcome.outcomes).to.deep.equal(['approved', 'approved', 'SPEND_LIMIT_EXCEEDED']);
    });

    it('counts earlier holds: authorizations in order cannot spend the same money twice', () => {
      const outcome = given([issued()], '100').whenAuthorized(authorization('60'), authorization('60'), authorization('40'));
      expect(outcome.outcomes).to.deep.equal(['approved', 'INSUFFICIENT_FUNDS', 'approved']);
      expect(fixed(available(outcome.account))).to.equal('0.00000000');
      expect(outcome.account.holds.toJSON()).to.have.keys(allSpends(outcome.card.spends).map((s) => s.transactionId));
      assertAccount(outcome.account);
    });

    it('records a declined authorization as a card transaction that holds nothing and takes nothing from the window', () => {
      const outcome = given([issued()], '5000').whenAuthorized(authorization('1000.01'), authorization('1000'));
      expect(outcome.outcomes).to.deep.equal(['SPEND_LIMIT_EXCEEDED', 'approved']);
      expect(fixed(outcome.account.debitsPending)).to.equal('1000.00000000');
    });
  });

  describe('rolling windows at their edges (half open: an authorization exactly a window old has left it)', () => {
    it('per24HourPeriod: one 24 hours old no longer counts, one a millisecond younger still does', () => {
      const first = authorization('1000', AT);
      expect(given([issued()], '5000').whenAuthorized(first, authorization('1', plus(AT, 24 * HOUR_MS - 1))).outcomes).to.deep.equal([
        'approved',
        'SPEND_LIMIT_EXCEEDED',
      ]);
      expect(given([issued()], '5000').whenAuthorized(authorization('1000', AT), authorization('1000', plus(AT, 24 * HOUR_MS))).outcomes).to.deep.equal([
        'approved',
        'approved',
      ]);
    });

    it('a reversed authorization leaves the window: its amount may be spent again', () => {
      const first = authorization('1000');
      const after = given([issued()], '5000').whenAuthorized(first);
      const reversed = decideReversal(after.card, after.account, pendingTxn(first), {
        transactionId: first.transactionId,
        at: AT,
        difference: { uuid: 'ret-1', id: 90 },
      });
      const card = reversed.card.reduce(cardDecider.evolve, after.card);
      const account = settle(after.account, reversed);
      const again = decideAuthorization(card, account, authorization('1000', plus(AT, 1)));
      expect(again.outcome).to.equal('approved');
    });
  });

  describe('clearing and reversal', () => {
    function held(amount: string, balance = '100') {
      const request = authorization(amount);
      const after = given([issued()], balance).whenAuthorized(request);
      return { request, card: after.card, account: after.account, txn: pendingTxn(request) };
    }
    const settlement = (transactionId: string) => ({ transactionId, at: plus(AT, HOUR_MS), difference: { uuid: 'diff-1', id: 99 } });

    it('clears the authorized amount: the hold is posted, the ledger transaction COMPLETED, nothing else moves', () => {
      const h = held('40');
      const decided = decideClearing(h.card, h.account, h.txn, settlement(h.request.transactionId));
      expect(decided.debit.map((e) => e.type)).to.deep.equal(['HoldPosted']);
      expect(decided.credit).to.deep.equal([]);
      expect(decided.difference).to.deep.equal([]);
      expect(decided.transaction[0]?.data).to.include({ from: 'PENDING', to: 'COMPLETED' });
      const account = settle(h.account, decided);
      expect([fixed(available(account)), fixed(account.debitsPending)]).to.deep.equal(['60.00000000', '0.00000000']);
    });

    it('cleared for less, returns the rest as a REVERSAL ledger transaction', () => {
      const h = held('40');
      const decided = decideClearing(h.card, h.account, h.txn, { ...settlement(h.request.transactionId), amount: '35' });
      expect(decided.credit[0]?.data).to.include({ amount: '5.00000000', reason: 'card_reversal' });
      expect(decided.difference[0]?.data).to.include({ uuid: 'diff-1', kind: 'REVERSAL', status: 'REVERSED', amount: '5.00000000', creditAccountId: ACCOUNT });
      expect(fixed(available(settle(h.account, decided)))).to.equal('65.00000000');
      const card = decided.card.reduce(cardDecider.evolve, h.card);
      expect(spendOf(card.spends, h.request.transactionId)).to.include({ status: 'completed', amount: '35.00000000', authorizedAmount: '40.00000000' });
    });

    it('cleared for more, debits the extra when the balance has it, and refuses the clearing when it has not', () => {
      const h = held('40');
      const decided = decideClearing(h.card, h.account, h.txn, { ...settlement(h.request.transactionId), amount: '45' });
      expect(decided.debit.map((e) => e.type)).to.deep.equal(['HoldPosted', 'FundsDebited']);
      expect(decided.debit[1]?.data).to.include({ amount: '5.00000000', pending: false, reason: 'card' });
      expect(decided.difference[0]?.data).to.include({ kind: 'CARD', status: 'COMPLETED', amount: '5.00000000', debitAccountId: ACCOUNT });
      expect(fixed(available(settle(h.account, decided)))).to.equal('55.00000000');
      const tight = held('90', '100');
      expect(
        refusal(() => decideClearing(tight.card, tight.account, tight.txn, { ...settlement(tight.request.transactionId), amount: '110.5' })),
      ).to.deep.equal(['invalid', `Insufficient balance in account ${ACCOUNT}`]);
    });

    it('reverses a pending authorization: the hold comes back in full, the ledger transaction is REVERSED', () => {
      const h = held('40');
      const decided = decideReversal(h.card, h.account, h.txn, settlement(h.request.transactionId));
      expect(decided.transaction[0]?.data).to.include({ from: 'PENDING', to: 'REVERSED' });
      expect(decided.difference[0]?.data).to.include({ kind: 'REVERSAL', amount: '40.00000000' });
      const account = settle(h.account, decided);
      expect([fixed(available(account)), fixed(account.debitsPending)]).to.deep.equal(['100.00000000', '0.00000000']);
    });

    it('settles a card transaction once: clearing or reversing a settled one is 409, an unknown one 404', () => {
      const h = held('40');
      const cleared = decideClearing(h.card, h.account, h.txn, settlement(h.request.transactionId));
      const card = cleared.card.reduce(cardDecider.evolve, h.card);
      const account = settle(h.account, cleared);
      expect(refusal(() => decideReversal(card, account, h.txn, settlement(h.request.transactionId)))).to.deep.equal([
        'conflict',
        'Cannot reverse a card transaction in status completed',
      ]);
      expect(refusal(() => decideClearing(card, account, h.txn, settlement(h.request.transactionId)))).to.deep.equal([
        'conflict',
        'Cannot clear a card transaction in status completed',
      ]);
      expect(refusal(() => decideClearing(card, account, h.txn, settlement('nope')))).to.deep.equal(['not_found', 'Card transaction not found']);
      // Each with its stable code.
      expect(refused(() => decideReversal(card, account, h.txn, settlement(h.request.transactionId))).code).to.equal('card_transaction_status_forbids');
      expect(refused(() => decideClearing(card, account, h.txn, settlement('nope'))).code).to.equal('card_transaction_not_found');
    });

    it('clears or reverses on a locked or canceled card: the merchant took the money while it was active', () => {
      const h = held('40');
      const lockedCard = [locked()].reduce(cardDecider.evolve, h.card);
      expect(decideClearing(lockedCard, h.account, h.txn, settlement(h.request.transactionId)).card[0]?.type).to.equal('CardSpendCleared');
    });
  });
});

/** The ledger transaction an approved authorization created. */
function pendingTxn(request: AuthorizationRequest): TransactionState {
  return transactionDecider.evolve(transactionDecider.initialState(), {
    type: 'TransactionCreated',
    data: {
      uuid: request.transactionId,
      id: request.ledgerId,
      kind: 'CARD',
      status: 'PENDING',
      amount: fixed(money(request.amount)),
      debitAccountId: ACCOUNT,
      creditAccountId: null,
      description: 'Card purchase',
      userId: 'ada',
      partnerId: 'acme',
      requestHash: null,
      details: {},
      at: request.at,
    },
  });
}

/** The account after a settlement, with every invariant of it checked. */
function settle(account: AccountState, decided: SettlementDecided): AccountState {
  const after = [...decided.debit, ...decided.credit].reduce(accountDecider.evolve, account);
  assertAccount(after);
  return after;
}
