import { LIMITS } from '../limits';
/**
 * Token buckets, one per key (partner key, user, client IP): `rps` tokens a second, bursts of
 * twice that. In process memory: a limit per node, which is what a rate limit needs to be (it is
 * protection, not accounting). 0 turns a limiter off.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private static readonly MAX_KEYS = LIMITS.http.rateLimiterKeys;

  constructor(private readonly rps: number) {}

  /** 0 when allowed, else the seconds to wait before retrying. */
  take(key: string, now = Date.now()): number {
    if (this.rps <= 0) return 0;
    const capacity = this.rps * 2;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= RateLimiter.MAX_KEYS) this.evictFull(now);
      bucket = { tokens: capacity, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.rps);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.rps));
  }

  private evictFull(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.rps >= this.rps * 2) this.buckets.delete(key);
    }
    if (this.buckets.size >= RateLimiter.MAX_KEYS) this.buckets.clear();
  }
}
