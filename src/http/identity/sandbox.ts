import { type Static, Type } from '@sinclair/typebox';
import { normalizeEmail } from '../../domain/identity/user';
import { renderDecisionPage, renderHostedPage } from '../../providers/identity/sandbox-page';
import { SANDBOX_OUTCOMES, SandboxInquiryConflictError, type SandboxOutcome } from '../../providers/identity/sandbox';
import { IDENTITY_REFUSALS as R } from '../../domain/identity';
import { routeFor } from '../../platform/http/route';
import { HtmlPage, StringEnum, Success } from '../schemas';
import { type AppServices, sandboxOf } from '../services';

/** The services these routes use. */
const USES = ['providers', 'identityReads'] as const;
type Services = Pick<AppServices, (typeof USES)[number]>;
const route = routeFor<AppServices>()(USES);

const EmailsQuery = Type.Object({
  to: Type.String({
    format: 'trimmed-email',
    maxLength: 254,
    'x-error': 'to must be a valid email address',
    description: 'The email of one of the partner’s users (any case); another address is 404 `User not found`',
  }),
});
const InquiryParams = Type.Object({
  inquiryId: Type.String({
    maxLength: 100,
    description: 'The sandbox inquiry’s id (the `inquiryId` start KYC answered); another partner’s inquiry is 404',
  }),
});
const HostedInquiryParams = Type.Object({
  inquiryId: Type.String({ maxLength: 100, description: 'The sandbox inquiry’s id, as in its `verificationUrl`' }),
});
const OutcomeBody = Type.Object({
  outcome: StringEnum(SANDBOX_OUTCOMES, {
    description: 'How the sandbox identity provider decides the inquiry: `approved`, `declined`, `needs_review`, `failed` or `expired`',
  }),
});
const DecisionBody = Type.Object({
  outcome: StringEnum(['approved', 'declined', 'needs_review'] as const, {
    description: 'The button pressed on the hosted page: `approved`, `declined` or `needs_review`',
  }),
});

/** A partner may drive only its own users' inquiries. */
async function ownInquiry(services: Services, partnerId: string, inquiryId: string): Promise<void> {
  const owner = await services.identityReads.kyc.partnerOfInquiry(inquiryId);
  if (!owner || owner !== partnerId) throw R.inquiryNotFound();
}

async function complete(services: Services, inquiryId: string, outcome: SandboxOutcome): Promise<string> {
  try {
    return await sandboxOf(services).identity.complete(inquiryId, outcome);
  } catch (error) {
    if (error instanceof SandboxInquiryConflictError) throw R.inquiryDecided(error.inquiryId, error.status);
    throw error;
  }
}

export const sandboxIdentityRoutes = [
  route<unknown, Static<typeof EmailsQuery>>({
    method: 'get',
    path: '/sandbox/v1/emails',
    auth: 'partner',
    tag: 'Sandbox',
    summary: "Emails the sandbox sent to one of the partner's users, newest first (login codes in `code`).",
    query: EmailsQuery,
    responses: {
      200: {
        description: 'Messages',
        schema: Success(
          Type.Array(
            Type.Object(
              {
                id: Type.String({ description: 'The message’s id (a UUID)' }),
                to: Type.String({ description: 'The recipient’s address, lower-cased' }),
                subject: Type.String({ description: 'The subject line' }),
                text: Type.String({ description: 'The plain-text body' }),
                createdAt: Type.String({ description: 'When it was sent (ISO 8601, UTC)' }),
                code: Type.Union([Type.String(), Type.Null()], { description: 'The 6-digit login code the message carries; null for other messages' }),
              },
              { $id: 'SandboxEmail' },
            ),
            { description: 'The newest 50 messages to the address at most, newest first' },
          ),
        ),
      },
    },
    refuses: [R.userNotFound],
    async handler({ services, query, partnerId }) {
      const sandbox = sandboxOf(services);
      const own = await services.identityReads.users.hasEmail(partnerId, normalizeEmail(query.to));
      if (!own) throw R.userNotFound();
      return { status: 200, body: { success: true, data: await sandbox.outbox.list(query.to) } };
    },
  }),
  route<Static<typeof OutcomeBody>, unknown, Static<typeof InquiryParams>>({
    method: 'post',
    path: '/sandbox/v1/kyc/{inquiryId}/complete',
    auth: 'partner',
    tag: 'Sandbox',
    summary: 'Decide a sandbox inquiry; the sandbox provider sends its signed webhook to the service, as a real one would.',
    params: InquiryParams,
    body: OutcomeBody,
    responses: {
      202: {
        description: 'Decided and delivered',
        schema: Success(
          Type.Object({
            inquiryId: Type.String({ description: 'The inquiry decided' }),
            outcome: Type.String({ description: 'The outcome asked for' }),
            eventId: Type.String({ description: 'The id of the signed callback the sandbox provider delivered (`evt_sandbox_...`)' }),
          }),
        ),
      },
      409: { description: 'The inquiry was already decided otherwise' },
    },
    refuses: [R.inquiryNotFound, R.inquiryDecided],
    async handler({ services, params, body, partnerId }) {
      sandboxOf(services);
      await ownInquiry(services, partnerId, params.inquiryId);
      const eventId = await complete(services, params.inquiryId, body.outcome);
      return { status: 202, body: { success: true, data: { inquiryId: params.inquiryId, outcome: body.outcome, eventId } } };
    },
  }),
  route<unknown, unknown, Static<typeof HostedInquiryParams>>({
    method: 'get',
    path: '/sandbox/identity/inquiries/{inquiryId}',
    auth: 'public',
    tag: 'Sandbox',
    summary: "The sandbox identity provider's hosted verification page (the verificationUrl).",
    params: HostedInquiryParams,
    responses: { 200: { description: 'HTML page', schema: HtmlPage } },
    refuses: [R.inquiryNotFound],
    async handler({ services, params }) {
      const sandbox = sandboxOf(services);
      if (!(await sandbox.identity.findInquiry(params.inquiryId))) throw R.inquiryNotFound();
      const inquiry = await sandbox.identity.markStarted(params.inquiryId);
      return { status: 200, body: renderHostedPage(inquiry), contentType: 'text/html; charset=utf-8' };
    },
  }),
  route<Static<typeof DecisionBody>, unknown, Static<typeof HostedInquiryParams>>({
    method: 'post',
    path: '/sandbox/identity/inquiries/{inquiryId}/decision',
    auth: 'public',
    tag: 'Sandbox',
    summary: 'The hosted page’s buttons: approve, decline or send to review.',
    params: HostedInquiryParams,
    body: DecisionBody,
    forms: true,
    responses: { 200: { description: 'HTML page', schema: HtmlPage }, 409: { description: 'The inquiry was already decided otherwise' } },
    refuses: [R.inquiryNotFound, R.inquiryDecided],
    async handler({ services, params, body }) {
      const sandbox = sandboxOf(services);
      if (!(await sandbox.identity.findInquiry(params.inquiryId))) throw R.inquiryNotFound();
      await complete(services, params.inquiryId, body.outcome);
      const inquiry = await sandbox.identity.findInquiry(params.inquiryId);
      return {
        status: 200,
        body: renderDecisionPage(inquiry?.status ?? body.outcome, { inquiryId: params.inquiryId }),
        contentType: 'text/html; charset=utf-8',
      };
    },
  }),
];
