import { IncomingMessage, type ServerOptions, ServerResponse } from 'node:http';
import express from 'express';
import { registerNotificationMetrics } from '../app/notifications';
import { httpMetrics, registerDomainMetrics } from './metrics';
import { clientIpResolver } from '../platform/http/client-ip';
import { buildOpenApi, renderDocs } from './openapi';
import { RequestPath, type RequestPorts } from '../platform/http/request-path';
import { bindRoutes, type RouteSpec } from '../platform/http/route';
import { RouteTable } from '../platform/http/route-table';
import { adminRoutes } from './admin';
import { auditorRoutes, auditReadRoutes, checkpointRoutes } from './audit';
import { cardOperationRoutes, cardsRoutes, cardTransactionRoutes, sandboxCardTransactionRoutes } from './cards';
import { operationsRoutes } from './operations';
import { exchangeRoutes, ledgerRoutes, sandboxLedgerRoutes } from './ledger';
import { kycRoutes, loginRoutes, partnerUserRoutes, privacyRoutes, profileRoutes, sandboxIdentityRoutes } from './identity';
import { notificationWebhooks, partnerWebhookRoutes } from './notifications';
import { webhookRoutes } from './provider-callbacks';
import type { AppServices } from './services';

/** Every route of the service, in one list: served, validated and documented from it. */
export function allRoutes(): RouteSpec[] {
  return [
    ...partnerUserRoutes,
    ...privacyRoutes,
    ...loginRoutes,
    ...profileRoutes,
    ...kycRoutes,
    ...ledgerRoutes,
    ...cardsRoutes,
    ...cardOperationRoutes,
    ...cardTransactionRoutes,
    ...sandboxCardTransactionRoutes,
    ...exchangeRoutes,
    ...sandboxIdentityRoutes,
    ...sandboxLedgerRoutes,
    ...webhookRoutes,
    ...partnerWebhookRoutes,
    ...adminRoutes,
    ...auditorRoutes,
    ...checkpointRoutes,
    ...auditReadRoutes,
    ...operationsRoutes,
  ];
}

/** A route of the sandbox (its providers' decisions, its emails and inbox, its hosted pages). */
export const isSandboxRoute = (route: RouteSpec) => route.path.startsWith('/sandbox/');

/**
 * The service over HTTP: every request takes one path through express, RequestPath.serve: its route
 * found in the route table (or the 404), its body read, its work done, anything thrown answered.
 */
export function createApp(services: AppServices): express.Express {
  const { config } = services;
  const app = express();
  app.disable('x-powered-by');
  // No ETag: every answer is computed fresh from the read models, and hashing each body costs time.
  app.set('etag', false);
  app.set('trust proxy', false);
  // Sandbox routes exist only in sandbox mode: outside it they are unknown paths (404), whatever they are sent.
  const routes = allRoutes().filter((r) => config.sandbox || !isSandboxRoute(r));
  const metrics = httpMetrics();
  registerDomainMetrics(metrics.registry, services);
  registerNotificationMetrics(metrics.registry, { sql: services.sql, dispatcher: services.notifications.dispatcher });
  const openapi = buildOpenApi(routes, config.publicBaseUrl, notificationWebhooks);
  Object.assign(app.locals, { openapi, docs: renderDocs(openapi), metrics });
  const path = new RequestPath(requestPorts(services), app.locals, metrics, clientIpResolver(config.trustProxy));
  app.use(path.serve(new RouteTable(bindRoutes(routes, services))));
  return app;
}

/** What the request path asks of the service: credentials, limits, read-your-writes, outages. */
function requestPorts(services: AppServices): RequestPorts {
  const { config, partners, login, reads, outage, auditors } = services;
  return {
    log: services.log,
    rateLimit: config.rateLimit,
    adminToken: config.adminToken,
    authenticatePartner: (apiKey, apiSecret) => partners.authenticate(apiKey, apiSecret),
    authenticateBearer: (token) => login.authenticateBearer(token),
    authenticateAuditor: (token, route, requestId) => auditors.authenticate(token, route, requestId),
    readAfterWrites: (scope, names) => reads.readAfterWrites(scope, names),
    outage,
  };
}

/**
 * Options for node's createServer that make its requests and responses with express's prototypes
 * (app.request, app.response) from the start. Express sets those prototypes on every request it
 * handles; on objects born with them that is a no-op, while swapping the prototype of a live
 * request and response makes V8 keep them, and what they hold, much longer (they outlive young
 * collections and fill the old space): docs/performance.md has the figures. The
 * classes' prototypes take the place of app.request and app.response (the same chain: express's
 * methods, then node's), so that node sizes the objects as it sizes its own.
 */
export function expressServerOptions(app: express.Express): ServerOptions {
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse extends ServerResponse {}
  for (const [born, name] of [
    [ExpressRequest.prototype, 'request'],
    [ExpressResponse.prototype, 'response'],
  ] as const) {
    const current = app[name] as object;
    Object.setPrototypeOf(born, Object.getPrototypeOf(current));
    Object.defineProperties(born, Object.getOwnPropertyDescriptors(current));
    (app as unknown as Record<string, object>)[name] = born;
  }
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof ServerResponse };
}
