import { CARD_PERSONAL_DATA } from '../domain/cards/personal-data';
import { IDENTITY_PERSONAL_DATA } from '../domain/identity/personal-data';
import { LEDGER_PERSONAL_DATA } from '../domain/ledger/personal-data';
import type { PersonalFields } from '../platform/sealing/personal-data';

/**
 * Every event type's personal fields, as each capability declares them: the composition root gives
 * them to the sealed store, and names this module to the projection thread, which loads it.
 */
export const personalData: readonly PersonalFields[] = [...IDENTITY_PERSONAL_DATA, ...CARD_PERSONAL_DATA, ...LEDGER_PERSONAL_DATA];
