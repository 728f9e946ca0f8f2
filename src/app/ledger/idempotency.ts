import { DomainError } from '../../domain/decider';
import { uuidV5 } from '../../domain/ids';
import { canonicalJson, sha256Hex } from '../../eventstore/hash';

/**
 * A partner's idempotency key (`Idempotency-Key` or `x-idempotency-key`) on the ledger's POSTs
 * (transfers, deposits): one key names one request of that partner, whichever route it went to. The request made under it takes the uuid
 * derived from the key, and its TransactionCreated keeps the request's hash: the same request again
 * finds it and gets the first answer; another request under the key is 422. A copy sent while the
 * first still runs in this process is 400.
 */
export class IdempotencyKeys {
  /** partner:key of the keyed requests running in this process. */
  private readonly inFlight = new Set<string>();

  /** Runs `body` with the transaction uuid the key names; 400 while a copy of it runs here. */
  async run<T>(partnerId: string, idempotencyKey: string, body: (keyed: { uuid: string; commandId: string }) => Promise<T>): Promise<T> {
    const key = `${partnerId}:${idempotencyKey.toLowerCase()}`;
    if (this.inFlight.has(key)) throw new DomainError('invalid', 'Duplicate request in progress');
    this.inFlight.add(key);
    try {
      // "transfer:" for every route: keys stored before deposits took keys still name the same uuid.
      return await body({ uuid: uuidV5(`transfer:${key}`), commandId: `transfer:${key}` });
    } finally {
      this.inFlight.delete(key);
    }
  }
}

/** The hash a keyed request is known by (its canonical JSON: the same request written another way is the same). */
export const requestHashOf = (request: object): string => sha256Hex(canonicalJson(request));

/** What is stored under a key is this request, or the key was reused for another one: 422. */
export function sameRequest(stored: { kind: string; requestHash: string | null }, kind: string, requestHash: string): void {
  if (stored.kind !== kind || stored.requestHash !== requestHash) throw new DomainError('unprocessable', 'Idempotency key reused with different parameters');
}
