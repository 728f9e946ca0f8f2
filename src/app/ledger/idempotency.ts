import { DomainError } from '../../domain/decider';
import { uuidV5 } from '../../domain/ids';
import { canonicalJson, sha256Hex } from '../../eventstore/hash';
import { OverloadedError } from '../../eventstore/port';

/**
 * One mechanism for every keyed command (transfers and deposits keyed by `Idempotency-Key` or
 * `x-idempotency-key`, payouts by their `transactionId`): the key names the command's transaction
 * stream, whose TransactionCreated (or TransactionRejected) keeps the request's hash, and the
 * decision reads that stream first (domain `storedUnderKey`; payouts' `storedPayout`, which also
 * answers a stored refusal): the same request again is answered with what was made, another one
 * under the key is refused. Here: copies of a request running at
 * the same time in this process, refused (400) or made to wait for the first.
 */
export class IdempotencyKeys {
  private readonly running = new Map<string, Promise<unknown>>();
  /** Copies waiting per key ('wait'), bounded. */
  private readonly waiting = new Map<string, number>();

  constructor(private readonly maxWaiting = 100) {}

  async run<T>(key: string, copies: 'refuse' | 'wait', body: () => Promise<T>): Promise<T> {
    for (let earlier = this.running.get(key); earlier; earlier = this.running.get(key)) {
      if (copies === 'refuse') throw new DomainError('invalid', 'Duplicate request in progress');
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

/**
 * A partner's header key: one key names one request of that partner, whichever route it went to.
 * "transfer:" for every route: keys stored before deposits took keys still name the same uuid.
 */
export function headerKey(partnerId: string, idempotencyKey: string): { key: string; uuid: string; commandId: string } {
  const key = `${partnerId}:${idempotencyKey.toLowerCase()}`;
  return { key, uuid: uuidV5(`transfer:${key}`), commandId: `transfer:${key}` };
}

/** The hash a keyed request is known by (its canonical JSON: the same request written another way is the same). */
export const requestHashOf = (request: object): string => sha256Hex(canonicalJson(request));
