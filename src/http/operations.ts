import { Type } from '@sinclair/typebox';
import { HttpError, PLATFORM_CODES } from '../platform/http/errors';
import { carriesOperatorToken } from '../platform/http/operator-token';
import { routeFor } from '../platform/http/route';
import { REFERENCE_SCRIPT_PATH, referenceScript } from './openapi';
import { ErrorBody, HtmlPage, JavaScriptText, PrometheusText } from './schemas';
import type { AppServices } from './services';

/** The services these routes use. */
const USES = ['config', 'consumers', 'engine', 'store'] as const;
const route = routeFor<AppServices>()(USES);

/** The renderer's script, read from its package on first use. */
let referenceScriptText: string | undefined;

const ProjectionLag = Type.Object(
  {
    name: Type.String({ description: 'The projection’s name (the read model it builds)' }),
    lag: Type.Integer({ description: 'Events of its types the log holds beyond its checkpoint, counted up to 1,000' }),
    stoppedSince: Type.Optional(
      Type.String({ format: 'date-time', description: 'When it stopped on an event it cannot apply (ISO 8601, UTC); absent while it runs' }),
    ),
  },
  { $id: 'ProjectionLag' },
);
const StoreKind = Type.String({ description: 'The kind of event store: `postgres`, `pglite` (the embedded one) or `kurrentdb`' });
const Lags = Type.Array(ProjectionLag, { description: 'Every projection with its lag' });

export const operationsRoutes = [
  route({
    method: 'get',
    path: '/healthz',
    auth: 'public',
    tag: 'Operations',
    summary: 'The process is up.',
    responses: { 200: { description: 'Up', schema: Type.Object({ status: Type.Literal('ok', { description: 'Always `ok`' }) }) } },
    async handler() {
      return { status: 200, body: { status: 'ok' } };
    },
  }),
  route({
    method: 'get',
    path: '/readyz',
    auth: 'public',
    tag: 'Operations',
    summary: 'The store answers and no projection has been stopped on an event for 30 s; projection lag per read model.',
    responses: {
      200: {
        description: 'Ready',
        schema: Type.Object({ status: Type.Literal('ready', { description: 'Always `ready`' }), store: StoreKind, projections: Lags }),
      },
      503: {
        description: 'Not ready: the store does not answer, or a projection or the outbox has been stopped on an event (then with `store` and `projections`)',
        schema: Type.Composite([
          ErrorBody,
          Type.Object({
            status: Type.Literal('unavailable', { description: 'Always `unavailable`' }),
            store: Type.Optional({ ...StoreKind, description: `${StoreKind.description}; absent when the store does not answer` }),
            projections: Type.Optional({ ...Lags, description: 'Every projection with its lag; absent when the store does not answer' }),
          }),
        ]),
      },
    },
    async handler({ services, requestId }) {
      const refused = { success: false, error: 'Service unavailable', code: 'service_unavailable', requestId };
      try {
        await services.store.ping();
        // Projections and reactors alike: a stopped outbox holds every partner's notifications back.
        const status = await services.consumers.status();
        const projections = status.map(({ name, lag, failure }) => ({ name, lag, ...(failure ? { stoppedSince: failure.since } : {}) }));
        // A read model stopped on an event for a while: this node serves stale reads of it.
        const stopped = status.filter((s) => s.failure && Date.now() - Date.parse(s.failure.since) >= services.engine.unreadyAfterFailureMs);
        if (stopped.length > 0) return { status: 503, body: { status: 'unavailable', ...refused, store: services.store.kind, projections } };
        return { status: 200, body: { status: 'ready', store: services.store.kind, projections } };
      } catch {
        return { status: 503, body: { status: 'unavailable', ...refused } };
      }
    },
  }),
  route({
    method: 'get',
    path: '/metrics',
    auth: 'public',
    tag: 'Operations',
    summary: 'Prometheus metrics (with the operator token as a bearer token when ADMIN_TOKEN is set).',
    responses: {
      200: { description: 'Prometheus text format', schema: PrometheusText },
      401: { description: 'ADMIN_TOKEN is set and the request does not carry it' },
    },
    async handler({ services, locals, req }) {
      const token = services.config.adminToken;
      if (token && !carriesOperatorToken(req.headers.authorization, token))
        throw new HttpError(401, 'Invalid admin token', { code: PLATFORM_CODES.invalidAdminToken });
      const { registry } = locals.metrics as { registry: import('prom-client').Registry };
      return { status: 200, body: await registry.metrics(), contentType: registry.contentType };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/openapi.json',
    auth: 'public',
    tag: 'Operations',
    summary: 'OpenAPI 3.1 description of every route.',
    responses: {
      200: {
        description: 'OpenAPI document',
        schema: Type.Object(
          {
            openapi: Type.String({ description: 'The OpenAPI version: `3.1.0`' }),
            info: Type.Object({}, { additionalProperties: true, description: 'The API’s title, version and description' }),
            paths: Type.Object({}, { additionalProperties: true, description: 'Every operation served, by path and method' }),
          },
          { additionalProperties: true },
        ),
      },
    },
    async handler({ locals }) {
      return { status: 200, body: locals.openapi };
    },
  }),
  route({
    method: 'get',
    path: '/docs',
    auth: 'public',
    tag: 'Operations',
    summary: 'Rendered API reference.',
    responses: { 200: { description: 'HTML', schema: HtmlPage } },
    async handler({ locals }) {
      return { status: 200, body: locals.docs as string, contentType: 'text/html; charset=utf-8' };
    },
  }),
  route({
    method: 'get',
    path: REFERENCE_SCRIPT_PATH,
    auth: 'public',
    tag: 'Operations',
    summary: 'The script that renders /docs (Scalar, from the installed package).',
    responses: { 200: { description: 'JavaScript', schema: JavaScriptText } },
    async handler() {
      referenceScriptText ??= referenceScript().toString('utf8');
      // The page names the script by a hash of its bytes (?v=): a browser may keep each version for good.
      const forever = 'public, max-age=31536000, immutable';
      return { status: 200, body: referenceScriptText, contentType: 'text/javascript; charset=utf-8', headers: { 'Cache-Control': forever } };
    },
  }),
];
