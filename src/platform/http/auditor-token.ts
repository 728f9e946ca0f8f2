/**
 * The shape of an auditor token: `ta_`, the auditor's id as 32 hex digits, `_`, and 64 hex digits of
 * randomness. The prefix lets the request path refuse one sent to any other route without asking
 * anyone; the id lets the auditor's stream be read without an index of tokens.
 */
export const AUDITOR_TOKEN_PREFIX = 'ta_';

const AUDITOR_TOKEN = /^ta_([0-9a-f]{32})_[0-9a-f]{64}$/;

/** True for anything that claims to be an auditor token, well formed or not. */
export const looksLikeAuditorToken = (token: string) => token.startsWith(AUDITOR_TOKEN_PREFIX);

/** The auditor id (a UUID) a well-formed auditor token names, or null. */
export function auditorIdOf(token: string): string | null {
  const hex = AUDITOR_TOKEN.exec(token)?.[1];
  if (!hex) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
