import type { Projection } from './projection';
import { partnersProjection } from './partners';
import { usersProjection } from './users';

/** Every read model of the service. */
export const allProjections: Projection[] = [partnersProjection, usersProjection];
