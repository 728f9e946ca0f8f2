import { Type } from '@sinclair/typebox';
import type { UserService } from '../app/identity';
import { IDENTITY_REFUSALS } from '../domain/identity';
import { UUID_RE } from './schemas';

export const MISSING_USER_ID = 'Missing userId in request body or query params';

/** `userId` in a partner body or query: its absence has the interface's own message. */
export const UserIdField = Type.String({ minLength: 1, 'x-required-error': MISSING_USER_ID, 'x-error': 'userId must be a string' });

/** Reads: another partner's user, or none, is 404 "User not found" (READ_USER_REFUSALS). */
export async function readableUser(services: { users: Pick<UserService, 'get'> }, partnerId: string, userId: string) {
  const user = UUID_RE.test(userId) ? await services.users.get(partnerId, userId) : null;
  if (!user) throw IDENTITY_REFUSALS.userNotFound();
  return user;
}

/** Writes naming a user: another partner's is 403 "User does not belong to this partner" (WRITE_USER_REFUSALS). */
export async function writableUser(services: { users: Pick<UserService, 'requireOwned'> }, partnerId: string, userId: string) {
  if (!UUID_RE.test(userId)) throw IDENTITY_REFUSALS.userNotFound();
  return services.users.requireOwned(partnerId, userId);
}

/** What readableUser refuses, for a route's `refuses`. */
export const READ_USER_REFUSALS = [IDENTITY_REFUSALS.userNotFound] as const;
/** What writableUser refuses, for a route's `refuses`. */
export const WRITE_USER_REFUSALS = [IDENTITY_REFUSALS.userNotFound, IDENTITY_REFUSALS.userOfAnotherPartner] as const;
