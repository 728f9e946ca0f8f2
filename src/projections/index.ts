import type { Projection } from '../platform/consumers/projection';
import { kycProjection, partnersProjection, profilesProjection, sessionsProjection, usersProjection } from './identity';
import { auditProjection } from './audit';
import { cardsProjection } from './cards';
import { ledgerProjection } from './ledger';

/** Every read model of the service. */
export const allProjections: Projection[] = [
  partnersProjection,
  usersProjection,
  profilesProjection,
  kycProjection,
  sessionsProjection,
  ledgerProjection,
  cardsProjection,
  auditProjection,
];
