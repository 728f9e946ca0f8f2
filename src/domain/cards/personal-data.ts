import type { PersonalFields } from '../../platform/sealing/personal-data';
import { keyOwner } from '../../platform/sealing/sealer';

/**
 * Cards' events that carry personal data (docs/decisions.md, "Personal data"), sealed in the log
 * under the card holder's data key: an application's address it was sent from and the profile
 * fields it copies. A card's events keep no name (only the last four digits and the expiry), and a
 * card transaction's only name is the merchant's, which is not personal data.
 */
export const CARD_PERSONAL_DATA: readonly PersonalFields[] = [
  {
    type: 'CardApplicationSubmitted',
    paths: ['ipAddress', 'occupation', 'annualSalary', 'accountPurpose', 'expectedMonthlyVolume'],
    owner: (data) => keyOwner.user(String(data.userId)),
  },
];
