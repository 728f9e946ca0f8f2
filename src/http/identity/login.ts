import { type Static, Type } from '@sinclair/typebox';
import { SEND_MESSAGE } from '../../app/identity/login';
import { IDENTITY_REFUSALS } from '../../domain/identity';
import { routeFor } from '../../platform/http/route';
import { MessageBody } from '../schemas';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['login'] as const;
const route = routeFor<AppServices>()(USES);

const EmailBody = Type.Object({
  email: Type.String({
    format: 'trimmed-email',
    maxLength: 254,
    'x-error': 'email must be a valid email address',
    description: 'The email of one of the partner’s users (any case); the answer is the same whether or not it is registered',
  }),
});
const VerifyBody = Type.Object({
  email: Type.String({
    format: 'trimmed-email',
    maxLength: 254,
    'x-error': 'email must be a valid email address',
    description: 'The email the code was sent to (any case)',
  }),
  code: Type.String({
    pattern: '^[0-9]{6}$',
    'x-error': 'code must be a string of 6 digits',
    description: 'The 6-digit code from the email, as a string; it lives 10 minutes, a new send replaces it, and 5 wrong tries burn it',
  }),
});
const RefreshBody = Type.Object({
  refreshToken: Type.String({
    minLength: 1,
    maxLength: 512,
    description: 'A refresh token answered by verify or refresh (opaque, 30 days): refresh spends it, logout ends its session',
  }),
});
const LoginResult = Type.Object(
  {
    success: Type.Boolean({ description: 'Always true' }),
    accessToken: Type.String({ description: 'A JWT to send as `Authorization: Bearer <accessToken>` on the user’s own calls; valid 15 minutes' }),
    refreshToken: Type.String({ description: 'An opaque token for `POST /api/v1/partner/auth/refresh`: single use, valid 30 days' }),
    tokenType: Type.Literal('Bearer', { description: 'Always `Bearer`' }),
    expiresIn: Type.Integer({ description: 'Seconds the access token is valid from now: 900' }),
    user: Type.Object(
      {
        id: Type.String({ description: 'The user’s id (a UUID)' }),
        email: Type.String({ description: 'The user’s email, lower-cased' }),
        status: Type.Literal('active', { description: 'Always `active`: only active users log in' }),
      },
      { description: 'The logged-in user' },
    ),
  },
  { $id: 'Tokens' },
);

export const loginRoutes = [
  route<Static<typeof EmailBody>>({
    method: 'post',
    path: '/api/v1/partner/auth/send',
    auth: 'partner',
    tag: 'Login',
    summary: 'Email a 6-digit login code. Same answer whether or not the email is registered; 5 sends per partner and email per hour.',
    body: EmailBody,
    responses: { 200: { description: 'Accepted', schema: MessageBody } },
    async handler({ services, body, partnerId, command }) {
      await services.login.send(partnerId, body.email, command());
      return { status: 200, body: { success: true, message: SEND_MESSAGE } };
    },
  }),
  route<Static<typeof VerifyBody>>({
    method: 'post',
    path: '/api/v1/partner/auth/verify',
    auth: 'partner',
    tag: 'Login',
    summary: 'Exchange the emailed code for an access token (15 min) and a refresh token (30 days). The first login opens the USDC account.',
    body: VerifyBody,
    responses: { 200: { description: 'Tokens', schema: LoginResult }, 401: { description: 'Invalid or expired code, or the user is not active' } },
    refuses: [IDENTITY_REFUSALS.invalidLoginCode, IDENTITY_REFUSALS.userNotActive],
    async handler({ services, body, partnerId, command }) {
      return { status: 200, body: await services.login.verify(partnerId, body.email, body.code, command()) };
    },
  }),
  route<Static<typeof RefreshBody>>({
    method: 'post',
    path: '/api/v1/partner/auth/refresh',
    auth: 'partner',
    tag: 'Login',
    summary: 'Exchange a refresh token for a new pair; the old one is spent, and presenting it again revokes the session.',
    body: RefreshBody,
    responses: { 200: { description: 'Tokens', schema: LoginResult }, 401: { description: 'Invalid, spent or revoked refresh token' } },
    refuses: [IDENTITY_REFUSALS.refreshTokenInvalid, IDENTITY_REFUSALS.userNotActive],
    async handler({ services, body, partnerId, command }) {
      return { status: 200, body: await services.login.refresh(partnerId, body.refreshToken, command()) };
    },
  }),
  route<Static<typeof RefreshBody>>({
    method: 'post',
    path: '/api/v1/partner/auth/logout',
    auth: 'partner',
    tag: 'Login',
    summary: 'Revoke the session of a refresh token (its access tokens stop working too).',
    body: RefreshBody,
    responses: { 200: { description: 'Logged out', schema: MessageBody } },
    refuses: [IDENTITY_REFUSALS.refreshTokenInvalid],
    async handler({ services, body, partnerId, command }) {
      await services.login.logout(partnerId, body.refreshToken, command());
      return { status: 200, body: { success: true, message: 'Logged out' } };
    },
  }),
  route({
    method: 'post',
    path: '/api/v1/partner/auth/login',
    auth: 'partner',
    tag: 'Login',
    deprecated: true,
    summary: 'Deprecated (required a vendor client SDK). Use auth/send and auth/verify.',
    responses: { 410: { description: 'Gone' } },
    refuses: [IDENTITY_REFUSALS.loginDeprecated],
    async handler() {
      throw IDENTITY_REFUSALS.loginDeprecated();
    },
  }),
];
