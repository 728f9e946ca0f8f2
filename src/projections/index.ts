import type { Projection } from '../platform/consumers/projection';
import { partnersProjection } from './identity/partners';
import { kycProjection, profilesProjection, sessionsProjection } from './identity/profiles-kyc-sessions';
import { cardsProjection } from './cards';
import { ledgerProjection } from './ledger';
import { usersProjection } from './identity/users';

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
