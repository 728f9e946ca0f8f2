import type { IncomingMessage } from 'node:http';
import express, { type Request, type Response } from 'express';
import proxyAddr from 'proxy-addr';
import type { Tally } from '../app/tally';
import { HttpError, MESSAGES } from './errors';
import { httpMetrics, registerDomainMetrics } from './metrics';
import { buildOpenApi, renderDocs } from './openapi';
import { RequestPath } from './request-path';
import type { RouteSpec } from './route';
import { RouteTable } from './route-table';
import { adminRoutes } from './routes/admin';
import { cardOperationRoutes } from './routes/cards-operations';
import { cardsRoutes } from './routes/cards';
import { operationsRoutes } from './routes/operations';
import { exchangeRoutes } from './routes/exchange';
import { kycRoutes } from './routes/kyc';
import { ledgerRoutes } from './routes/ledger';
import { loginRoutes } from './routes/login';
import { partnerUserRoutes } from './routes/partner-users';
import { profileRoutes } from './routes/profile';
import { sandboxIdentityRoutes } from './routes/sandbox';
import { sandboxLedgerRoutes } from './routes/sandbox-ledger';
import { webhookRoutes } from './routes/webhooks';

/**
 * Who the client is for the per-IP limit: the socket's peer, unless TRUST_PROXY says which proxies
 * in front may name it in X-Forwarded-For (a hop count, or their addresses/CIDRs). Anyone can send
 * the header, so without that setting it is never believed.
 */
export function clientIpResolver(trustProxy: string | undefined): (req: IncomingMessage) => string {
  const setting = trustProxy?.trim();
  if (!setting || setting === 'false' || setting === '0') return (req) => req.socket.remoteAddress ?? 'unknown';
  const trust = /^\d+$/.test(setting)
    ? (_address: string, hop: number) => hop < Number(setting)
    : proxyAddr.compile(
        setting
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
  return (req) => proxyAddr(req, trust);
}

/** Every route of the service, in one list: served, validated and documented from it. */
export function allRoutes(): RouteSpec[] {
  return [
    ...partnerUserRoutes,
    ...loginRoutes,
    ...profileRoutes,
    ...kycRoutes,
    ...ledgerRoutes,
    ...cardsRoutes,
    ...cardOperationRoutes,
    ...exchangeRoutes,
    ...sandboxIdentityRoutes,
    ...sandboxLedgerRoutes,
    ...webhookRoutes,
    ...adminRoutes,
    ...operationsRoutes,
  ];
}

/**
 * The service over HTTP: every request takes one path through express: begin, then its route found
 * in the route table (its body read, its work done) or the 404, and anything thrown on the way is
 * answered by fail.
 */
export function createApp(tally: Tally): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // No ETag: every answer is computed fresh from the read models, and hashing each body costs time.
  app.set('etag', false);
  app.set('trust proxy', false);
  const routes = allRoutes();
  const metrics = httpMetrics();
  registerDomainMetrics(metrics.registry, tally);
  const openapi = buildOpenApi(routes, tally.config.publicBaseUrl);
  Object.assign(app.locals, { openapi, docs: renderDocs(openapi), metrics });
  const path = new RequestPath(tally, app.locals, metrics, clientIpResolver(tally.config.trustProxy));
  app.use(path.begin);
  app.use(path.route(new RouteTable(routes)));
  app.use((_req: Request, _res: Response) => {
    throw new HttpError(404, MESSAGES.notFound);
  });
  app.use(path.fail);
  return app;
}
