import { type Static, Type } from '@sinclair/typebox';
import { CARD_REFUSALS, CARD_STATUSES } from '../../domain/cards';
import { SandboxApplicationConflictError } from '../../providers/cards/sandbox';
import { routeFor } from '../../platform/http/route';
import { StringEnum, Success, UUID_RE } from '../schemas';
import { type AppServices, sandboxOf } from '../services';
import { SandboxReasonBody } from '../ledger';

/** The services these routes use. */
const USES = ['cards', 'providers', 'users'] as const;
const route = routeFor<AppServices>()(USES);

const ApplicationParams = Type.Object({
  applicationId: Type.String({ maxLength: 100, description: 'The card application’s `id` (a UUID); one unknown, or of another partner’s user, is 404' }),
});
const CardParams = Type.Object({ cardId: Type.String({ maxLength: 100, description: 'The card’s id (a UUID); an unknown one is 404' }) });
const DeclineBody = SandboxReasonBody;
const Decided = Success(
  Type.Object(
    {
      applicationId: Type.String({ format: 'uuid', description: 'The application decided' }),
      eventId: Type.String({ description: 'The id of the signed webhook event the sandbox issuer sent with its decision' }),
    },
    { $id: 'CardApplicationDecision' },
  ),
);

/** The sandbox issuer decides an application of one of the partner's users, then sends its signed webhook. */
const applicationDecision = (action: 'approve' | 'decline') =>
  route<Static<typeof DeclineBody>, unknown, Static<typeof ApplicationParams>>({
    method: 'post',
    path: `/sandbox/v1/cards/applications/{applicationId}/${action}`,
    auth: 'partner',
    tag: 'Sandbox',
    summary: `The sandbox card issuer ${action === 'approve' ? 'approves' : 'declines (with an optional reason)'} an application and sends its signed webhook.`,
    params: ApplicationParams,
    body: DeclineBody,
    responses: {
      202: { description: 'Decided and delivered', schema: Decided },
      404: { description: 'No such application of the partner' },
      409: { description: 'Already decided otherwise' },
    },
    refuses: [CARD_REFUSALS.applicationNotFound, CARD_REFUSALS.applicationAlreadyDecided],
    async handler({ services, params, body, partnerId }) {
      const issuer = sandboxOf(services).cards;
      const found = UUID_RE.test(params.applicationId) ? await issuer.findApplication(params.applicationId) : null;
      if (!found || !(await services.users.get(partnerId, found.userId))) throw CARD_REFUSALS.applicationNotFound();
      try {
        const eventId = await issuer.decideApplication(found.applicationId, action === 'approve' ? 'approved' : 'denied', body.reason);
        return { status: 202, body: { success: true, data: { applicationId: found.applicationId, eventId } } };
      } catch (error) {
        if (error instanceof SandboxApplicationConflictError) throw CARD_REFUSALS.applicationAlreadyDecided(error.applicationId, error.status);
        throw error;
      }
    },
  });

export const cardOperationRoutes = [
  applicationDecision('approve'),
  applicationDecision('decline'),
  route<unknown, unknown, Static<typeof CardParams>>({
    method: 'post',
    path: '/admin/v1/cards/{cardId}/cancel',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Cancel a card: final, every later action is 409; the user may then be issued a new card.',
    params: CardParams,
    responses: {
      200: {
        description: 'Canceled',
        schema: Type.Object(
          {
            id: Type.String({ format: 'uuid', description: 'The canceled card’s id' }),
            status: StringEnum(CARD_STATUSES, { description: 'Always `canceled`: the card never moves again' }),
          },
          { $id: 'CardCanceled' },
        ),
      },
      404: { description: 'No such card' },
      409: { description: 'Already canceled' },
    },
    refuses: [CARD_REFUSALS.cardNotFound, CARD_REFUSALS.cancelForbidden],
    async handler({ services, params, command }) {
      if (!UUID_RE.test(params.cardId)) throw CARD_REFUSALS.cardNotFound();
      return { status: 200, body: await services.cards.cards.cancel(params.cardId.toLowerCase(), command()) };
    },
  }),
];
