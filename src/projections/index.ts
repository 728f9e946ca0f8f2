import type { Projection } from './projection';
import { partnersProjection } from './partners';
import { kycProjection, profilesProjection, sessionsProjection } from './identity';
import { cardsProjection } from './cards';
import { ledgerProjection } from './ledger';
import { usersProjection } from './users';

/** Every read model of the service. */
export const allProjections: Projection[] = [
  partnersProjection,
  usersProjection,
  profilesProjection,
  kycProjection,
  sessionsProjection,
  ledgerProjection,
  cardsProjection,
];
