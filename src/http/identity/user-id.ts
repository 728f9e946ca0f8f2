import { UserIdField } from '../user-scope';

/** `userId` where a write names the user (body): described once for every identity route that takes it. */
export const UserIdToWrite = {
  ...UserIdField,
  description: 'The id of one of the partner’s users (a UUID): another partner’s user is 403 `User does not belong to this partner`, an unknown id 404',
};

/** `userId` where a read names the user (query): another partner's user reads as missing. */
export const UserIdToRead = {
  ...UserIdField,
  description: 'The id of one of the partner’s users (a UUID): an unknown id, or another partner’s user, is 404 `User not found`',
};
