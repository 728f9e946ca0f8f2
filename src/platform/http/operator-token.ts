import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * True when `authorization` is `Bearer <token>`. Compares digests, so neither the length nor the
 * content of the operator token leaks through timing.
 */
export function carriesOperatorToken(authorization: string | undefined, token: string): boolean {
  const given = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}
