import { createHash } from 'node:crypto';
import { verifySecret } from './secrets';
import { TooManyTries } from '../../platform/failures';

/** A verified (key, secret) pair is remembered this long after its last use. */
const VERIFIED_TTL_MS = 5 * 60_000;
/** A wrong secret presented again within this long is refused without scrypt. */
const WRONG_TTL_MS = 60_000;
/** scrypt checks a key may start at once; then one more every REFILL_MS. */
const BUDGET_PER_KEY = 4;
const REFILL_MS = 2_000;
/** Memory bounds: past them, the oldest entries are forgotten. */
const MAX_VERIFIED = 10_000;
const MAX_WRONG_PER_KEY = 1_000;
const MAX_KEYS = 10_000;

interface KeyChecks {
  /** scrypt checks the key may still start now (refilled with time). */
  budget: number;
  refilledAt: number;
  /** Wrong pairs, by digest, and until when they are remembered; oldest first. */
  wrong: Map<string, number>;
  /** Checks running now, by digest: the same pair again waits for its answer. */
  running: Map<string, Promise<boolean>>;
}

/**
 * The key's budget of secret checks is spent: nothing is known about this secret, so the answer is
 * "come back in `retryAfterSeconds`" (429 Too many requests), not "wrong credentials".
 */
export class TooManySecretChecks extends TooManyTries {
  override readonly name = 'TooManySecretChecks';
  constructor(retryAfterSeconds: number) {
    super('Too many secret checks for this API key', retryAfterSeconds);
  }
}

export interface StoredKey {
  apiKey: string;
  partnerId: string;
  secretHash: string;
}

/**
 * The secret check of a partner's key pair. scrypt runs on libuv's small thread pool, which every
 * request shares: a flood of wrong secrets for one key could queue seconds of scrypt in front of
 * another partner's first call. So a pair is scrypted only when it is neither known right nor known
 * wrong, and not already being checked, and each key has a small budget of checks that refills
 * slowly (docs/decisions.md, "Input and hardening": failed checks bounded per key, remembered briefly).
 * Past the budget, an unknown pair is not checked: the caller is told to come back when the budget
 * refills (TooManySecretChecks, a 429), never that the secret is wrong, since it may be the partner's
 * own right secret arriving behind someone else's flood. A right check gives its budget back and is
 * remembered, so a partner in use is never checked again. In process memory: a bound per node, which
 * is what protection needs.
 */
export class SecretChecks {
  private readonly verified = new Map<string, { partnerId: string; until: number }>();
  private readonly keys = new Map<string, KeyChecks>();

  constructor(
    private readonly verify: (secret: string, stored: string) => Promise<boolean> = verifySecret,
    private readonly now: () => number = Date.now,
  ) {}

  /** True for the right secret, false for a wrong one; throws TooManySecretChecks when it cannot tell now. */
  async check(key: StoredKey, secret: string): Promise<boolean> {
    const now = this.now();
    const pair = createHash('sha256').update(`${key.apiKey}\0${secret}`).digest('hex');
    const known = this.verified.get(pair);
    if (known && known.partnerId === key.partnerId && known.until > now) {
      known.until = now + VERIFIED_TTL_MS;
      return true;
    }
    const checks = this.checksOf(key.apiKey, now);
    const wrongUntil = checks.wrong.get(pair);
    if (wrongUntil !== undefined) {
      if (wrongUntil > now) return false;
      checks.wrong.delete(pair);
    }
    const running = checks.running.get(pair);
    if (running) return running;
    if (checks.budget < 1) throw new TooManySecretChecks(Math.max(1, Math.ceil((checks.refilledAt + REFILL_MS - now) / 1_000)));
    checks.budget -= 1;
    const result = this.verify(secret, key.secretHash)
      .then((ok) => {
        if (ok) {
          checks.budget = Math.min(BUDGET_PER_KEY, checks.budget + 1);
          if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
          this.verified.set(pair, { partnerId: key.partnerId, until: this.now() + VERIFIED_TTL_MS });
        } else {
          if (checks.wrong.size >= MAX_WRONG_PER_KEY) checks.wrong.delete(checks.wrong.keys().next().value as string);
          checks.wrong.set(pair, this.now() + WRONG_TTL_MS);
        }
        return ok;
      })
      .finally(() => checks.running.delete(pair));
    checks.running.set(pair, result);
    return result;
  }

  /** A revoked key's pairs must not be answered from memory. */
  forgetPartner(partnerId: string): void {
    for (const [pair, v] of this.verified) if (v.partnerId === partnerId) this.verified.delete(pair);
  }

  private checksOf(apiKey: string, now: number): KeyChecks {
    let checks = this.keys.get(apiKey);
    if (!checks) {
      if (this.keys.size >= MAX_KEYS) this.forgetIdleKeys(now);
      checks = { budget: BUDGET_PER_KEY, refilledAt: now, wrong: new Map(), running: new Map() };
      this.keys.set(apiKey, checks);
    }
    const refills = Math.floor((now - checks.refilledAt) / REFILL_MS);
    if (refills > 0) {
      checks.budget = Math.min(BUDGET_PER_KEY, checks.budget + refills);
      checks.refilledAt = checks.budget === BUDGET_PER_KEY ? now : checks.refilledAt + refills * REFILL_MS;
    }
    return checks;
  }

  private forgetIdleKeys(now: number): void {
    for (const [apiKey, c] of this.keys) {
      const full = c.budget + Math.floor((now - c.refilledAt) / REFILL_MS) >= BUDGET_PER_KEY;
      if (full && c.running.size === 0) this.keys.delete(apiKey);
    }
    if (this.keys.size >= MAX_KEYS) this.keys.clear();
  }
}
