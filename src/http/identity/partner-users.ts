import { type Static, Type } from '@sinclair/typebox';
import { USER_STATUSES } from '../../domain/identity/user';
import { summary } from '../../app/identity/users';
import { HttpError, MESSAGES } from '../../platform/http/errors';
import { routeFor } from '../../platform/http/route';
import { IsoDateTime, PageMeta, PageQuery, pageMeta, parseInstant, StringEnum, Success, User, UserSummary, UUID_RE } from '../schemas';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['users'] as const;
const route = routeFor<AppServices>()(USES);

const CreateUserBody = Type.Object({
  email: Type.String({ format: 'trimmed-email', maxLength: 254, 'x-error': 'email must be a valid email address' }),
  countryCode: Type.String({ minLength: 2, maxLength: 2, pattern: '^[A-Za-z]{2}$', 'x-error': 'countryCode must be exactly 2 characters' }),
  phoneNumber: Type.Optional(
    Type.String({ pattern: '^\\s*\\+[1-9][0-9]{6,14}\\s*$', 'x-error': 'phoneNumber must be in international format, e.g. +573001234567' }),
  ),
  language: Type.Optional(Type.String({ pattern: '^[a-z]{2}(-[A-Z]{2})?$', 'x-error': 'language must be a language code such as en or es' })),
});

const ListUsersQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(StringEnum(USER_STATUSES)),
  email: Type.Optional(Type.String({ maxLength: 254 })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 254 })),
  createdFrom: Type.Optional(IsoDateTime),
  createdTo: Type.Optional(IsoDateTime),
});

const UserIdParams = Type.Object({ userId: Type.String() });

export const partnerUserRoutes = [
  route<Static<typeof CreateUserBody>>({
    method: 'post',
    path: '/api/v1/partner/users',
    auth: 'partner',
    tag: 'Users',
    summary: 'Register an end-user (status pending). Email is unique across the service, case-insensitively.',
    body: CreateUserBody,
    responses: {
      201: { description: 'Created', schema: Type.Object({ success: Type.Literal(true), data: Type.Object({ user: UserSummary }), message: Type.String() }) },
      409: { description: 'The email is already registered' },
    },
    async handler({ services, body, partnerId, command }) {
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
    responses: { 200: { description: 'A page of users', schema: Success(Type.Object({ items: Type.Array(User), meta: PageMeta })) } },
    async handler({ services, query, partnerId }) {
      // Bounds outside 1970-9999 are 400 naming the field (year 0 would otherwise be the database's 500).
      for (const name of ['createdFrom', 'createdTo'] as const) {
        const bound = query[name];
        if (bound !== undefined) parseInstant(bound, name);
      }
      const { items, totalItems } = await services.users.list(partnerId, query);
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
    async handler({ services, params, partnerId }) {
      // Another partner's user, or a malformed id, is indistinguishable from a missing one.
      const user = UUID_RE.test(params.userId) ? await services.users.get(partnerId, params.userId) : null;
      if (!user) throw new HttpError(404, MESSAGES.userNotFound);
      return { status: 200, body: { success: true, data: { user } } };
    },
  }),
];
