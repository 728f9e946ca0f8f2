import { type Static, type TSchema, Type } from '@sinclair/typebox';
import BigNumber from 'bignumber.js';
import { type ProfileField, type ProfileFields, VERIFIED_IDENTITY_FIELDS } from '../../domain/identity';
import { routeFor } from '../../platform/http/route';
import { checkCountries, CountryField, FilledText, StringEnum, Success } from '../schemas';
import { READ_USER_REFUSALS, readableUser, WRITE_USER_REFUSALS, writableUser } from '../user-scope';
import { UserIdToRead, UserIdToWrite } from './user-id';
import { IDENTITY_REFUSALS as R } from '../../domain/identity';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['profiles', 'users'] as const;
const route = routeFor<AppServices>()(USES);

/** What each profile field holds, said once for the requests and the stored profile. */
const ABOUT: Record<ProfileField, string> = {
  firstName: 'The user’s first (given) name',
  middleName: 'The user’s middle name (not needed for a complete profile)',
  lastName: 'The user’s last (family) name',
  dateOfBirth: 'The user’s date of birth, `YYYY-MM-DD`',
  nationality: 'The user’s nationality, an ISO 3166-1 alpha-2 country code',
  gender: 'The user’s gender: `male`, `female` or `other`',
  governmentIdType: 'The kind of government ID: `passport`, `national_id`, `drivers_license` or `residence_permit`',
  governmentIdNumber: 'The number of the government ID',
  governmentIdCountry: 'The country that issued the government ID, an ISO 3166-1 alpha-2 country code',
  addressLine1: 'The first line of the user’s street address',
  addressLine2: 'The second line of the street address (not needed for a complete profile)',
  city: 'The city of the address',
  stateProvince: 'The state, province or region of the address',
  postalCode: 'The postal code of the address',
  addressCountry: 'The country of the address, an ISO 3166-1 alpha-2 country code',
  occupation: 'The user’s occupation (free text)',
  annualSalary: 'The user’s annual salary, a decimal >= 0 (the service states no currency)',
  accountPurpose: 'What the user will use the account for (free text)',
  expectedMonthlyVolume: 'The amount the user expects to move per month, a decimal >= 0 (the service states no currency)',
};
const VERIFIED: readonly string[] = VERIFIED_IDENTITY_FIELDS;
/** A request field's description: what it holds, how it is taken, and whether an approved KYC locks it. */
const told = (name: ProfileField, how: string) => `${ABOUT[name]}${how}${VERIFIED.includes(name) ? '. Cannot change once KYC is approved (409)' : ''}`;

const Text = (name: ProfileField) => ({ ...FilledText(name, 200), description: told(name, '; not blank, trimmed when stored') });
const Country = (name: ProfileField) => ({
  ...CountryField(name),
  description: told(name, ' that ISO has assigned (`ZZ` is 400), in any case; stored upper-cased'),
});
/** The profile's country fields: each an assigned ISO 3166-1 alpha-2 code (checkCountries). */
const COUNTRY_FIELDS = ['nationality', 'governmentIdCountry', 'addressCountry'] as const;
const Decimal = (name: ProfileField) =>
  Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: '^[0-9]{1,18}(\\.[0-9]{1,8})?$' })], {
    'x-error': `${name} must be a decimal number >= 0`,
    description: told(name, ': a JSON number, or a decimal string of at most 18 integer digits and 8 decimals; stored as a decimal string'),
  });

const fieldSchemas = {
  firstName: Text('firstName'),
  middleName: Text('middleName'),
  lastName: Text('lastName'),
  dateOfBirth: Type.String({
    format: 'date',
    'x-error': 'dateOfBirth must be a real date in YYYY-MM-DD format',
    description: told('dateOfBirth', ': a real date, not in the future, and the user 18 or older'),
  }),
  nationality: Country('nationality'),
  gender: StringEnum(['male', 'female', 'other'] as const, { description: told('gender', '') }),
  governmentIdType: StringEnum(['passport', 'national_id', 'drivers_license', 'residence_permit'] as const, {
    description: told('governmentIdType', ''),
  }),
  governmentIdNumber: Text('governmentIdNumber'),
  governmentIdCountry: Country('governmentIdCountry'),
  addressLine1: Text('addressLine1'),
  addressLine2: Text('addressLine2'),
  city: Text('city'),
  stateProvince: Text('stateProvince'),
  postalCode: Text('postalCode'),
  addressCountry: Country('addressCountry'),
  occupation: Text('occupation'),
  annualSalary: Decimal('annualSalary'),
  accountPurpose: Text('accountPurpose'),
  expectedMonthlyVolume: Decimal('expectedMonthlyVolume'),
} satisfies Record<ProfileField, TSchema>;

/** How the stored profile shows a field: countries upper-cased, decimals as canonical decimal strings. */
const STORED_AS: Partial<Record<ProfileField, string>> = {
  nationality: ', upper-cased',
  governmentIdCountry: ', upper-cased',
  addressCountry: ', upper-cased',
  annualSalary: ', as a decimal string (e.g. `85000`)',
  expectedMonthlyVolume: ', as a decimal string (e.g. `2500`)',
};

const optionalFields = Type.Partial(Type.Object(fieldSchemas)).properties;

const ProfileBody = Type.Object(optionalFields);
const PartnerProfileBody = Type.Object({ userId: UserIdToWrite, ...optionalFields });
const UserIdQuery = Type.Object({ userId: UserIdToRead });
/** The stored profile: every field as the string it was stored as (countries upper-cased, decimals canonical). */
export const ProfileView = Type.Object(
  {
    userId: Type.String({ description: 'The id of the user whose profile this is (a UUID)' }),
    createdAt: Type.String({ description: 'When the profile was created (ISO 8601, UTC)' }),
    updatedAt: Type.String({ description: 'When a field of the profile last changed (ISO 8601, UTC)' }),
    ...Object.fromEntries(
      (Object.keys(fieldSchemas) as ProfileField[]).map((name) => [
        name,
        Type.Optional(Type.String({ description: `${ABOUT[name]}${STORED_AS[name] ?? ''}; absent while not set` })),
      ]),
    ),
  },
  { $id: 'Profile' },
);

type Fields = Static<typeof ProfileBody>;

/** Countries checked and upper-cased, decimals as strings: what is stored is one canonical form. */
export function toProfileFields(body: Fields & { userId?: string }): ProfileFields {
  checkCountries(body, COUNTRY_FIELDS);
  const fields: ProfileFields = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === 'userId' || value === undefined) continue;
    let text = typeof value === 'number' ? new BigNumber(String(value)).toFixed() : String(value).trim();
    if ((COUNTRY_FIELDS as readonly string[]).includes(key)) text = text.toUpperCase();
    if (['annualSalary', 'expectedMonthlyVolume'].includes(key)) text = new BigNumber(text).toFixed();
    fields[key as keyof ProfileFields] = text;
  }
  return fields;
}

/** The profile rules on dateOfBirth the deciders hold (its format is the schema's first). */
// Not dateOfBirthInvalid: the body's schema refuses a date that is not real first (validation_error).
const DATE_OF_BIRTH_REFUSALS = [R.dateOfBirthInFuture, R.userUnderAge] as const;

const reply = (status: number, profile: unknown) => ({ status, body: { success: true, data: { profile } } });

export const profileRoutes = [
  route<Static<typeof PartnerProfileBody>>({
    method: 'post',
    path: '/api/v1/user/profile',
    auth: 'partner',
    tag: 'Profile',
    summary: 'Create the personal profile of a user (partial allowed; completion is checked separately).',
    body: PartnerProfileBody,
    responses: {
      201: { description: 'Created', schema: Success(Type.Object({ profile: ProfileView })) },
      403: { description: 'User does not belong to this partner' },
      409: { description: 'The profile already exists' },
    },
    refuses: [...WRITE_USER_REFUSALS, R.profileExists, ...DATE_OF_BIRTH_REFUSALS],
    async handler({ services, body, partnerId, command }) {
      const fields = toProfileFields(body);
      await writableUser(services, partnerId, body.userId);
      return reply(201, await services.profiles.create(partnerId, body.userId, fields, command()));
    },
  }),
  route<unknown, Static<typeof UserIdQuery>>({
    method: 'get',
    path: '/api/v1/user/profile',
    auth: 'partner',
    tag: 'Profile',
    summary: 'Read the personal profile of a user.',
    query: UserIdQuery,
    responses: { 200: { description: 'The profile', schema: Success(Type.Object({ profile: ProfileView })) } },
    refuses: [...READ_USER_REFUSALS, R.profileNotFound],
    async handler({ services, query, partnerId }) {
      await readableUser(services, partnerId, query.userId);
      return reply(200, await services.profiles.require(query.userId));
    },
  }),
  route<Static<typeof PartnerProfileBody>>({
    method: 'patch',
    path: '/api/v1/user/profile',
    auth: 'partner',
    tag: 'Profile',
    summary: 'Update (merge) the personal profile of a user.',
    body: PartnerProfileBody,
    responses: {
      200: { description: 'The profile', schema: Success(Type.Object({ profile: ProfileView })) },
      403: { description: 'User does not belong to this partner' },
      409: { description: 'Verified identity fields cannot be changed' },
    },
    refuses: [...WRITE_USER_REFUSALS, R.profileNotFound, R.verifiedFieldsLocked, ...DATE_OF_BIRTH_REFUSALS],
    async handler({ services, body, partnerId, command }) {
      const fields = toProfileFields(body);
      await writableUser(services, partnerId, body.userId);
      return reply(200, await services.profiles.update(body.userId, fields, command()));
    },
  }),
  route<unknown, Static<typeof UserIdQuery>>({
    method: 'get',
    path: '/api/v1/user/profile/check-completion',
    auth: 'partner',
    tag: 'Profile',
    summary: 'Whether the profile is complete (KYC-ready), and which required fields are missing.',
    query: UserIdQuery,
    responses: {
      200: {
        description: 'Completion',
        schema: Success(
          Type.Object(
            {
              isComplete: Type.Boolean({ description: 'True when every field a complete (KYC-ready) profile needs is set' }),
              missingFields: Type.Array(Type.String(), {
                description: 'The names of the required fields not yet set, in the profile’s field order; empty when complete',
              }),
            },
            { $id: 'ProfileCompletion' },
          ),
        ),
      },
    },
    refuses: [...READ_USER_REFUSALS, R.profileNotFound],
    async handler({ services, query, partnerId }) {
      await readableUser(services, partnerId, query.userId);
      return { status: 200, body: { success: true, data: await services.profiles.completion(query.userId) } };
    },
  }),
  route<Fields>({
    method: 'post',
    path: '/api/v1/auth/profile',
    auth: 'bearer',
    tag: 'Profile',
    summary: "Create the token user's personal profile.",
    body: ProfileBody,
    responses: { 201: { description: 'Created', schema: Success(Type.Object({ profile: ProfileView })) }, 409: { description: 'The profile already exists' } },
    refuses: [R.profileExists, ...DATE_OF_BIRTH_REFUSALS],
    async handler({ services, body, userId, partnerId, command }) {
      return reply(201, await services.profiles.create(partnerId, userId, toProfileFields(body), command()));
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/auth/profile',
    auth: 'bearer',
    tag: 'Profile',
    summary: "Read the token user's personal profile.",
    responses: { 200: { description: 'The profile', schema: Success(Type.Object({ profile: ProfileView })) } },
    refuses: [R.profileNotFound],
    async handler({ services, userId }) {
      return reply(200, await services.profiles.require(userId));
    },
  }),
  route<Fields>({
    method: 'patch',
    path: '/api/v1/auth/profile',
    auth: 'bearer',
    tag: 'Profile',
    summary: "Update (merge) the token user's personal profile.",
    body: ProfileBody,
    responses: {
      200: { description: 'The profile', schema: Success(Type.Object({ profile: ProfileView })) },
      409: { description: 'Verified identity fields cannot be changed' },
    },
    refuses: [R.profileNotFound, R.verifiedFieldsLocked, ...DATE_OF_BIRTH_REFUSALS],
    async handler({ services, body, userId, command }) {
      return reply(200, await services.profiles.update(userId, toProfileFields(body), command()));
    },
  }),
];
