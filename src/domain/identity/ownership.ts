import { DomainError } from '../../platform/decider';

/**
 * Who may see or touch what a partner's users own: one rule for users, cards and transactions.
 * Another partner's thing does not exist for the caller (404: its existence is not theirs to learn);
 * another user's of the same partner is 403 (docs/decisions.md, "Errors").
 */
export interface OwnedBy {
  partnerId: string;
  userId: string;
}

/** A user a partner's write names: unknown 404 `User not found`, another partner's 403. */
export function requireUserOfPartner<User extends { partnerId: string }>(found: User | null, partnerId: string): User {
  if (!found) throw new DomainError('not_found', 'User not found');
  if (found.partnerId !== partnerId) throw new DomainError('forbidden', 'User does not belong to this partner');
  return found;
}

/** A thing of one of a partner's users, as a partner names it: unknown or another partner's is 404 `notFound`. */
export function requireOfPartner<Thing extends { partnerId: string }>(thing: Thing | null | undefined, partnerId: string, notFound: string): Thing {
  if (!thing || thing.partnerId !== partnerId) throw new DomainError('not_found', notFound);
  return thing;
}

/**
 * A thing a user names: unknown or another partner's is 404 `messages.notFound`, another user's of
 * the same partner 403 `messages.forbidden`. `owner` is null when the thing exists but its owner
 * is not known here (it is then someone else's).
 */
export function requireOwnedBy<Thing>(
  thing: Thing | null | undefined,
  owner: Partial<OwnedBy> | null,
  caller: OwnedBy,
  messages: { notFound: string; forbidden: string },
): Thing {
  if (thing === null || thing === undefined || owner?.partnerId !== caller.partnerId) throw new DomainError('not_found', messages.notFound);
  if (owner.userId !== caller.userId) throw new DomainError('forbidden', messages.forbidden);
  return thing;
}
