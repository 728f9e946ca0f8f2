import { CARD_REFUSALS } from './refusals';
import { type Amount, fixed, money, ZERO } from '../ledger';
import type { CardType } from './application';
import { type LimitFrequency, windowRange } from './limit';
import { addSpend, type CardSpend, dropSettled, replaceSpend, type SpendBook, spendOf, takenBetween } from './spend-book';

/** Why an authorization was declined (docs/decisions.md, "Cards"), checked in this order. */
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

export type { CardSpend } from './spend-book';

/**
 * What a card keeps of its spends: every approved one its windows may still count or that may still
 * be cleared or reversed, and what the settled ones it no longer keeps took (only `allTime` counts
 * them), so a card's state stays bounded however long it is used.
 */
export interface SpendHistory {
  /** Approved spends (declined ones take nothing and cannot be cleared), in a book whose changes copy little (spend-book.ts). */
  spends: SpendBook;
  /** Decimal string: the cleared amounts of the spends dropped from `spends`. */
  earlierSpent: string;
}

/** What the window of `frequency` ending at `at` already holds (spentInWindow over every kept spend, without reading each). */
export function spentInHistory(history: SpendHistory, frequency: LimitFrequency, at: string): Amount {
  const range = windowRange(frequency, at);
  if (!range) return ZERO;
  const inside = takenBetween(history.spends, range.fromMs, range.toMs);
  return frequency === 'allTime' ? inside.plus(money(history.earlierSpent)) : inside;
}

/**
 * How long a settled spend is kept after its authorization: the longest rolling window (365 days)
 * and a day more, so that a decision whose clock steps back a little behind an earlier one still
 * finds every spend its window counts. A pending spend is kept until it is settled.
 */
export const KEEP_SETTLED_MS = 366 * 24 * 3_600_000;

export function evolveSpends(history: SpendHistory, event: CardSpendEvent): SpendHistory {
  const { spends } = history;
  const d = event.data;
  switch (event.type) {
    case 'CardSpendAuthorized': {
      const spend: CardSpend = { transactionId: d.transactionId, amount: event.data.amount, authorizedAmount: event.data.amount, at: d.at, status: 'pending' };
      return keptWith(history, spend);
    }
    case 'CardSpendDeclined':
      return history;
    case 'CardSpendCleared': {
      const spend = spendOf(spends, d.transactionId);
      return spend ? { ...history, spends: replaceSpend(spends, { ...spend, amount: event.data.amount, status: 'completed' }) } : history;
    }
    case 'CardSpendReversed': {
      const spend = spendOf(spends, d.transactionId);
      return spend ? { ...history, spends: replaceSpend(spends, { ...spend, status: 'reversed' }) } : history;
    }
  }
}

/**
 * The history with a new spend, as its authorization leaves it: settled spends authorized more than
 * KEEP_SETTLED_MS before it dropped, the cleared ones' amounts added to `earlierSpent`.
 */
function keptWith(history: SpendHistory, added: CardSpend): SpendHistory {
  const { book, dropped } = dropSettled(history.spends, Date.parse(added.at) - KEEP_SETTLED_MS);
  return { spends: addSpend(book, added), earlierSpent: dropped === null ? history.earlierSpent : fixed(money(history.earlierSpent).plus(dropped)) };
}

/**
 * A card transaction that is no longer pending (declined, or settled) is settled no more: 409 with
 * its status. Only a pending spend is cleared or reversed.
 */
export function refuseSettlement(status: string, action: 'clear' | 'reverse'): never {
  throw (action === 'clear' ? CARD_REFUSALS.clearForbidden : CARD_REFUSALS.reverseForbidden)(status);
}
