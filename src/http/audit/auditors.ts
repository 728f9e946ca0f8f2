import { type Static, Type } from '@sinclair/typebox';
import { AUDIT_REFUSALS as R } from '../../domain/audit';
import { routeFor } from '../../platform/http/route';
import { FilledText, instantOf, Success, UUID_RE } from '../schemas';
import type { AppServices } from '../services';
import { Instant } from './instant';

/** The services these routes use. */
const USES = ['auditors'] as const;
const route = routeFor<AppServices>()(USES);

const AuditorBody = Type.Object({
  name: { ...FilledText('name', 200), description: 'Who the token is for (the auditor or the firm): not blank, trimmed when stored' },
  expiresAt: Instant(
    'expiresAt',
    'When the token stops working: an ISO 8601 date-time (UTC without an offset) or a date alone (00:00 UTC); in the future, and at most 1 year ahead',
  ),
});
const AuditorParams = Type.Object({
  id: Type.String({ description: 'The auditor’s id (a UUID), as its creation answered it; an unknown id is 404 `Auditor not found`' }),
});

const AuditorCreated = Type.Object(
  {
    id: Type.String({ description: 'The auditor’s id (a UUID): its stream in the log is `auditor-<id>`' }),
    name: Type.String({ description: 'Who the token is for, trimmed' }),
    token: Type.String({
      description:
        'The auditor token, sent as `Authorization: Bearer <token>` to the /audit/v1 routes (`ta_...`): shown only in this answer, as only its hash is stored',
    }),
    expiresAt: Type.String({ format: 'date-time', description: 'When the token stops working (ISO 8601, UTC)' }),
  },
  { $id: 'AuditorCreated' },
);

export const auditorRoutes = [
  route<Static<typeof AuditorBody>>({
    method: 'post',
    path: '/admin/v1/auditors',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Make an auditor token: read-only access to the log through /audit/v1, until it expires or is revoked; the token is shown this once.',
    body: AuditorBody,
    responses: { 201: { description: 'Created', schema: Success(AuditorCreated) } },
    // A blank name is refused by the schema first (validation_error); the decider keeps the rule for other callers.
    refuses: [R.expiryNotInFuture, R.expiryTooFar],
    async handler({ services, body, command }) {
      const expiresAt = new Date(instantOf(body.expiresAt, 'expiresAt'));
      const created = await services.auditors.create(body.name, expiresAt, command());
      return { status: 201, body: { success: true, data: created } };
    },
  }),
  route<unknown, unknown, Static<typeof AuditorParams>>({
    method: 'delete',
    path: '/admin/v1/auditors/{id}',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Revoke an auditor token at once, on every node; revoking a revoked one changes nothing.',
    params: AuditorParams,
    responses: { 204: { description: 'Revoked' } },
    refuses: [R.auditorNotFound],
    async handler({ services, params, command }) {
      if (!UUID_RE.test(params.id)) throw R.auditorNotFound();
      await services.auditors.revoke(params.id.toLowerCase(), command());
      return { status: 204 };
    },
  }),
];
