import { type Static, Type } from '@sinclair/typebox';
import { USER_STATUSES } from '../../domain/identity/user';
import { summary } from '../../app/identity/users';
import { IDENTITY_REFUSALS } from '../../domain/identity';
import { routeFor } from '../../platform/http/route';
import {
  checkCountries,
  COUNTRY_DESCRIPTION,
  DateFilter,
  instantOf,
  PageMeta,
  PageQuery,
  pageMeta,
  StringEnum,
  Success,
  User,
  UserSummary,
  UUID_RE,
} from '../schemas';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['users'] as const;
const route = routeFor<AppServices>()(USES);

const CreateUserBody = Type.Object({
  email: Type.String({
    format: 'trimmed-email',
    maxLength: 254,
    'x-error': 'email must be a valid email address',
    description: 'The user’s email: trimmed and lower-cased before it is stored; unique across the service, whatever its case (409 when taken)',
  }),
  // Not two characters: the interface's own message; two that are no assigned code (`ZZ`, `12`): checkCountries'.
  countryCode: Type.String({ minLength: 2, maxLength: 2, 'x-error': 'countryCode must be exactly 2 characters', description: COUNTRY_DESCRIPTION }),
  phoneNumber: Type.Optional(
    Type.String({
      pattern: '^\\s*\\+[1-9][0-9]{6,14}\\s*$',
      'x-error': 'phoneNumber must be in international format, e.g. +573001234567',
      description: 'The user’s phone number in E.164 format: `+` and 7 to 15 digits (e.g. `+573001234567`); surrounding spaces are trimmed',
    }),
  ),
  language: Type.Optional(
    Type.String({
      pattern: '^[a-z]{2}(-[A-Z]{2})?$',
      'x-error': 'language must be a language code such as en or es',
      description: 'The user’s language: two lower-case letters, optionally a hyphen and two upper-case letters of region (`en`, `es-CO`); `en` when left out',
    }),
  ),
});

const ListUsersQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(USER_STATUSES, { description: 'Only users in this status' })),
  email: Type.Optional(Type.String({ maxLength: 254, description: 'Only the user with this email (compared trimmed and lower-cased)' })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Only users whose email contains this text (trimmed, any case)' })),
  createdFrom: Type.Optional(DateFilter('createdFrom', 'lower')),
  createdTo: Type.Optional(DateFilter('createdTo', 'upper')),
});

const UserIdParams = Type.Object({
  userId: Type.String({ description: 'The user’s id (a UUID); another partner’s user, or an id that is not a UUID, is 404 `User not found`' }),
});

export const partnerUserRoutes = [
  route<Static<typeof CreateUserBody>>({
    method: 'post',
    path: '/api/v1/partner/users',
    auth: 'partner',
    tag: 'Users',
    summary: 'Register an end-user (status pending). Email is unique across the service, case-insensitively.',
    body: CreateUserBody,
    responses: {
      201: {
        description: 'Created',
        schema: Type.Object({
          success: Type.Literal(true, { description: 'Always true' }),
          data: Type.Object({ user: UserSummary }, { description: 'The registered user, in status `pending`' }),
          message: Type.String({ description: 'Always `User created`' }),
        }),
      },
      409: { description: 'The email is already registered' },
    },
    refuses: [IDENTITY_REFUSALS.emailTaken],
    async handler({ services, body, partnerId, command }) {
      checkCountries(body, ['countryCode']);
      const user = await services.users.register(partnerId, body, command());
      return { status: 201, body: { success: true, data: { user: summary(user) }, message: 'User created' } };
    },
  }),
  route<unknown, Static<typeof ListUsersQuery>>({
    method: 'get',
    path: '/api/v1/partner/users',
    auth: 'partner',
    tag: 'Users',
    summary: "List the partner's users, newest first, with filters and pagination.",
    query: ListUsersQuery,
    responses: {
      200: {
        description: 'A page of users',
        schema: Success(Type.Object({ items: Type.Array(User, { description: 'This page’s users, newest first' }), meta: PageMeta })),
      },
    },
    async handler({ services, query, partnerId }) {
      // Each bound as the instant it names (a date alone: its start, UTC), never the database's reading
      // of the text; outside 1970-9999 it is 400 naming the field (year 0 would otherwise be a 500).
      const createdFrom = query.createdFrom === undefined ? undefined : instantOf(query.createdFrom, 'createdFrom');
      const createdTo = query.createdTo === undefined ? undefined : instantOf(query.createdTo, 'createdTo');
      const { items, totalItems } = await services.users.list(partnerId, { ...query, createdFrom, createdTo });
      return { status: 200, body: { success: true, data: { items, meta: pageMeta(totalItems, query.page, query.limit) } } };
    },
  }),
  route<unknown, unknown, Static<typeof UserIdParams>>({
    method: 'get',
    path: '/api/v1/partner/users/{userId}',
    auth: 'partner',
    tag: 'Users',
    summary: 'Full details of one user, including status (partners poll it).',
    params: UserIdParams,
    responses: { 200: { description: 'The user', schema: Success(Type.Object({ user: User })) } },
    refuses: [IDENTITY_REFUSALS.userNotFound],
    async handler({ services, params, partnerId }) {
      // Another partner's user, or a malformed id, is indistinguishable from a missing one.
      const user = UUID_RE.test(params.userId) ? await services.users.get(partnerId, params.userId) : null;
      if (!user) throw IDENTITY_REFUSALS.userNotFound();
      return { status: 200, body: { success: true, data: { user } } };
    },
  }),
];
