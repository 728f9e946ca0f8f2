import type { TString } from '@sinclair/typebox';
import { DateFilter } from '../schemas';

/**
 * An instant a request names: as every date filter takes it (a full ISO 8601 date-time, UTC without
 * an offset, or a date alone meaning 00:00 UTC), read with instantOf; `description` says what it is.
 */
export const Instant = (name: string, description: string): TString => ({ ...DateFilter(name, 'lower'), description });
