import { type AccountEvent, type AccountState, accountDecider, assertAccount, available } from '../ledger';
import { invariant } from '../../platform/decider';
import { fixed, money } from '../ledger';
import { type TransactionCreatedData, type TransactionEvent, type TransactionState, transactionDecider } from '../ledger';
import { type Card, type CardEvent, type CardState, cardDecider, requireCard } from './card';
import { withinLimit } from './limit';
import { type CardSpend, type CardSpendData, type DeclinedReason, refuseSettlement, type SpendHistory, spentInHistory } from './spend';
import { spendOf } from './spend-book';
import { CARD_REFUSALS } from './refusals';

/** An authorization as asked for, with the ids it was given (the transaction id names its ledger transaction). */
export type AuthorizationRequest = Omit<CardSpendData, 'cardId' | 'userId' | 'partnerId' | 'accountId' | 'cardType'> & {
  /** The ledger transaction's number in lists (from a sequence). */
  ledgerId: number;
};

export type AuthorizationDecided =
  | { outcome: 'declined'; reason: DeclinedReason; card: CardEvent[] }
  /** The amount held on the account: a PENDING ledger transaction until it is cleared or reversed. */
  | { outcome: 'approved'; card: CardEvent[]; debit: AccountEvent[]; transaction: TransactionEvent[] };

/** The first rule the authorization breaks, in the order docs/decisions.md ("Cards") gives: status, funds, limit. */
function declineReason(card: Card, history: SpendHistory, account: AccountState, request: AuthorizationRequest): DeclinedReason | null {
  if (card.status !== 'active') return 'CARD_NOT_ACTIVE';
  if (available(account).lt(money(request.amount))) return 'INSUFFICIENT_FUNDS';
  if (!withinLimit(card.limit, spentInHistory(history, card.limit.frequency, request.at), request.amount)) return 'SPEND_LIMIT_EXCEEDED';
  return null;
}

/**
 * One authorization on a card, decided on the card's state (its status, limit and the spends its
 * windows count) and on its account's state at a known revision. Every outcome is a card
 * transaction; an approval is also a hold on the account (a pending debit) and a PENDING ledger
 * transaction, so no mix of transfers, payouts and authorizations can overdraw the account.
 */
export function decideAuthorization(state: CardState, account: AccountState, request: AuthorizationRequest): AuthorizationDecided {
  const card = requireCard(state);
  invariant(account.accountId === card.accountId, "a card spends from its user's account");
  invariant(!spendOf(state.spends, request.transactionId), 'an authorization is decided once');
  const { ledgerId: _ledgerId, ...asked } = request;
  const amount = fixed(money(request.amount));
  const data: CardSpendData = {
    ...asked,
    amount,
    cardId: card.cardId,
    userId: card.userId,
    partnerId: card.partnerId,
    accountId: card.accountId,
    cardType: card.type,
  };
  const reason = declineReason(card, state, account, request);
  if (reason) return { outcome: 'declined', reason, card: [{ type: 'CardSpendDeclined', data: { ...data, declinedReason: reason } }] };
  // The card's own limit governs card spends: the KYC limits of transfers and payouts do not apply.
  const debit = accountDecider.decide(
    { type: 'Debit', transactionId: request.transactionId, amount, reason: 'card', pending: true, at: request.at, limits: null },
    account,
  );
  const transaction = transactionDecider.decide(
    {
      type: 'Create',
      data: ledgerTransaction(card, {
        uuid: request.transactionId,
        id: request.ledgerId,
        kind: 'CARD',
        status: 'PENDING',
        amount,
        description: `Card purchase at ${request.merchantName}`,
        at: request.at,
      }),
    },
    transactionDecider.initialState(),
  );
  return { outcome: 'approved', card: [{ type: 'CardSpendAuthorized', data }], debit, transaction };
}

/**
 * Authorizations on one account, decided in order, each on the states the ones before it left
 * (a card's state per card id: a user may still have a canceled card beside the new one).
 */
export function decideAuthorizations(
  cards: ReadonlyMap<string, CardState>,
  account: AccountState,
  requests: ReadonlyArray<{ cardId: string; request: AuthorizationRequest }>,
): { outcomes: AuthorizationDecided[]; account: AccountState; cards: Map<string, CardState> } {
  const states = new Map(cards);
  let accountState = account;
  const outcomes = requests.map(({ cardId, request }) => {
    const card = states.get(cardId);
    invariant(card !== undefined, 'every card of the batch is loaded');
    const decided = decideAuthorization(card, accountState, request);
    states.set(cardId, decided.card.reduce(cardDecider.evolve, card));
    if (decided.outcome === 'approved') accountState = decided.debit.reduce(accountDecider.evolve, accountState);
    return decided;
  });
  return { outcomes, account: accountState, cards: states };
}

export type SettlementDecided = {
  card: CardEvent[];
  /** On the account's stream, at its revision: the hold posted (and, cleared above it, the extra debit). */
  debit: AccountEvent[];
  /** On the account's credit stream: what comes back (a reversal, or the part of the hold not cleared). */
  credit: AccountEvent[];
  /** The card's ledger transaction: COMPLETED or REVERSED. */
  transaction: TransactionEvent[];
  /** A new ledger transaction for the difference (its uuid is `difference.uuid`), or none. */
  difference: TransactionEvent[];
};

export interface SettlementRequest {
  transactionId: string;
  at: string;
  /** The ledger transaction a difference is recorded as (a REVERSAL returned, or a CARD debit beyond the hold). */
  difference: { uuid: string; id: number };
}

/**
 * The merchant took the money: the hold is posted. Cleared for less, the rest comes back (a
 * REVERSAL); cleared for more, the extra is debited now and needs the balance for it (400
 * `Insufficient balance in account <id>` otherwise, the spend staying pending). The limit is not
 * asked again: the authorization was within it, and the window counts the cleared amount from now on.
 */
export function decideClearing(
  state: CardState,
  account: AccountState,
  txn: TransactionState,
  request: SettlementRequest & { amount?: string },
): SettlementDecided {
  const { card, spend } = pendingSpend(state, request.transactionId, 'clear');
  const held = money(spend.amount);
  const cleared = money(request.amount ?? spend.amount);
  invariant(cleared.gt(0), 'a clearing takes a positive amount');
  const { at, difference } = request;
  const debit = accountDecider.decide({ type: 'PostHold', transactionId: spend.transactionId, at }, account);
  let posted = debit.reduce(accountDecider.evolve, account);
  const decided: SettlementDecided = {
    card: [
      {
        type: 'CardSpendCleared',
        data: { cardId: card.cardId, transactionId: spend.transactionId, authorizedAmount: spend.amount, amount: fixed(cleared), at },
      },
    ],
    debit,
    credit: [],
    transaction: transactionDecider.decide({ type: 'ChangeStatus', to: 'COMPLETED', reason: null, details: { clearedAmount: fixed(cleared) }, at }, txn),
    difference: [],
  };
  if (cleared.gt(held)) {
    const extra = fixed(cleared.minus(held));
    const more = accountDecider.decide(
      { type: 'Debit', transactionId: difference.uuid, amount: extra, reason: 'card', pending: false, at, limits: null },
      posted,
    );
    posted = more.reduce(accountDecider.evolve, posted);
    decided.debit = [...debit, ...more];
    decided.difference = created(card, {
      ...difference,
      kind: 'CARD',
      status: 'COMPLETED',
      amount: extra,
      description: `Card purchase ${spend.transactionId} cleared above its authorization`,
      at,
    });
  } else if (cleared.lt(held)) {
    const rest = fixed(held.minus(cleared));
    decided.credit = accountDecider.decide({ type: 'Credit', transactionId: difference.uuid, amount: rest, reason: 'card_reversal', at }, posted);
    posted = decided.credit.reduce(accountDecider.evolve, posted);
    decided.difference = returned(card, difference, rest, `Return of card purchase ${spend.transactionId} cleared below its authorization`, at);
  }
  assertAccount(posted);
  return decided;
}

/** The authorization is reversed (or expires): its hold comes back in full, as a REVERSAL. */
export function decideReversal(state: CardState, account: AccountState, txn: TransactionState, request: SettlementRequest): SettlementDecided {
  const { card, spend } = pendingSpend(state, request.transactionId, 'reverse');
  const { at, difference } = request;
  // The money came back: it no longer counts to its debit's day of outgoing money.
  const debit = accountDecider.decide({ type: 'PostHold', transactionId: spend.transactionId, at, returnedDay: spend.at.slice(0, 10) }, account);
  const posted = debit.reduce(accountDecider.evolve, account);
  const credit = accountDecider.decide({ type: 'Credit', transactionId: difference.uuid, amount: spend.amount, reason: 'card_reversal', at }, posted);
  assertAccount(credit.reduce(accountDecider.evolve, posted));
  return {
    card: [{ type: 'CardSpendReversed', data: { cardId: card.cardId, transactionId: spend.transactionId, amount: spend.amount, at } }],
    debit,
    credit,
    transaction: transactionDecider.decide({ type: 'ChangeStatus', to: 'REVERSED', reason: 'card_reversal', at }, txn),
    difference: returned(card, difference, spend.amount, `Reversal of card purchase ${spend.transactionId}`, at),
  };
}

/** A spend that can still be cleared or reversed: 404 when the card has none by that id, 409 once settled. */
function pendingSpend(state: CardState, transactionId: string, action: 'clear' | 'reverse'): { card: Card; spend: CardSpend } {
  const card = requireCard(state);
  const spend = spendOf(state.spends, transactionId);
  if (!spend) throw CARD_REFUSALS.transactionNotFound();
  if (spend.status !== 'pending') refuseSettlement(spend.status, action);
  return { card, spend };
}

type LedgerFields = Pick<TransactionCreatedData, 'uuid' | 'id' | 'kind' | 'status' | 'amount' | 'description' | 'at'>;

/** A card's ledger transaction: the user's, on the card's account, naming the card. */
function ledgerTransaction(card: Card, fields: LedgerFields): TransactionCreatedData {
  const debit = fields.kind !== 'REVERSAL';
  return {
    ...fields,
    debitAccountId: debit ? card.accountId : null,
    creditAccountId: debit ? null : card.accountId,
    userId: card.userId,
    partnerId: card.partnerId,
    requestHash: null,
    details: { cardId: card.cardId },
  };
}

const created = (card: Card, fields: LedgerFields): TransactionEvent[] =>
  transactionDecider.decide({ type: 'Create', data: ledgerTransaction(card, fields) }, transactionDecider.initialState());

const returned = (card: Card, ids: { uuid: string; id: number }, amount: string, description: string, at: string): TransactionEvent[] =>
  created(card, { ...ids, kind: 'REVERSAL', status: 'REVERSED', amount, description, at });
