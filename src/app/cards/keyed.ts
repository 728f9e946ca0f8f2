import { type CardRequestKind, cardRequestDecider, cardRequestStream, answeredUnderKey, REUSED_KEY } from '../../domain/cards/keyed';
import { DomainError } from '../../domain/decider';
import { transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import type { Append, Reads } from '../command-handler';
import { at } from '../command-handler';
import type { CommandContext } from '../commands';
import { headerKey, type IdempotencyKeys, requestHashOf } from '../ledger/idempotency';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A card call's idempotency key, resolved: the stream it names and the request's hash. */
export interface CardKey {
  /** The partner's key, as IdempotencyKeys knows copies in flight by. */
  key: string;
  uuid: string;
  kind: CardRequestKind;
  requestHash: string;
  userId: string;
  ctx: CommandContext;
}

/**
 * The one idempotency mechanism of the ledger (app/ledger/idempotency.ts) for card calls: a partner's
 * key names one request whichever route it went to, its copies in flight are refused (400), and what
 * it made is kept in the stream it names, with the request's hash and first answer.
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
  return { key: keyed.key, uuid: keyed.uuid, kind, requestHash, userId: user.userId, ctx: { ...ctx, commandId: `cards:${keyed.key}`, unkeyed: false } };
}

/** Runs `body` as the only copy of the key's request in this process (a second copy in flight is 400). */
export const exclusive = <T>(keys: IdempotencyKeys, key: CardKey | undefined, body: () => Promise<T>): Promise<T> =>
  key ? keys.run(key.key, 'refuse', body) : body();

/**
 * What was answered under the key before, null when nothing was made under it. A key that already
 * names a ledger transaction (a transfer or deposit made with it) is another request: 422.
 */
export async function answeredBefore(reads: Reads, key: CardKey): Promise<{ [key: string]: Json } | null> {
  const [stored, txn] = await Promise.all([
    reads.stream(cardRequestStream(key.uuid), cardRequestDecider, { cached: false }),
    reads.stream(transactionStream(key.uuid), transactionDecider, { cached: false }),
  ]);
  if (txn.state.created || txn.state.rejection) throw new DomainError('unprocessable', REUSED_KEY);
  return answeredUnderKey(stored.state, key)?.answer ?? null;
}

/** The append that keeps the first answer under the key (the key's stream is new: a race loses there). */
export function keepAnswer(key: CardKey, cardId: string, answer: { [key: string]: Json }, now: string): Append {
  const data = { uuid: key.uuid, kind: key.kind, requestHash: key.requestHash, userId: key.userId, cardId, answer, at: now };
  const events = cardRequestDecider.decide({ type: 'Answer', data }, cardRequestDecider.initialState());
  return { stream: cardRequestStream(key.uuid), events, expected: at({ revision: -1 }) };
}
