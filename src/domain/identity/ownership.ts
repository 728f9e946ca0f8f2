import { DomainError } from '../../platform/decider';
import type { Refusal } from '../../platform/refusals';
import { IDENTITY_REFUSALS } from './refusals';

/**
 * Who may see or touch what a partner's users own: one rule for users, cards and transactions.
 * Another partner's thing does not exist for the caller (404: its existence is not theirs to learn);
 * another user's of the same partner is 403 (docs/decisions.md, "Errors").
 */
export interface OwnedBy {
  partnerId: string;
  userId: string;
}

/**
 * What a refusal of a thing's owner says: a refusal of the thing's capability (its own code), or,
 * while that capability has none for it, the bare message (the kind's default code).
 */
export type OwnershipRefusal = Refusal<[]> | string;

const refuse = (kind: 'not_found' | 'forbidden', how: OwnershipRefusal): DomainError => (typeof how === 'string' ? new DomainError(kind, how) : how());

/** A user a partner's write names: unknown 404 `User not found`, another partner's 403. */
export function requireUserOfPartner<User extends { partnerId: string }>(found: User | null, partnerId: string): User {
  if (!found) throw IDENTITY_REFUSALS.userNotFound();
  if (found.partnerId !== partnerId) throw IDENTITY_REFUSALS.userOfAnotherPartner();
  return found;
}

/** A thing of one of a partner's users, as a partner names it: unknown or another partner's is 404 `notFound`. */
export function requireOfPartner<Thing extends { partnerId: string }>(thing: Thing | null | undefined, partnerId: string, notFound: OwnershipRefusal): Thing {
  if (!thing || thing.partnerId !== partnerId) throw refuse('not_found', notFound);
  return thing;
}

/**
 * A thing a user names: unknown or another partner's is 404 `refusals.notFound`, another user's of
 * the same partner 403 `refusals.forbidden`. `owner` is null when the thing exists but its owner
 * is not known here (it is then someone else's).
 */
export function requireOwnedBy<Thing>(
  thing: Thing | null | undefined,
  owner: Partial<OwnedBy> | null,
  caller: OwnedBy,
  refusals: { notFound: OwnershipRefusal; forbidden: OwnershipRefusal },
): Thing {
  if (thing === null || thing === undefined || owner?.partnerId !== caller.partnerId) throw refuse('not_found', refusals.notFound);
  if (owner.userId !== caller.userId) throw refuse('forbidden', refusals.forbidden);
  return thing;
}
