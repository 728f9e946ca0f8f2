import { cardRequestDecider, cardRequestStream } from '../../domain/cards';
import { uuidV5 } from '../../platform/ids';
import { transactionDecider, transactionStream } from '../../domain/ledger/transaction';
import { userDecider, userStream } from '../../domain/identity';
import { canonicalJson, sha256Hex } from '../../eventstore/hash';
import { OverloadedError } from '../../eventstore/port';
import type { Reads } from '../../platform/commands/command-handler';
import { LEDGER_REFUSALS } from '../../domain/ledger/refusals';

/** The refusal of a request under a key that another request (of any kind) was made under. */

/**
 * One mechanism for every keyed command (transfers, deposits and card calls keyed by
 * `Idempotency-Key` or `x-idempotency-key`, payouts by their `transactionId`), in one key space per
 * partner: the key names the command's stream (a transaction's, or a card request's), which keeps
 * the request's hash, and the decision reads that stream first (domain `storedUnderKey`, payouts'
 * `storedPayout`, cards' `answeredUnderKey`): the same request again is answered with what was made,
 * another one under the key is refused; what another kind of command made under the key refuses it
 * too (`madeUnderKeyElsewhere`). Here: copies running at the same time in this process, whatever
 * their kind (one tracker, `partnerKey`), refused (400) or made to wait for the first.
 */
export class IdempotencyKeys {
  private readonly running = new Map<string, Promise<unknown>>();
  /** Copies waiting per key ('wait'), bounded. */
  private readonly waiting = new Map<string, number>();

  constructor(private readonly maxWaiting = 100) {}

  async run<T>(key: string, copies: 'refuse' | 'wait', body: () => Promise<T>): Promise<T> {
    for (let earlier = this.running.get(key); earlier; earlier = this.running.get(key)) {
      if (copies === 'refuse') throw LEDGER_REFUSALS.duplicateRequestInProgress();
      await this.waitFor(key, earlier);
    }
    const mine = body();
    this.running.set(key, mine);
    try {
      return await mine;
    } finally {
      if (this.running.get(key) === mine) this.running.delete(key);
    }
  }

  /** Its outcome is its own caller's: this copy only waits for it to be over, then decides alone. */
  private async waitFor(key: string, earlier: Promise<unknown>): Promise<void> {
    const waiting = this.waiting.get(key) ?? 0;
    if (waiting >= this.maxWaiting) throw new OverloadedError(`${waiting} copies of one request wait`);
    this.waiting.set(key, waiting + 1);
    try {
      await Promise.allSettled([earlier]);
    } finally {
      const left = (this.waiting.get(key) ?? 1) - 1;
      if (left === 0) this.waiting.delete(key);
      else this.waiting.set(key, left);
    }
  }
}

/** How the in-flight tracker knows a partner's key, whichever command it came with. */
export const partnerKey = (partnerId: string, idempotencyKey: string): string => `${partnerId}:${idempotencyKey.toLowerCase()}`;

/**
 * A partner's header key: one key names one request of that partner, whichever route it went to.
 * "transfer:" for every route: keys stored before deposits took keys still name the same uuid.
 */
export function headerKey(partnerId: string, idempotencyKey: string): { key: string; uuid: string; commandId: string } {
  const key = partnerKey(partnerId, idempotencyKey);
  return { key, uuid: uuidV5(`transfer:${key}`), commandId: `transfer:${key}` };
}

/** The hash a keyed request is known by (its canonical JSON: the same request written another way is the same). */
export const requestHashOf = (request: object): string => sha256Hex(canonicalJson(request));

/** The streams a partner's key names, by the kind of command that keeps its request there. */
export type KeyedStreamKind = 'transaction' | 'card' | 'payout';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a command of another kind already made something under the partner's key: a transfer or
 * deposit (the transaction stream the header key names), a card call (the card request stream it
 * names), a payout (the transaction stream its transactionId names, when the key is a UUID, and the
 * payout is the partner's). `mine`: the kind asking, whose own stream its decision reads itself.
 */
export async function madeUnderKeyElsewhere(reads: Reads, partnerId: string, idempotencyKey: string, mine: KeyedStreamKind): Promise<boolean> {
  const { uuid } = headerKey(partnerId, idempotencyKey);
  const found: Array<Promise<boolean>> = [];
  if (mine !== 'transaction')
    found.push(
      reads.stream(transactionStream(uuid), transactionDecider, { cached: false }).then((t) => t.state.created !== null || t.state.rejection !== null),
    );
  if (mine !== 'card') found.push(reads.stream(cardRequestStream(uuid), cardRequestDecider, { cached: false }).then((r) => r.state.answered !== null));
  if (mine !== 'payout' && UUID.test(idempotencyKey)) found.push(payoutOfPartner(reads, partnerId, idempotencyKey.toLowerCase()));
  return (await Promise.all(found)).some(Boolean);
}

/** A payout (made or refused) whose transactionId is `uuid`, of one of the partner's users. */
async function payoutOfPartner(reads: Reads, partnerId: string, uuid: string): Promise<boolean> {
  const { state } = await reads.stream(transactionStream(uuid), transactionDecider, { cached: false });
  if (state.created) return state.created.kind === 'PAYOUT' && state.created.partnerId === partnerId;
  if (!state.rejection) return false;
  const user = await reads.stream(userStream(state.rejection.userId), userDecider);
  return user.state.partnerId === partnerId;
}
