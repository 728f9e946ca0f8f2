import { type Static, Type } from '@sinclair/typebox';
import { routeFor } from '../../platform/http/route';
import { StringEnum, Success } from '../schemas';
import { READ_USER_REFUSALS, readableUser, WRITE_USER_REFUSALS, writableUser } from '../user-scope';
import { UserIdToRead, UserIdToWrite } from './user-id';
import type { AppServices } from '../services';
import { IDENTITY_REFUSALS as R, KYC_HISTORY_STATUSES, KYC_STATUSES, requireMayVerify } from '../../domain/identity';

/** The services these routes use. */
const USES = ['kyc', 'profiles', 'users'] as const;
const route = routeFor<AppServices>()(USES);

/** The KYC statuses, as a sentence's list. */
const KYC_STATUS_LIST = KYC_STATUSES.map((s) => `\`${s}\``).join(', ');
const ISO_UTC = '(ISO 8601, UTC)';

const StartKycBody = Type.Object({
  userId: UserIdToWrite,
  firstName: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'The first name a new inquiry is prefilled with; the profile’s `firstName` when left out' }),
  ),
  lastName: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'The last name a new inquiry is prefilled with; the profile’s `lastName` when left out' }),
  ),
  email: Type.Optional(
    Type.String({
      format: 'trimmed-email',
      maxLength: 254,
      'x-error': 'email must be a valid email address',
      description: 'The email a new inquiry is prefilled with (trimmed, lower-cased); the user’s registered email when left out',
    }),
  ),
  phone: Type.Optional(
    Type.String({
      pattern: '^\\s*\\+[1-9][0-9]{6,14}\\s*$',
      'x-error': 'phone must be in international format, e.g. +573001234567',
      description: 'The phone number a new inquiry is prefilled with, E.164 (`+573001234567`); the user’s registered one, if any, when left out',
    }),
  ),
  birthDate: Type.Optional(
    Type.String({
      format: 'date',
      'x-error': 'Invalid birthDate format. Use YYYY-MM-DD',
      description: 'The date of birth a new inquiry is prefilled with, `YYYY-MM-DD`; the profile’s `dateOfBirth` when left out',
    }),
  ),
});
const UserIdQuery = Type.Object({ userId: UserIdToRead });
const UserIdBody = Type.Object({ userId: UserIdToWrite });

export const StatusView = Type.Object(
  {
    userId: Type.String({ description: 'The user’s id (a UUID)' }),
    userStatus: Type.String({ description: 'The user’s status: `pending`, `kyc_required`, `active`, `suspended` or `banned`' }),
    userType: Type.String({ description: 'Always `individual`' }),
    kyc: Type.Object(
      {
        hasKyc: Type.Boolean({ description: 'True once a verification was started' }),
        hasActiveKyc: Type.Boolean({
          description: 'True when the latest verification is not `declined`, `rejected`, `failed` or `expired`, nor an approval past `expiresAt`',
        }),
        isApproved: Type.Boolean({ description: 'True when the latest verification is `approved` and its approval has not expired' }),
        isExpired: Type.Boolean({ description: 'True when the latest verification is `expired`, or `approved` with `expiresAt` passed' }),
        status: Type.Union([Type.String(), Type.Null()], { description: `The latest verification’s KYC status (${KYC_STATUS_LIST}); null before any` }),
        inquiryId: Type.Union([Type.String(), Type.Null()], {
          description: 'The identity provider’s id of the latest verification’s inquiry; null before any',
        }),
        verificationLevel: Type.String({ description: 'The level of verification: `basic`, the only one' }),
        riskLevel: Type.Union([Type.String(), Type.Null()], {
          description: 'The risk level the identity provider reported, in its own words; null while it reported none',
        }),
        riskScore: Type.Union([Type.Number(), Type.Null()], {
          description: 'The risk score the identity provider reported, on its own scale; null while it reported none',
        }),
        submittedAt: Type.Union([Type.String(), Type.Null()], {
          description: `When the latest verification was first submitted or decided ${ISO_UTC}; null before that`,
        }),
        approvedAt: Type.Union([Type.String(), Type.Null()], { description: `When the latest verification was approved ${ISO_UTC}; null until then` }),
        expiresAt: Type.Union([Type.String(), Type.Null()], {
          description: `When the approval lapses, 365 days after it ${ISO_UTC}; null until approved`,
        }),
        nextReviewDate: Type.Union([Type.String(), Type.Null()], { description: 'While the approval holds, the same as `expiresAt`; otherwise null' }),
        canStartNewKyc: Type.Boolean({
          description: 'True when starting KYC would make a new verification: there is none yet, or the latest is `expired`',
        }),
      },
      { description: 'The user’s latest identity verification' },
    ),
    permissions: Type.Object(
      {
        canStartKyc: Type.Boolean({
          description:
            'True when starting KYC would start or resume a verification: the user is neither suspended nor banned, and there is none, or the latest is `expired`, `created`, `pending` or `in_progress`',
        }),
        canCreateAccounts: Type.Boolean({ description: 'True when the approval holds and the user is `active`' }),
        requiresKyc: Type.Boolean({ description: 'True unless the latest verification is an approval that has not expired' }),
        maxTransactionAmount: Type.Number({
          description: 'The most one transfer or payout may debit, in USDC (a number, e.g. 10000) while the approval holds; 0 otherwise',
        }),
        dailyTransactionLimit: Type.Number({
          description: 'The most the user’s transfers and payouts may debit per UTC day, in USDC (a number, e.g. 50000) while the approval holds; 0 otherwise',
        }),
      },
      { description: 'What the user may do, derived from the KYC status and the user’s status' },
    ),
  },
  { $id: 'KycStatus' },
);

export const KycDocument = Type.Object(
  {
    inquiryId: Type.String({ description: 'The identity provider’s id of the latest verification’s inquiry' }),
    kycStatus: Type.String({ description: `The latest verification’s KYC status (${KYC_STATUS_LIST})` }),
    document: Type.Object(
      {
        issuingCountry: Type.Union([Type.String(), Type.Null()], {
          description: 'The country that issued the document, an ISO 3166-1 alpha-2 code as the provider reports it; null when not reported',
        }),
        type: Type.Union([Type.String(), Type.Null()], {
          description:
            'The kind of document: `passport`, `national_id`, `drivers_license`, `residence_permit`, or the provider’s own name for another; null when not reported',
        }),
        issuedDate: Type.Union([Type.String(), Type.Null()], {
          description: 'The date the document was issued, as the provider reports it (`YYYY-MM-DD`); null when not reported',
        }),
        idNumber: Type.Union([Type.String(), Type.Null()], { description: 'The document’s number; null when not reported' }),
        expiryDate: Type.Union([Type.String(), Type.Null()], {
          description: 'The date the document expires, as the provider reports it (`YYYY-MM-DD`); null when not reported',
        }),
        imageFront: Type.Union([Type.String(), Type.Null()], { description: 'The provider’s URL of the image of the front; null when none' }),
        imageBack: Type.Union([Type.String(), Type.Null()], { description: 'The provider’s URL of the image of the back; null when none' }),
      },
      { description: 'The identity document the provider read; every field null until it reports one' },
    ),
  },
  { $id: 'KycDocument' },
);

export const KycHistoryItem = Type.Object(
  {
    id: Type.String({ description: 'The verification’s id (a UUID, made by the service)' }),
    status: StringEnum(KYC_HISTORY_STATUSES, {
      description:
        'The verification summed up: `created`; `processing` (KYC `pending`, `in_progress`, `completed`); `manual_review` (`needs_review`); `approved`; `failed` (`declined`, `rejected`, `failed`, `expired`). The status view and the document read show the full KYC status',
    }),
    verificationLevel: Type.String({ description: 'The level of verification: `basic`, the only one' }),
    riskLevel: Type.Union([Type.String(), Type.Null()], {
      description: 'The risk level the identity provider reported, in its own words; null while it reported none',
    }),
    riskScore: Type.Union([Type.Number(), Type.Null()], {
      description: 'The risk score the identity provider reported, on its own scale; null while it reported none',
    }),
    provider: Type.String({ description: 'The identity provider that ran it (e.g. `sandbox`, `persona`)' }),
    providerVerificationId: Type.Union([Type.String(), Type.Null()], {
      description: 'The identity provider’s id of the inquiry (the `inquiryId` of the other KYC answers)',
    }),
    submittedAt: Type.Union([Type.String(), Type.Null()], { description: `When it was first submitted or decided ${ISO_UTC}; null before that` }),
    reviewedAt: Type.Union([Type.String(), Type.Null()], {
      description: `When it last reached \`needs_review\`, \`approved\`, \`declined\` or \`rejected\` ${ISO_UTC}; null before that`,
    }),
    approvedAt: Type.Union([Type.String(), Type.Null()], { description: `When it was approved ${ISO_UTC}; null unless approved` }),
    rejectionReasons: Type.Union([Type.Array(Type.String()), Type.Null()], {
      description:
        'When `failed`: first the KYC status that caused it (`declined`, `rejected`, `failed` or `expired`), then the provider’s reasons; otherwise null',
    }),
    complianceNotes: Type.Union([Type.String(), Type.Null()], { description: 'Always null: the service keeps no compliance notes' }),
    createdAt: Type.String({ description: `When the verification was started ${ISO_UTC}` }),
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
      const document = await services.kyc.documentView(userId);
      if (!document) throw R.kycNotFound(userId);
      return { status: 200, body: { success: true, data: document } };
    },
  });

const historyRoute = (path: string) =>
  route({
    method: 'get',
    path,
    auth: 'bearer',
    tag: 'KYC',
    summary: "The token user's verifications, newest first.",
    responses: {
      200: {
        description: 'History',
        schema: Success(
          Type.Object({
            total: Type.Integer({ description: 'How many verifications `history` holds' }),
            history: Type.Array(KycHistoryItem, { description: 'The user’s verifications, newest first (the newest 100 at most)' }),
          }),
        ),
      },
    },
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
            success: Type.Boolean({ description: 'Always true' }),
            verificationUrl: Type.String({ description: 'The identity provider’s page where the user verifies (an absolute URL)' }),
            inquiryId: Type.String({ description: 'The identity provider’s id of the inquiry' }),
            isExisting: Type.Boolean({
              description: 'True when this is the verification already in progress (the same URL and inquiry as before); false when one was started now',
            }),
            message: Type.String({ description: '`Verification started`, or `Verification already in progress` when `isExisting`' }),
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
    responses: {
      200: {
        description: 'Status',
        schema: Success(
          Type.Object(
            { status: Type.String({ description: `The latest verification’s KYC status (${KYC_STATUS_LIST}), or \`not_started\` before any` }) },
            { $id: 'KycSimpleStatus' },
          ),
        ),
      },
    },
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
