import type { CardType } from './application';
import type { Spend } from './limit';

/** Why an authorization was declined (decisions.md, "Cards"), checked in this order. */
export const DECLINED_REASONS = ['CARD_NOT_ACTIVE', 'INSUFFICIENT_FUNDS', 'SPEND_LIMIT_EXCEEDED'] as const;
export type DeclinedReason = (typeof DECLINED_REASONS)[number];

/**
 * An authorization as the card network asked for it, and as the card stream keeps it: amounts are
 * decimal strings in USD (the card spends 1:1 from USDC); nothing of the card's number or CVC.
 */
export type CardSpendData = {
  cardId: string;
  /** The card transaction's id, also the uuid of its ledger transaction when approved. */
  transactionId: string;
  userId: string;
  partnerId: string;
  accountId: number;
  cardType: CardType;
  amount: string;
  currency: string;
  localAmount: string | null;
  localCurrency: string | null;
  merchantName: string;
  merchantCategoryCode: string;
  authorizationMethod: string | null;
  at: string;
};

export type CardSpendEvent =
  | { type: 'CardSpendAuthorized'; data: CardSpendData }
  | { type: 'CardSpendDeclined'; data: CardSpendData & { declinedReason: DeclinedReason } }
  /** `amount`: what the merchant took, which may differ from `authorizedAmount`. */
  | { type: 'CardSpendCleared'; data: { cardId: string; transactionId: string; authorizedAmount: string; amount: string; at: string } }
  | { type: 'CardSpendReversed'; data: { cardId: string; transactionId: string; amount: string; at: string } };

export const CARD_SPEND_EVENT_TYPES: ReadonlyArray<CardSpendEvent['type']> = [
  'CardSpendAuthorized',
  'CardSpendDeclined',
  'CardSpendCleared',
  'CardSpendReversed',
];

/**
 * An approved spend as the card's limit and later clearing see it: `amount` is what it takes from
 * the window (the authorized amount, the cleared one once cleared), `at` when it was authorized.
 */
export type CardSpend = Spend & { transactionId: string; authorizedAmount: string };

/** Approved spends by card transaction id: declined ones take nothing and cannot be cleared. */
export type CardSpends = Record<string, CardSpend>;

export function evolveSpends(spends: CardSpends, event: CardSpendEvent): CardSpends {
  const d = event.data;
  switch (event.type) {
    case 'CardSpendAuthorized':
      return {
        ...spends,
        [d.transactionId]: { transactionId: d.transactionId, amount: event.data.amount, authorizedAmount: event.data.amount, at: d.at, status: 'pending' },
      };
    case 'CardSpendDeclined':
      return spends;
    case 'CardSpendCleared': {
      const spend = spends[d.transactionId];
      return spend ? { ...spends, [d.transactionId]: { ...spend, amount: event.data.amount, status: 'completed' } } : spends;
    }
    case 'CardSpendReversed': {
      const spend = spends[d.transactionId];
      return spend ? { ...spends, [d.transactionId]: { ...spend, status: 'reversed' } } : spends;
    }
  }
}
