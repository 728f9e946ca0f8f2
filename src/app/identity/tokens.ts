import { createHash, createHmac, createSecretKey, type KeyObject, randomBytes, randomInt } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { ServiceKeys } from '../../platform/keys';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 15 * 60;
export const TOKEN_ISSUER = 'tally';
export const TOKEN_AUDIENCE = 'tally-partner-api';
/** Pinned: a token naming any other algorithm (including `none`) is refused. */
const ALGORITHM = 'HS256' as const;
const VERIFIED_MAX = 50_000;
const VERIFIED_TTL_MS = 60_000;

export interface AccessClaims {
  userId: string;
  partnerId: string;
  sessionId: string;
}

export class TokenService {
  /** Key objects made once: given a string, jsonwebtoken first tries it as a public key on every call. */
  private readonly keyObjects: Map<string, KeyObject>;
  /**
   * Tokens already verified, by their exact text (signature included), until they expire or for a
   * minute at most: a client sends the same token on every request, and the keys are fixed for the
   * life of the process, so the same text gets the same answer without parsing and hashing it again.
   */
  private readonly verified = new Map<string, { claims: AccessClaims; until: number }>();

  constructor(private readonly keys: ServiceKeys) {
    this.keyObjects = new Map(keys.signing.map((k) => [k.kid, createSecretKey(Buffer.from(k.secret, 'utf8'))]));
  }

  issueAccessToken(claims: AccessClaims): string {
    const key = this.keys.signing[this.keys.signing.length - 1];
    if (!key) throw new Error('no signing key');
    return jwt.sign({ pid: claims.partnerId, sid: claims.sessionId }, this.keyObjects.get(key.kid) as KeyObject, {
      algorithm: ALGORITHM,
      keyid: key.kid,
      subject: claims.userId,
      issuer: TOKEN_ISSUER,
      audience: TOKEN_AUDIENCE,
      expiresIn: ACCESS_TOKEN_LIFETIME_SECONDS,
    });
  }

  /**
   * The claims of a valid token, `expired` for a token of ours past its time (its signature good), or
   * null (unknown kid, bad signature, wrong alg/iss/aud, malformed).
   */
  verifyAccessToken(token: string): AccessClaims | 'expired' | null {
    const known = this.verified.get(token);
    if (known) {
      if (known.until > Date.now()) return known.claims;
      this.verified.delete(token);
    }
    const claims = this.verifyAnew(token);
    if (claims === 'expired') return claims;
    if (claims) {
      if (this.verified.size >= VERIFIED_MAX) this.verified.clear();
      this.verified.set(token, claims);
    }
    return claims?.claims ?? null;
  }

  private verifyAnew(token: string): { claims: AccessClaims; until: number } | 'expired' | null {
    if (token.length > 4096) return null;
    const decoded = jwt.decode(token, { complete: true });
    if (!decoded || typeof decoded === 'string' || decoded.header.alg !== ALGORITHM) return null;
    const key = decoded.header.kid ? this.keyObjects.get(decoded.header.kid) : undefined;
    if (!key) return null;
    try {
      const payload = jwt.verify(token, key, { algorithms: [ALGORITHM], issuer: TOKEN_ISSUER, audience: TOKEN_AUDIENCE }) as jwt.JwtPayload;
      if (typeof payload.sub !== 'string' || typeof payload.pid !== 'string' || typeof payload.sid !== 'string') return null;
      if (typeof payload.exp !== 'number') return null;
      return {
        claims: { userId: payload.sub, partnerId: payload.pid, sessionId: payload.sid },
        until: Math.min(payload.exp * 1000, Date.now() + VERIFIED_TTL_MS),
      };
    } catch (error) {
      // jsonwebtoken checks the signature before the time: an expired token is one we signed.
      if (error instanceof jwt.TokenExpiredError) return 'expired';
      // Tampered or malformed: the same 401 to the caller, told apart from expired by its code.
      return null;
    }
  }

  /** Login codes are stored only as this keyed hash: a leaked log or table does not give them away. */
  codeHash(userId: string, code: string): string {
    return createHmac('sha256', this.keys.pepper).update(`${userId}:${code}`).digest('hex');
  }
}

/** 6 digits from the CSPRNG. */
export function newLoginCode(): string {
  return randomInt(0, 1_000_000).toString().padStart(6, '0');
}

/** Opaque refresh token that names its session; only the hash of its secret part is stored. */
export function newRefreshToken(sessionId: string): { token: string; hash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { token: `rt_${sessionId}_${secret}`, hash: refreshHash(secret) };
}

export function parseRefreshToken(token: string): { sessionId: string; hash: string } | null {
  const match = /^rt_([0-9a-f-]{36})_([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match?.[1] || !match[2]) return null;
  return { sessionId: match[1], hash: refreshHash(match[2]) };
}

const refreshHash = (secret: string) => createHash('sha256').update(secret).digest('hex');
