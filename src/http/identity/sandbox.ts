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

const EmailsQuery = Type.Object({ to: Type.String({ format: 'trimmed-email', maxLength: 254, 'x-error': 'to must be a valid email address' }) });
const InquiryParams = Type.Object({ inquiryId: Type.String({ maxLength: 100 }) });
const OutcomeBody = Type.Object({ outcome: StringEnum(SANDBOX_OUTCOMES) });
const DecisionBody = Type.Object({ outcome: StringEnum(['approved', 'declined', 'needs_review'] as const) });

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
                id: Type.String(),
                to: Type.String(),
                subject: Type.String(),
                text: Type.String(),
                createdAt: Type.String(),
                code: Type.Union([Type.String(), Type.Null()]),
              },
              { $id: 'SandboxEmail' },
            ),
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
      202: { description: 'Decided and delivered', schema: Success(Type.Object({ inquiryId: Type.String(), outcome: Type.String(), eventId: Type.String() })) },
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
  route<unknown, unknown, Static<typeof InquiryParams>>({
    method: 'get',
    path: '/sandbox/identity/inquiries/{inquiryId}',
    auth: 'public',
    tag: 'Sandbox',
    summary: "The sandbox identity provider's hosted verification page (the verificationUrl).",
    params: InquiryParams,
    responses: { 200: { description: 'HTML page', schema: HtmlPage } },
    refuses: [R.inquiryNotFound],
    async handler({ services, params }) {
      const sandbox = sandboxOf(services);
      if (!(await sandbox.identity.findInquiry(params.inquiryId))) throw R.inquiryNotFound();
      const inquiry = await sandbox.identity.markStarted(params.inquiryId);
      return { status: 200, body: renderHostedPage(inquiry), contentType: 'text/html; charset=utf-8' };
    },
  }),
  route<Static<typeof DecisionBody>, unknown, Static<typeof InquiryParams>>({
    method: 'post',
    path: '/sandbox/identity/inquiries/{inquiryId}/decision',
    auth: 'public',
    tag: 'Sandbox',
    summary: 'The hosted page’s buttons: approve, decline or send to review.',
    params: InquiryParams,
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
