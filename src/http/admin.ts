import { type Static, Type } from '@sinclair/typebox';
import { HttpError } from '../platform/http/errors';
import { routeFor } from '../platform/http/route';
import { Success, User, UUID_RE } from './schemas';
import { IDENTITY_REFUSALS as R } from '../domain/identity';
import type { AppServices } from './services';

/** The services these routes use. */
const USES = ['config', 'consumers', 'engine', 'partners', 'users'] as const;
const route = routeFor<AppServices>()(USES);

const PartnerBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200, description: 'The partner’s name: trimmed when stored, and refused when blank' }),
});
const PartnerId = Type.String({ description: 'The partner’s id (a UUID); an unknown id is 404 `Partner not found`' });
const PartnerParams = Type.Object({ id: PartnerId });
const KeyParams = Type.Object({ id: PartnerId, apiKey: Type.String({ description: 'The partner’s API key to revoke (`tk_...`)' }) });
const UserParams = Type.Object({
  userId: Type.String({ description: 'The user’s id (a UUID), whichever partner’s; an unknown id is 404 `User not found`' }),
});
const ReasonBody = Type.Object({
  reason: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'Why: recorded with the status change in the event log (`operator_<action>` when left out); no API answer shows it',
    }),
  ),
});
const ProjectionParams = Type.Object({
  name: Type.String({ description: 'The projection’s name, as `GET /admin/v1/projections` lists it; another is 404 `Projection not found`' }),
});
const KeyPair = Type.Object(
  {
    id: Type.String({ description: 'The partner’s id (a UUID)' }),
    apiKey: Type.String({ description: 'The new API key, sent as `X-Api-Key`: `tk_sandbox_` or `tk_live_` and 24 hex digits' }),
    apiSecret: Type.String({ description: 'Its secret, sent as `X-Api-Secret` (`ts_...`): shown only in this answer, as only its hash is stored' }),
  },
  { $id: 'KeyPair' },
);

const requirePartnerId = (id: string) => {
  if (!UUID_RE.test(id)) throw R.partnerNotFound();
  return id;
};

const userAction = (action: 'suspend' | 'ban' | 'reinstate', summary: string) =>
  route<Static<typeof ReasonBody>, unknown, Static<typeof UserParams>>({
    method: 'post',
    path: `/admin/v1/users/{userId}/${action}`,
    auth: 'admin',
    tag: 'Operator',
    summary,
    params: UserParams,
    body: ReasonBody,
    // A ban of a banned user is the same ban (200): only suspend and reinstate have a status that refuses them.
    responses:
      action === 'ban'
        ? { 200: { description: 'The user after the action', schema: Success(Type.Object({ user: User })) } }
        : {
            200: { description: 'The user after the action', schema: Success(Type.Object({ user: User })) },
            409: { description: 'The action does not apply to the user’s status' },
          },
    refuses: [R.userNotFound, ...(action === 'reinstate' ? [R.bannedUserNotReinstatable, R.userNotSuspended] : action === 'suspend' ? [R.userBanned] : [])],
    async handler({ services, params, body, command }) {
      if (!UUID_RE.test(params.userId)) throw R.userNotFound();
      const user = await services.users.operatorAction(params.userId, action, body.reason ?? `operator_${action}`, command());
      return { status: 200, body: { success: true, data: { user } } };
    },
  });

export const adminRoutes = [
  route<Static<typeof PartnerBody>>({
    method: 'post',
    path: '/admin/v1/partners',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Create a partner with its first key pair; the secret is shown this once.',
    body: PartnerBody,
    responses: {
      201: {
        description: 'Created',
        schema: Type.Composite([KeyPair, Type.Object({ name: Type.String({ description: 'The partner’s name, trimmed' }) })], { $id: 'PartnerCreated' }),
      },
    },
    refuses: [R.partnerNameEmpty],
    async handler({ services, body, command }) {
      const created = await services.partners.create(body.name, { sandbox: services.config.sandbox, ctx: command() });
      return { status: 201, body: created };
    },
  }),
  route<unknown, unknown, Static<typeof PartnerParams>>({
    method: 'post',
    path: '/admin/v1/partners/{id}/keys',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Create another key pair for a partner (rotation); the secret is shown this once.',
    params: PartnerParams,
    responses: { 201: { description: 'Created', schema: KeyPair }, 409: { description: 'The partner holds the most active keys allowed' } },
    refuses: [R.partnerNotFound, R.apiKeyLimitReached],
    async handler({ services, params, command }) {
      return { status: 201, body: await services.partners.createKey(requirePartnerId(params.id), command()) };
    },
  }),
  route<unknown, unknown, Static<typeof KeyParams>>({
    method: 'delete',
    path: '/admin/v1/partners/{id}/keys/{apiKey}',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Revoke a key pair at once.',
    params: KeyParams,
    responses: { 204: { description: 'Revoked' } },
    refuses: [R.partnerNotFound, R.apiKeyNotFound],
    async handler({ services, params, command }) {
      await services.partners.revokeKey(requirePartnerId(params.id), params.apiKey, command());
      return { status: 204 };
    },
  }),
  userAction('suspend', 'Suspend a user (temporary; tokens stop working at once).'),
  userAction('ban', 'Ban a user (permanent).'),
  userAction('reinstate', 'Reinstate a suspended user to the status it had.'),
  route({
    method: 'get',
    path: '/admin/v1/projections',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Every projection with its checkpoint, the head of the log, its lag in events, and the event it is stopped on, if any.',
    responses: {
      200: {
        description: 'Projections; `failure` is set while one is stopped on an event it cannot apply (it retries with backoff; fix the cause or rebuild it)',
        schema: Success(
          Type.Array(
            Type.Object(
              {
                name: Type.String({ description: 'The projection’s name' }),
                position: Type.String({ description: 'Its checkpoint: the log position up to which it has applied events (empty while it has no checkpoint)' }),
                headPosition: Type.String({ description: 'The head of the log' }),
                lag: Type.Integer({ description: 'Events of its types between its checkpoint and the head, counted up to 1,000' }),
                lagAtLeast: Type.Boolean({ description: 'The lag is counted up to a bound: true means at least `lag`' }),
                owner: Type.Union([Type.String(), Type.Null()], { description: 'The node holding its lease' }),
                ownedHere: Type.Boolean({ description: 'This node runs it' }),
                failure: Type.Union(
                  [
                    Type.Null(),
                    Type.Object({
                      since: Type.String({ format: 'date-time', description: 'When it first failed on this event (ISO 8601, UTC)' }),
                      position: Type.String({ description: 'Its checkpoint: every event of its types before `event` is applied' }),
                      event: Type.Object(
                        {
                          position: Type.String({ description: 'The event’s position in the log' }),
                          id: Type.String({ description: 'The event’s id' }),
                          stream: Type.String({ description: 'The stream the event belongs to' }),
                          type: Type.String({ description: 'The event’s type' }),
                        },
                        { description: 'The event it cannot apply' },
                      ),
                      error: Type.String({ description: 'The error it failed with (at most 2,000 characters)' }),
                      attempts: Type.Integer({ description: 'How many times it has tried this event' }),
                      nextRetryAt: Type.String({
                        format: 'date-time',
                        description: 'When it tries again (ISO 8601, UTC): the wait doubles from 1 s after each attempt, up to 60 s',
                      }),
                    }),
                  ],
                  { description: 'The event it is stopped on and why; null while it runs' },
                ),
              },
              { $id: 'ProjectionStatus' },
            ),
          ),
        ),
      },
    },
    async handler({ services }) {
      return { status: 200, body: { success: true, data: await services.consumers.status() } };
    },
  }),
  route<unknown, unknown, Static<typeof ProjectionParams>>({
    method: 'post',
    path: '/admin/v1/projections/{name}/rebuild',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Rebuild a projection from the log into new tables, then swap them in atomically.',
    params: ProjectionParams,
    responses: {
      200: {
        description: 'Rebuilt',
        schema: Success(
          Type.Object({
            name: Type.String({ description: 'The projection rebuilt' }),
            events: Type.Integer({ description: 'How many events the rebuild applied' }),
            position: Type.String({ description: 'The log position the rebuild reached: the projection’s checkpoint now' }),
          }),
        ),
      },
    },
    async handler({ services, params }) {
      if (!services.engine.projections.some((p) => p.name === params.name)) throw new HttpError(404, 'Projection not found', { code: 'projection_not_found' });
      const result = await services.engine.rebuild(params.name);
      return { status: 200, body: { success: true, data: { name: params.name, ...result } } };
    },
  }),
];
