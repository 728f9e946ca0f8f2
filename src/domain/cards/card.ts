import type { JsonObject } from '../../eventstore/port';
import { type Decider, invariant, type SnapshotCodec } from '../../platform/decider';
import { parseAmount } from '../ledger';
import { CARD_TYPES, type CardType } from './application';
import { type CardLimit, DEFAULT_CARD_LIMIT, isLimitFrequency } from './limit';
import { CARD_REFUSALS, CARD_STATUS_REFUSALS, type CardStatusRule } from './refusals';
import { type CardSpend, type CardSpendEvent, evolveSpends, type SpendHistory } from './spend';
import { EMPTY_SPEND_BOOK, type SpendBook, spendBookOf } from './spend-book';

/** Card statuses (docs/interface.md, "Cards"). */
export const CARD_STATUSES = ['notActivated', 'active', 'locked', 'canceled'] as const;
export type CardStatus = (typeof CARD_STATUSES)[number];

/**
 * What the log keeps of an issued card: never its number, CVC or PIN (the issuer keeps those,
 * encrypted), only the last four digits, the expiry and the issuer's reference to fetch them by.
 */
export type CardIssuedData = {
  cardId: string;
  userId: string;
  partnerId: string;
  accountId: number;
  applicationId: string;
  type: CardType;
  status: CardStatus;
  last4: string;
  /** Two digits each. */
  expirationMonth: string;
  expirationYear: string;
  issuer: string;
  issuerReference: string;
  limit: CardLimit;
  at: string;
};

/** The moves between statuses, each with the status it may start from. */
export const CARD_ACTIONS = {
  activate: { from: ['notActivated'], to: 'active', event: 'CardActivated' },
  lock: { from: ['active'], to: 'locked', event: 'CardLocked' },
  unlock: { from: ['locked'], to: 'active', event: 'CardUnlocked' },
  cancel: { from: ['notActivated', 'active', 'locked'], to: 'canceled', event: 'CardCanceled' },
} as const satisfies Record<string, { from: readonly CardStatus[]; to: CardStatus; event: string }>;
export type CardAction = keyof typeof CARD_ACTIONS;
type StatusEventType = (typeof CARD_ACTIONS)[CardAction]['event'];

export type CardEvent =
  | { type: 'CardIssued'; data: CardIssuedData }
  | { type: StatusEventType; data: { cardId: string; from: CardStatus; to: CardStatus; at: string } }
  | { type: 'CardLimitChanged'; data: { cardId: string; limit: CardLimit; at: string } }
  /** The PIN itself is never an event's: only that it changed (the issuer keeps it). */
  | { type: 'CardPinChanged'; data: { cardId: string; at: string } }
  /** Authorizations, decided in order on the card's stream (src/domain/cards/authorization.ts). */
  | CardSpendEvent;

export type CardCommand =
  | { type: 'Issue'; card: Omit<CardIssuedData, 'status' | 'limit'> }
  | { type: 'ChangeStatus'; action: CardAction; at: string }
  | { type: 'SetLimit'; limit: CardLimit; at: string }
  | { type: 'ChangePin'; pin: string; at: string };

export type Card = CardIssuedData & {
  pinSet: boolean;
  createdAt: string;
  updatedAt: string;
};

/** The card, and its approved spends: what the limit's windows count, and what can be cleared or reversed. */
export interface CardState extends SpendHistory {
  card: Card | null;
}

export const cardStream = (cardId: string) => `card-${cardId}`;

/** The status a new card starts in: virtual cards are usable at once, physical ones once activated. */
export const initialStatus = (type: CardType): CardStatus => (type === 'virtual' ? 'active' : 'notActivated');

/** The refusal of an action the card's status forbids, one code for all (docs/decisions.md, card rows of "Errors"). */
export const cannot = (rule: CardStatusRule, status: CardStatus) => CARD_STATUS_REFUSALS[rule](status);

/** Whether the card's number, CVC and PIN may be read from the issuer: never while it is locked or canceled. */
export const revealable = (card: Pick<Card, 'status'>): boolean => card.status !== 'locked' && card.status !== 'canceled';

/** The card, when its secrets (number and CVC) or its PIN may be revealed (see revealable), else 409. */
export function requireRevealable(card: Card, what: 'revealSecrets' | 'revealPin'): Card {
  if (!revealable(card)) throw cannot(what, card.status);
  return card;
}

/** A PIN is exactly four digits (docs/decisions.md, "Cards"); it is checked before anything is stored. */
export function checkPin(pin: unknown): string {
  if (typeof pin !== 'string' || !/^[0-9]{4}$/.test(pin)) throw CARD_REFUSALS.invalidPin();
  return pin;
}

/** The card, for an action of its owner (404 when there is none, or it is someone else's). */
export function requireCard(state: Pick<CardState, 'card'>, userId?: string): Card {
  const card = state.card;
  if (!card || (userId !== undefined && card.userId !== userId)) throw CARD_REFUSALS.cardNotFound();
  return card;
}

/** A card of the partner's (the sandbox network's calls): 404 when there is none, or it is another partner's. */
export function requireCardOfPartner(card: Card | null, partnerId: string): Card {
  if (!card || card.partnerId !== partnerId) throw CARD_REFUSALS.cardNotFound();
  return card;
}

/**
 * A card the user names: 404 when there is none or it is another partner's (its existence is not
 * theirs to learn), 403 when it is another user's of the same partner (as accounts are, docs/decisions.md, "Errors").
 */
export function requireOwnedCard(card: Card | null, user: { userId: string; partnerId: string }): Card {
  if (!card || card.partnerId !== user.partnerId) throw CARD_REFUSALS.cardNotFound();
  if (card.userId !== user.userId) throw CARD_REFUSALS.cardNotOwned();
  return card;
}

const SPEND_STATUSES: ReadonlyArray<CardSpend['status']> = ['pending', 'completed', 'reversed'];
const CARD_TEXT_FIELDS = [
  'cardId',
  'userId',
  'partnerId',
  'applicationId',
  'last4',
  'expirationMonth',
  'expirationYear',
  'issuer',
  'issuerReference',
  'at',
  'createdAt',
  'updatedAt',
] as const;

function fail(what: string): never {
  throw new Error(`Card snapshot: ${what} is not as the card state keeps it`);
}

/** A decimal string as amounts are kept (every digit), or the snapshot is refused. */
function decimal(value: unknown, what: string): string {
  if (typeof value !== 'string' || parseAmount(value) === null) fail(what);
  return value;
}

function instant(value: unknown, what: string): string {
  if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) fail(what);
  return value;
}

function decodeCard(value: unknown): Card | null {
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) fail('card');
  const c = value as Record<string, unknown>;
  for (const field of CARD_TEXT_FIELDS) if (typeof c[field] !== 'string') fail(`card.${field}`);
  if (typeof c.accountId !== 'number' || typeof c.pinSet !== 'boolean') fail('card.accountId or card.pinSet');
  if (!(CARD_TYPES as readonly unknown[]).includes(c.type) || !(CARD_STATUSES as readonly unknown[]).includes(c.status)) fail('card.type or card.status');
  const limit = c.limit as Record<string, unknown> | null;
  if (typeof limit !== 'object' || limit === null || !isLimitFrequency(limit.frequency)) fail('card.limit');
  decimal(limit.amount, 'card.limit.amount');
  return c as unknown as Card;
}

function decodeSpends(value: unknown): SpendBook {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('spends');
  const spends: CardSpend[] = [];
  for (const [id, raw] of Object.entries(value as Record<string, unknown>)) {
    const s = (raw ?? {}) as Record<string, unknown>;
    if (s.transactionId !== id || !(SPEND_STATUSES as readonly unknown[]).includes(s.status)) fail(`spend ${id}`);
    spends.push({
      transactionId: id,
      amount: decimal(s.amount, `spend ${id} amount`),
      authorizedAmount: decimal(s.authorizedAmount, `spend ${id} authorizedAmount`),
      at: instant(s.at, `spend ${id} at`),
      status: s.status as CardSpend['status'],
    });
  }
  return spendBookOf(spends);
}

/**
 * A card's state as a snapshot: the card as issued and changed, the spends it keeps (bounded: see
 * SpendHistory) and what the ones it dropped took. Read back strictly: anything else is refused and
 * the load folds the stream from its start.
 */
export const cardSnapshot: SnapshotCodec<CardState> = {
  kind: 'card@1',
  encode: (s) => ({ card: s.card, spends: s.spends.toJSON(), earlierSpent: s.earlierSpent }) as unknown as JsonObject,
  decode: (j) => ({ card: decodeCard(j.card), spends: decodeSpends(j.spends), earlierSpent: decimal(j.earlierSpent, 'earlierSpent') }),
};

export const cardDecider: Decider<CardState, CardCommand, CardEvent> = {
  initialState: () => ({ card: null, spends: EMPTY_SPEND_BOOK, earlierSpent: '0' }),

  snapshot: cardSnapshot,

  evolve(state, event) {
    if (event.type === 'CardIssued') return { ...state, card: { ...event.data, pinSet: false, createdAt: event.data.at, updatedAt: event.data.at } };
    const card = state.card;
    if (!card) return state;
    switch (event.type) {
      case 'CardLimitChanged':
        return { ...state, card: { ...card, limit: event.data.limit, updatedAt: event.data.at } };
      case 'CardPinChanged':
        return { ...state, card: { ...card, pinSet: true, updatedAt: event.data.at } };
      // Spends are the card's use, not a change of it: its updatedAt stays.
      case 'CardSpendAuthorized':
      case 'CardSpendDeclined':
      case 'CardSpendCleared':
      case 'CardSpendReversed':
        return { ...state, ...evolveSpends(state, event) };
      default:
        return { ...state, card: { ...card, status: event.data.to, updatedAt: event.data.at } };
    }
  },

  decide(command, state) {
    if (command.type === 'Issue') {
      if (state.card) throw CARD_REFUSALS.cardAlreadyIssued();
      const { card } = command;
      invariant(
        /^[0-9]{4}$/.test(card.last4) && /^[0-9]{2}$/.test(card.expirationMonth) && /^[0-9]{2}$/.test(card.expirationYear),
        'a card has its last4 and expiry',
      );
      return [{ type: 'CardIssued', data: { ...card, status: initialStatus(card.type), limit: DEFAULT_CARD_LIMIT } }];
    }
    const card = requireCard(state);
    switch (command.type) {
      case 'ChangeStatus': {
        const move = CARD_ACTIONS[command.action];
        if (!(move.from as readonly CardStatus[]).includes(card.status)) throw cannot(command.action, card.status);
        return [{ type: move.event, data: { cardId: card.cardId, from: card.status, to: move.to, at: command.at } }];
      }
      case 'SetLimit':
        if (card.status === 'canceled') throw cannot('limit', card.status);
        return [{ type: 'CardLimitChanged', data: { cardId: card.cardId, limit: command.limit, at: command.at } }];
      case 'ChangePin':
        checkPin(command.pin);
        if (card.status === 'canceled') throw cannot('setPin', card.status);
        return [{ type: 'CardPinChanged', data: { cardId: card.cardId, at: command.at } }];
    }
  },
};

/** Which cards a user has, oldest first: the latest is the primary card the token's calls act on. */
export type UserCardsEvent = { type: 'UserCardAssigned'; data: { userId: string; cardId: string; at: string } };
export interface UserCardsState {
  cardIds: string[];
}

export const userCardsStream = (userId: string) => `usercards-${userId}`;
export const primaryCardId = (state: UserCardsState): string | null => state.cardIds[state.cardIds.length - 1] ?? null;

/**
 * A new card for the user: only while the latest one (its status a fact from its own stream) is
 * canceled or there is none. Appended at the index's revision, so two issues at once make one card.
 */
export const userCardsDecider: Decider<
  UserCardsState,
  { type: 'Assign'; userId: string; cardId: string; latestStatus: CardStatus | null; at: string },
  UserCardsEvent
> = {
  initialState: () => ({ cardIds: [] }),
  evolve: (state, event) => ({ cardIds: [...state.cardIds, event.data.cardId] }),
  decide(command, state) {
    if (state.cardIds.includes(command.cardId)) return [];
    if (primaryCardId(state) !== null && command.latestStatus !== 'canceled') throw CARD_REFUSALS.cardAlreadyIssued();
    return [{ type: 'UserCardAssigned', data: { userId: command.userId, cardId: command.cardId, at: command.at } }];
  },
};
