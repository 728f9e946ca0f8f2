import { type Static, Type } from '@sinclair/typebox';
import { SEND_MESSAGE } from '../../app/identity/login';
import { IDENTITY_REFUSALS } from '../../domain/identity';
import { routeFor } from '../../platform/http/route';
import { MessageBody } from '../schemas';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['login'] as const;
const route = routeFor<AppServices>()(USES);

const EmailBody = Type.Object({ email: Type.String({ format: 'trimmed-email', maxLength: 254, 'x-error': 'email must be a valid email address' }) });
const VerifyBody = Type.Object({
  email: Type.String({ format: 'trimmed-email', maxLength: 254, 'x-error': 'email must be a valid email address' }),
  code: Type.String({ pattern: '^[0-9]{6}$', 'x-error': 'code must be a string of 6 digits' }),
});
const RefreshBody = Type.Object({ refreshToken: Type.String({ minLength: 1, maxLength: 512 }) });
const LoginResult = Type.Object(
  {
    success: Type.Boolean(),
    accessToken: Type.String(),
    refreshToken: Type.String(),
    tokenType: Type.Literal('Bearer'),
    expiresIn: Type.Integer(),
    user: Type.Object({ id: Type.String(), email: Type.String(), status: Type.Literal('active') }),
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
