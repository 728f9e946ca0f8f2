import { type Static, Type } from '@sinclair/typebox';
import { routeFor } from '../../platform/http/route';
import { StringEnum, Success } from '../schemas';
import { READ_USER_REFUSALS, readableUser, UserIdField, WRITE_USER_REFUSALS, writableUser } from '../user-scope';
import type { AppServices } from '../services';
import { IDENTITY_REFUSALS as R, KYC_HISTORY_STATUSES, requireMayVerify } from '../../domain/identity';

/** The services these routes use. */
const USES = ['kyc', 'profiles', 'users'] as const;
const route = routeFor<AppServices>()(USES);

const StartKycBody = Type.Object({
  userId: UserIdField,
  firstName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  lastName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  email: Type.Optional(Type.String({ format: 'trimmed-email', maxLength: 254, 'x-error': 'email must be a valid email address' })),
  phone: Type.Optional(Type.String({ pattern: '^\\s*\\+[1-9][0-9]{6,14}\\s*$', 'x-error': 'phone must be in international format, e.g. +573001234567' })),
  birthDate: Type.Optional(Type.String({ format: 'date', 'x-error': 'Invalid birthDate format. Use YYYY-MM-DD' })),
});
const UserIdQuery = Type.Object({ userId: UserIdField });
const UserIdBody = Type.Object({ userId: UserIdField });

export const StatusView = Type.Object(
  {
    userId: Type.String(),
    userStatus: Type.String(),
    userType: Type.String(),
    kyc: Type.Object({
      hasKyc: Type.Boolean(),
      hasActiveKyc: Type.Boolean(),
      isApproved: Type.Boolean(),
      isExpired: Type.Boolean(),
      status: Type.Union([Type.String(), Type.Null()]),
      inquiryId: Type.Union([Type.String(), Type.Null()]),
      verificationLevel: Type.String(),
      riskLevel: Type.Union([Type.String(), Type.Null()]),
      riskScore: Type.Union([Type.Number(), Type.Null()]),
      submittedAt: Type.Union([Type.String(), Type.Null()]),
      approvedAt: Type.Union([Type.String(), Type.Null()]),
      expiresAt: Type.Union([Type.String(), Type.Null()]),
      nextReviewDate: Type.Union([Type.String(), Type.Null()]),
      canStartNewKyc: Type.Boolean(),
    }),
    permissions: Type.Object({
      canStartKyc: Type.Boolean(),
      canCreateAccounts: Type.Boolean(),
      requiresKyc: Type.Boolean(),
      maxTransactionAmount: Type.Number(),
      dailyTransactionLimit: Type.Number(),
    }),
  },
  { $id: 'KycStatus' },
);

const KycDocument = Type.Object(
  {
    inquiryId: Type.String(),
    kycStatus: Type.String(),
    document: Type.Object({
      issuingCountry: Type.Union([Type.String(), Type.Null()]),
      type: Type.Union([Type.String(), Type.Null()]),
      issuedDate: Type.Union([Type.String(), Type.Null()]),
      idNumber: Type.Union([Type.String(), Type.Null()]),
      expiryDate: Type.Union([Type.String(), Type.Null()]),
      imageFront: Type.Union([Type.String(), Type.Null()]),
      imageBack: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { $id: 'KycDocument' },
);

const KycHistoryItem = Type.Object(
  {
    id: Type.String(),
    status: StringEnum(KYC_HISTORY_STATUSES, {
      description:
        'The verification summed up: `created`; `processing` (KYC `pending`, `in_progress`, `completed`); `manual_review` (`needs_review`); `approved`; `failed` (`declined`, `rejected`, `failed`, `expired`). The status view and the document read show the full KYC status',
    }),
    verificationLevel: Type.String(),
    riskLevel: Type.Union([Type.String(), Type.Null()]),
    riskScore: Type.Union([Type.Number(), Type.Null()]),
    provider: Type.String(),
    providerVerificationId: Type.Union([Type.String(), Type.Null()]),
    submittedAt: Type.Union([Type.String(), Type.Null()]),
    reviewedAt: Type.Union([Type.String(), Type.Null()]),
    approvedAt: Type.Union([Type.String(), Type.Null()]),
    rejectionReasons: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description:
        'When `failed`: first the KYC status that caused it (`declined`, `rejected`, `failed` or `expired`), then the provider’s reasons; otherwise null',
    }),
    complianceNotes: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String(),
  },
  { $id: 'KycHistoryItem' },
);

const documentRoute = (path: string) =>
  route({
    method: 'get',
    path,
    auth: 'bearer',
    tag: 'KYC',
    summary: "Identity document details of the token user's latest verification.",
    responses: { 200: { description: 'Document', schema: Success(KycDocument) } },
    refuses: [R.kycNotFound],
    async handler({ services, userId }) {
      const latest = await services.kyc.latest(userId);
      if (!latest) throw R.kycNotFound(userId);
      const empty = { issuingCountry: null, type: null, issuedDate: null, idNumber: null, expiryDate: null, imageFront: null, imageBack: null };
      return {
        status: 200,
        body: { success: true, data: { inquiryId: latest.inquiry_id, kycStatus: latest.status, document: { ...empty, ...(latest.document ?? {}) } } },
      };
    },
  });

const historyRoute = (path: string) =>
  route({
    method: 'get',
    path,
    auth: 'bearer',
    tag: 'KYC',
    summary: "The token user's verifications, newest first.",
    responses: { 200: { description: 'History', schema: Success(Type.Object({ total: Type.Integer(), history: Type.Array(KycHistoryItem) })) } },
    async handler({ services, userId }) {
      const history = (await services.kyc.history(userId)).map((row) => services.kyc.historyItem(row));
      return { status: 200, body: { success: true, data: { total: history.length, history } } };
    },
  });

export const kycRoutes = [
  route<Static<typeof StartKycBody>>({
    method: 'post',
    path: '/api/v1/partner/kyc',
    auth: 'partner',
    tag: 'KYC',
    summary: 'Start identity verification (or get the one in progress). The profile must exist.',
    body: StartKycBody,
    responses: {
      200: {
        description: 'Verification URL and inquiry',
        schema: Type.Object(
          {
            success: Type.Boolean(),
            verificationUrl: Type.String(),
            inquiryId: Type.String(),
            isExisting: Type.Boolean(),
            message: Type.String(),
          },
          { $id: 'KycStarted' },
        ),
      },
      403: { description: 'User does not belong to this partner' },
      409: { description: 'The user is suspended or banned' },
      422: { description: 'KYC already finalized with status: <status>' },
      502: { description: 'Failed to create identity inquiry' },
    },
    refuses: [...WRITE_USER_REFUSALS, R.userMayNotVerify, R.profileNotFound, R.kycInProgress, R.kycFinalized],
    async handler({ services, body, partnerId, command }) {
      const user = await writableUser(services, partnerId, body.userId);
      requireMayVerify(user.status);
      const profile = await services.profiles.require(body.userId);
      const prefill = {
        firstName: body.firstName ?? profile.firstName,
        lastName: body.lastName ?? profile.lastName,
        email: body.email?.trim().toLowerCase() ?? user.email,
        phone: body.phone?.trim() ?? user.phoneNumber ?? undefined,
        birthDate: body.birthDate ?? profile.dateOfBirth,
        country: profile.governmentIdCountry,
      };
      const started = await services.kyc.start(body.userId, prefill, command());
      return {
        status: 200,
        body: { success: true, ...started, message: started.isExisting ? 'Verification already in progress' : 'Verification started' },
      };
    },
  }),
  route<unknown, Static<typeof UserIdQuery>>({
    method: 'get',
    path: '/api/v1/user/kyc/status',
    auth: 'partner',
    tag: 'KYC',
    summary: "A user's KYC status view with derived permissions (always 200 for an own user).",
    query: UserIdQuery,
    responses: { 200: { description: 'Status view', schema: Success(StatusView) } },
    refuses: READ_USER_REFUSALS,
    async handler({ services, query, partnerId }) {
      const user = await readableUser(services, partnerId, query.userId);
      return { status: 200, body: { success: true, data: await services.kyc.statusView(user.id, user.status) } };
    },
  }),
  route<Static<typeof UserIdBody>>({
    method: 'post',
    path: '/api/v1/auth/kyc/verify',
    auth: 'partner',
    tag: 'KYC',
    summary: 'Re-read the latest inquiry from the identity provider, apply any change, and return the status view.',
    body: UserIdBody,
    responses: { 200: { description: 'Status view', schema: Success(StatusView) }, 403: { description: 'User does not belong to this partner' } },
    refuses: [...WRITE_USER_REFUSALS, R.kycNotFound],
    async handler({ services, body, partnerId }) {
      await writableUser(services, partnerId, body.userId);
      await services.kyc.resync(body.userId);
      const user = await readableUser(services, partnerId, body.userId);
      return { status: 200, body: { success: true, data: await services.kyc.statusView(user.id, user.status) } };
    },
  }),
  route<unknown, Static<typeof UserIdQuery>>({
    method: 'get',
    path: '/api/v1/auth/kyc/simple-status',
    auth: 'partner',
    tag: 'KYC',
    summary: "A user's KYC status as one string (`not_started` before any verification).",
    query: UserIdQuery,
    responses: { 200: { description: 'Status', schema: Success(Type.Object({ status: Type.String() }, { $id: 'KycSimpleStatus' })) } },
    refuses: READ_USER_REFUSALS,
    async handler({ services, query, partnerId }) {
      const user = await readableUser(services, partnerId, query.userId);
      const latest = await services.kyc.latest(user.id);
      return { status: 200, body: { success: true, data: { status: latest?.status ?? 'not_started' } } };
    },
  }),
  documentRoute('/api/v1/auth/kyc/document/me'),
  documentRoute('/api/v1/user/kyc/document/me'),
  historyRoute('/api/v1/auth/kyc/history'),
  historyRoute('/api/v1/user/kyc/history'),
];
