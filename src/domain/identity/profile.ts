import type { Decider } from '../../platform/decider';
import { IDENTITY_REFUSALS as R } from './refusals';

/** The 17 fields a profile needs to be complete (KYC-ready), in the interface's order. */
export const REQUIRED_PROFILE_FIELDS = [
  'firstName',
  'lastName',
  'dateOfBirth',
  'nationality',
  'gender',
  'governmentIdType',
  'governmentIdNumber',
  'governmentIdCountry',
  'addressLine1',
  'city',
  'stateProvince',
  'postalCode',
  'addressCountry',
  'occupation',
  'annualSalary',
  'accountPurpose',
  'expectedMonthlyVolume',
] as const;

export const OPTIONAL_PROFILE_FIELDS = ['middleName', 'addressLine2'] as const;

export type ProfileField = (typeof REQUIRED_PROFILE_FIELDS)[number] | (typeof OPTIONAL_PROFILE_FIELDS)[number];
export type ProfileFields = Partial<Record<ProfileField, string>>;

export const MINIMUM_AGE_YEARS = 18;

/** What an approved KYC verified: from then on these stay as they were (decisions, "Profile"). */
export const VERIFIED_IDENTITY_FIELDS = [
  'firstName',
  'lastName',
  'dateOfBirth',
  'nationality',
  'governmentIdType',
  'governmentIdNumber',
  'governmentIdCountry',
] as const satisfies readonly ProfileField[];

export type ProfileEvent =
  | { type: 'ProfileCreated'; data: { userId: string; partnerId: string; fields: ProfileFields } }
  | { type: 'ProfileUpdated'; data: { userId: string; changes: ProfileFields } };

export type ProfileCommand =
  | { type: 'CreateProfile'; userId: string; partnerId: string; fields: ProfileFields; today: string }
  /** `identityVerified`: the user's KYC has been approved (a fact the caller reads from the KYC stream). */
  | { type: 'UpdateProfile'; userId: string; changes: ProfileFields; today: string; identityVerified: boolean };

export interface ProfileState {
  exists: boolean;
  fields: ProfileFields;
}

export const profileStream = (userId: string) => `profile-${userId}`;

export function missingFields(fields: ProfileFields): string[] {
  return REQUIRED_PROFILE_FIELDS.filter((f) => !(fields[f] ?? '').toString().trim());
}

/** Age in whole years on `today` (both YYYY-MM-DD). */
export function ageOn(dateOfBirth: string, today: string): number {
  const [by, bm, bd] = dateOfBirth.split('-').map(Number) as [number, number, number];
  const [ty, tm, td] = today.split('-').map(Number) as [number, number, number];
  return ty - by - (tm < bm || (tm === bm && td < bd) ? 1 : 0);
}

function checkRules(fields: ProfileFields, today: string): void {
  const dob = fields.dateOfBirth;
  if (dob !== undefined) {
    const date = new Date(`${dob}T00:00:00Z`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(dob) || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== dob) {
      throw R.dateOfBirthInvalid();
    }
    if (dob > today) throw R.dateOfBirthInFuture();
    if (ageOn(dob, today) < MINIMUM_AGE_YEARS) throw R.userUnderAge(String(MINIMUM_AGE_YEARS));
  }
}

export const profileDecider: Decider<ProfileState, ProfileCommand, ProfileEvent> = {
  initialState: () => ({ exists: false, fields: {} }),

  evolve(state, event) {
    switch (event.type) {
      case 'ProfileCreated':
        return { exists: true, fields: { ...event.data.fields } };
      case 'ProfileUpdated':
        return { ...state, fields: { ...state.fields, ...event.data.changes } };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'CreateProfile':
        if (state.exists) throw R.profileExists(command.userId);
        checkRules(command.fields, command.today);
        return [{ type: 'ProfileCreated', data: { userId: command.userId, partnerId: command.partnerId, fields: command.fields } }];
      case 'UpdateProfile': {
        if (!state.exists) throw R.profileNotFound(command.userId);
        checkRules(command.changes, command.today);
        const changes = Object.fromEntries(Object.entries(command.changes).filter(([k, v]) => state.fields[k as ProfileField] !== v)) as ProfileFields;
        if (command.identityVerified) {
          const changed = VERIFIED_IDENTITY_FIELDS.filter((field) => changes[field] !== undefined);
          if (changed.length) throw R.verifiedFieldsLocked(changed.join(', '));
        }
        return Object.keys(changes).length ? [{ type: 'ProfileUpdated', data: { userId: command.userId, changes } }] : [];
      }
    }
  },
};
