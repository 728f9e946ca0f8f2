import type { PersonalFields } from '../../platform/sealing/personal-data';
import { keyOwner } from '../../platform/sealing/sealer';

const ofUser = (data: { userId?: unknown }) => keyOwner.user(String(data.userId));

/**
 * Identity's events that carry personal data (docs/decisions.md, "Personal data"), sealed in the log
 * under the user's data key. The others carry none: a status change, a login code (its hash and the
 * user id, never the email), a session, a partner, the email reservation (its stream is named by a
 * hash of the address).
 */
export const IDENTITY_PERSONAL_DATA: readonly PersonalFields[] = [
  { type: 'UserRegistered', paths: ['email', 'phoneNumber'], owner: ofUser },
  // Every profile field: names, date of birth, nationality, government id, address, occupation, salary, ...
  { type: 'ProfileCreated', paths: ['fields.*'], owner: ofUser },
  { type: 'ProfileUpdated', paths: ['changes.*'], owner: ofUser },
  // The identity document as the provider read it: number, dates, country, type, image links.
  { type: 'KycStatusChanged', paths: ['document.*'], owner: ofUser },
];
