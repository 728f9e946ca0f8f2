import { type Static, type TSchema, Type } from '@sinclair/typebox';
import BigNumber from 'bignumber.js';
import type { ProfileFields } from '../../domain/identity/profile';
import { routeFor } from '../../platform/http/route';
import { checkCountries, CountryField, FilledText, StringEnum, Success } from '../schemas';
import { READ_USER_REFUSALS, readableUser, UserIdField, WRITE_USER_REFUSALS, writableUser } from '../user-scope';
import { IDENTITY_REFUSALS as R } from '../../domain/identity';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['profiles', 'users'] as const;
const route = routeFor<AppServices>()(USES);

const Text = (name: string) => FilledText(name, 200);
const Country = CountryField;
/** The profile's country fields: each an assigned ISO 3166-1 alpha-2 code (checkCountries). */
const COUNTRY_FIELDS = ['nationality', 'governmentIdCountry', 'addressCountry'] as const;
const Decimal = (name: string) =>
  Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: '^[0-9]{1,18}(\\.[0-9]{1,8})?$' })], {
    'x-error': `${name} must be a decimal number >= 0`,
  });

const fieldSchemas = {
  firstName: Text('firstName'),
  middleName: Text('middleName'),
  lastName: Text('lastName'),
  dateOfBirth: Type.String({ format: 'date', 'x-error': 'dateOfBirth must be a real date in YYYY-MM-DD format' }),
  nationality: Country('nationality'),
  gender: StringEnum(['male', 'female', 'other'] as const),
  governmentIdType: StringEnum(['passport', 'national_id', 'drivers_license', 'residence_permit'] as const),
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
} satisfies Record<string, TSchema>;

const optionalFields = Type.Partial(Type.Object(fieldSchemas)).properties;

const ProfileBody = Type.Object(optionalFields);
const PartnerProfileBody = Type.Object({ userId: UserIdField, ...optionalFields });
const UserIdQuery = Type.Object({ userId: UserIdField });
/** The stored profile: every field as the string it was stored as (countries upper-cased, decimals canonical). */
const ProfileView = Type.Object(
  {
    userId: Type.String(),
    createdAt: Type.String(),
    updatedAt: Type.String(),
    ...Object.fromEntries(Object.keys(fieldSchemas).map((name) => [name, Type.Optional(Type.String())])),
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
const DATE_OF_BIRTH_REFUSALS = [R.dateOfBirthInvalid, R.dateOfBirthInFuture, R.userUnderAge] as const;

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
        schema: Success(Type.Object({ isComplete: Type.Boolean(), missingFields: Type.Array(Type.String()) }, { $id: 'ProfileCompletion' })),
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
