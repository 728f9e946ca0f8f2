import type { PersonalFields } from '../../platform/sealing/personal-data';
import { keyOwner } from '../../platform/sealing/sealer';

/**
 * The ledger's events that carry personal data (docs/decisions.md, "Personal data"), sealed in the
 * log under the user's data key: a payout's bank account as the user gave it (the holder's name and
 * document number, the account number) and the source handed to the provider as sent. Amounts,
 * accounts, statuses and a transfer's description stay in clear: a transfer's TransactionCreated
 * carries none of these paths, and costs nothing to seal (PersonalData.concerns).
 */
export const LEDGER_PERSONAL_DATA: readonly PersonalFields[] = [
  {
    type: 'TransactionCreated',
    paths: [
      'details.request.destination.ownerName',
      'details.request.destination.ownerDocumentNumber',
      'details.request.destination.accountNumber',
      'details.request.source.*',
    ],
    owner: (data) => keyOwner.user(String(data.userId)),
  },
];
