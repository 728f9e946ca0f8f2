import { type CardRequestKind, cardRequestDecider, cardRequestStream, answeredUnderKey } from '../../domain/cards/keyed';
import type { Append, Reads } from '../../platform/commands/command-handler';
import { at } from '../../platform/commands/command-handler';
import type { CommandContext } from '../../platform/commands/commands';
import { headerKey, type IdempotencyKeys, madeUnderKeyElsewhere, requestHashOf } from '../ledger';
import { refuseKeyMadeElsewhere } from '../../domain/cards/keyed';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A card call's idempotency key, resolved: the stream it names and the request's hash. */
export interface CardKey {
  /** The partner's key, as IdempotencyKeys knows copies in flight by. */
  key: string;
  /** The key as sent, and whose it is. */
  idempotencyKey: string;
  partnerId: string;
  uuid: string;
  kind: CardRequestKind;
  requestHash: string;
  userId: string;
  ctx: CommandContext;
}

/**
 * The one idempotency mechanism of the ledger (app/ledger/idempotency.ts) for card calls: a partner's
 * key names one request whichever route it went to, its copies in flight (of any keyed command, one
 * tracker) are refused (400), and what it made is kept in the stream it names, with the request's
 * hash and first answer.
 */
export function cardKey(
  user: { userId: string; partnerId: string },
  kind: CardRequestKind,
  request: object,
  idempotencyKey: string,
  ctx: CommandContext,
): CardKey {
  const keyed = headerKey(user.partnerId, idempotencyKey);
  const requestHash = requestHashOf({ kind, request, userId: user.userId });
  return {
    key: keyed.key,
    idempotencyKey,
    partnerId: user.partnerId,
    uuid: keyed.uuid,
    kind,
    requestHash,
    userId: user.userId,
    ctx: { ...ctx, commandId: `cards:${keyed.key}`, unkeyed: false },
  };
}

/** Runs `body` as the only copy of the key's request in this process (a second copy in flight is 400). */
export const exclusive = <T>(keys: IdempotencyKeys, key: CardKey | undefined, body: () => Promise<T>): Promise<T> =>
  key ? keys.run(key.key, 'refuse', body) : body();

/**
 * What was answered under the key before, null when nothing was made under it. A key that already
 * names what another kind of command made (a transfer, deposit or payout) is another request: 422.
 */
export async function answeredBefore(reads: Reads, key: CardKey): Promise<{ [key: string]: Json } | null> {
  const stored = await reads.stream(cardRequestStream(key.uuid), cardRequestDecider, { cached: false });
  const answered = answeredUnderKey(stored.state, key);
  if (answered) return answered.answer;
  refuseKeyMadeElsewhere(await madeUnderKeyElsewhere(reads, key.partnerId, key.idempotencyKey, 'card'));
  return null;
}

/** The append that keeps the first answer under the key (the key's stream is new: a race loses there). */
export function keepAnswer(key: CardKey, cardId: string, answer: { [key: string]: Json }, now: string): Append {
  const data = { uuid: key.uuid, kind: key.kind, requestHash: key.requestHash, userId: key.userId, cardId, answer, at: now };
  const events = cardRequestDecider.decide({ type: 'Answer', data }, cardRequestDecider.initialState());
  return { stream: cardRequestStream(key.uuid), events, expected: at({ revision: -1 }) };
}
