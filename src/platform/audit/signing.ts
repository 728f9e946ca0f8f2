import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';

/** A checkpoint signing key as TALLY_KEYS and DATA_DIR/keys.json keep it: Ed25519, PKCS#8 DER in base64url. */
export interface AuditKey {
  kid: string;
  privateKey: string;
  createdAt: string;
}

/** A public key as GET /audit/v1/keys serves it (JWK, RFC 8037). */
export interface PublicJwk {
  kid: string;
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
}

/**
 * A new key. Its kid is the RFC 7638 thumbprint of its public JWK, so an auditor can check that a
 * kid names the key it comes with.
 */
export function newAuditKey(at = new Date()): AuditKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  return { kid: thumbprint(publicX(privateKey)), privateKey: der.toString('base64url'), createdAt: at.toISOString() };
}

export const privateKeyOf = (key: AuditKey): KeyObject => createPrivateKey({ key: Buffer.from(key.privateKey, 'base64url'), format: 'der', type: 'pkcs8' });

export function publicJwkOf(key: AuditKey): PublicJwk {
  return { kid: key.kid, kty: 'OKP', crv: 'Ed25519', x: publicX(privateKeyOf(key)) };
}

function publicX(privateKey: KeyObject): string {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new Error('an audit key must be Ed25519');
  return jwk.x;
}

/** RFC 7638: SHA-256 of the JWK's required members in lexicographic order, base64url. */
const thumbprint = (x: string): string => createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');

/** Ed25519 over the UTF-8 bytes of `text`, base64url without padding. */
export const signText = (key: KeyObject, text: string): string => sign(null, Buffer.from(text, 'utf8'), key).toString('base64url');

/** False for a malformed key or signature as for a wrong one: either way the text is not vouched for. */
export function verifyText(jwk: PublicJwk, text: string, signature: string): boolean {
  try {
    const key = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
    return verify(null, Buffer.from(text, 'utf8'), key, Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}
