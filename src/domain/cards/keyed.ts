import type { Decider } from '../../platform/decider';
import { CARD_REFUSALS } from './refusals';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The card calls an idempotency key may be sent with (docs/interface.md, "Idempotency"). */
export type CardRequestKind = 'issue' | 'activate' | 'lock' | 'unlock' | 'limit' | 'pin';

/**
 * What a keyed card call made, kept under its key (the key names the stream, as a keyed transfer's
 * names its transaction): the request's hash and the first answer, which a retry gets again. Only
 * calls that changed something are kept, so one refused may be sent again under its key.
 */
export type CardRequestAnswered = {
  uuid: string;
  kind: CardRequestKind;
  requestHash: string;
  userId: string;
  cardId: string;
  /** The first answer's data (never a card number, CVC or PIN). */
  answer: { [key: string]: Json };
  at: string;
};

export type CardRequestEvent = { type: 'CardRequestAnswered'; data: CardRequestAnswered };
export interface CardRequestState {
  answered: CardRequestAnswered | null;
}

export const cardRequestStream = (uuid: string) => `cardrequest-${uuid}`;

/**
 * The answer kept under the key for this same request, null when nothing was made under it; another
 * request under the key (another call, body or user) is 422.
 */
export function answeredUnderKey(state: CardRequestState, request: { kind: CardRequestKind; requestHash: string; userId: string }): CardRequestAnswered | null {
  const answered = state.answered;
  if (!answered) return null;
  if (answered.kind !== request.kind || answered.requestHash !== request.requestHash || answered.userId !== request.userId)
    throw CARD_REFUSALS.idempotencyKeyReused();
  return answered;
}

export const cardRequestDecider: Decider<CardRequestState, { type: 'Answer'; data: CardRequestAnswered }, CardRequestEvent> = {
  initialState: () => ({ answered: null }),
  evolve: (state, event) => (state.answered ? state : { answered: event.data }),
  decide(command, state) {
    if (answeredUnderKey(state, command.data)) return [];
    return [{ type: 'CardRequestAnswered', data: command.data }];
  },
};

/**
 * An idempotency key names one request of one kind: the same key sent with a command of another kind
 * (a card call under a transfer's key, a deposit under a payout's) is another request, 422.
 */
export function refuseKeyMadeElsewhere(madeElsewhere: boolean): void {
  if (madeElsewhere) throw reusedKey();
}

export const reusedKey = () => CARD_REFUSALS.idempotencyKeyReused();
