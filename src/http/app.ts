import { randomUUID, timingSafeEqual } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import client from 'prom-client';
import { ProviderFailure } from '../app/kyc';
import { LedgerProviderFailure } from '../app/ledger';
import { TooManySends } from '../app/login';
import type { Tally } from '../app/tally';
import { DomainError } from '../domain/decider';
import { StoreUnavailableError, WrongExpectedRevisionError } from '../eventstore/port';
import { HttpError, MESSAGES, STATUS_OF } from './errors';
import { buildOpenApi, renderDocs } from './openapi';
import { RateLimiter } from './ratelimit';
import { expressPath, type RequestContext, type RouteSpec } from './route';
import { adminRoutes } from './routes/admin';
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
import { validate } from './validation';

const BODY_LIMIT = '100kb';

export interface HttpMetrics {
  registry: client.Registry;
  requests: client.Counter<'method' | 'route' | 'status'>;
  duration: client.Histogram<'method' | 'route'>;
}

function makeMetrics(): HttpMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new client.Counter({
      name: 'tally_http_requests_total',
      help: 'HTTP requests',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    duration: new client.Histogram({
      name: 'tally_http_request_duration_seconds',
      help: 'HTTP request duration',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
  };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function clientIp(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}

/** Every route of the service, in one list: served, validated and documented from it. */
export function allRoutes(): RouteSpec[] {
  return [
    ...partnerUserRoutes,
    ...loginRoutes,
    ...profileRoutes,
    ...kycRoutes,
    ...ledgerRoutes,
    ...exchangeRoutes,
    ...sandboxIdentityRoutes,
    ...sandboxLedgerRoutes,
    ...webhookRoutes,
    ...adminRoutes,
    ...operationsRoutes,
  ];
}

export function createApp(tally: Tally): express.Express {
  const app = express();
  const metrics = makeMetrics();
  const routes = allRoutes();
  const openapi = buildOpenApi(routes, tally.config.publicBaseUrl);
  const partnerLimiter = new RateLimiter(tally.config.rateLimit.partnerRps);
  const ipLimiter = new RateLimiter(tally.config.rateLimit.ipRps);
  const userLimiter = new RateLimiter(tally.config.rateLimit.userRps);
  app.disable('x-powered-by');
  // No ETag: every answer is computed fresh from the read models, and hashing each body costs time.
  app.set('etag', false);
  app.set('trust proxy', false);
  app.locals.openapi = openapi;
  app.locals.docs = renderDocs(openapi);
  app.locals.metrics = metrics;

  app.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && /^[A-Za-z0-9._-]{1,100}$/.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const routePath = (res.locals.routePath as string | undefined) ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.requests.inc({ method: req.method, route: routePath, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, route: routePath }, seconds);
      // Path only: query strings may carry emails or tokens.
      tally.log.info({ requestId, method: req.method, route: routePath, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
    });
    const wait = ipLimiter.take(clientIp(req));
    if (wait > 0) return next(new HttpError(429, MESSAGES.tooManyRequests, {}, { 'Retry-After': String(wait) }));
    next();
  });

  // Provider callbacks are verified over their raw bytes, so keep them.
  const keepRaw = (req: Request, _res: Response, buf: Buffer) => {
    (req as Request & { rawBody?: Buffer }).rawBody = buf;
  };
  app.use(express.json({ limit: BODY_LIMIT, strict: false, type: ['application/json', 'application/*+json'], verify: keepRaw }));
  // The sandbox hosted pages post plain HTML forms.
  app.use(express.urlencoded({ limit: BODY_LIMIT, extended: false }));

  // Routes without parameters are found with one lookup of their exact method and path (express
  // tries each route's pattern in turn, ~80 of them). Anything else (another case, a trailing slash,
  // HEAD) goes through express's router as before, so every request still reaches the same handler.
  const exact = new Map<string, (req: Request, res: Response) => Promise<void>>();
  app.use((req, res, next) => {
    const handler = exact.get(`${req.method} ${req.path}`);
    if (!handler) return next();
    req.params = {};
    handler(req, res).catch(next);
  });

  for (const [index, spec] of routes.entries()) {
    const handler = async (req: Request, res: Response) => {
      res.locals.routePath = spec.path;
      const ctx = await authenticate(spec, req, res);
      ctx.params = spec.params ? validate(spec.params, { ...req.params }, { coerce: true }) : req.params;
      ctx.query = spec.query ? validate(spec.query, { ...(req.query as object) }, { coerce: true }) : req.query;
      if (spec.body) ctx.body = validate(spec.body, req.body ?? {}, { coerce: false });
      const reply = await spec.handler(ctx);
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
      if (reply.contentType) res.status(reply.status).type(reply.contentType).send(reply.body);
      else if (reply.body === undefined) res.status(reply.status).end();
      else {
        // What res.json sends (no ETag, no freshness check: answers are computed fresh), without its
        // per-call work; Node adds the Content-Length of a body given whole to end().
        res.statusCode = reply.status;
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.end(JSON.stringify(reply.body));
      }
    };
    app[spec.method](expressPath(spec.path), handler);
    if (!spec.path.includes('{') && !routes.slice(0, index).some((earlier) => earlier.method === spec.method && pathPattern(earlier.path).test(spec.path)))
      exact.set(`${spec.method.toUpperCase()} ${spec.path}`, handler);
  }

  async function authenticate(spec: RouteSpec, req: Request, res: Response): Promise<RequestContext> {
    const requestId = res.locals.requestId as string;
    const ctx: RequestContext = {
      tally,
      body: undefined,
      query: undefined,
      params: undefined,
      requestId,
      partnerId: '',
      userId: '',
      req,
      res,
      command: (commandId) => ({
        commandId: commandId ?? randomUUID(),
        metadata: {
          correlationId: requestId,
          actor: ctx.userId
            ? { kind: 'user', id: ctx.userId }
            : ctx.partnerId
              ? { kind: 'partner', id: ctx.partnerId }
              : spec.auth === 'admin'
                ? { kind: 'operator', id: 'admin' }
                : { kind: 'system', id: 'public' },
          ...(ctx.partnerId && ctx.userId ? { partnerId: ctx.partnerId } : {}),
        },
      }),
    };
    switch (spec.auth) {
      case 'partner': {
        const key = req.get('x-api-key') ?? '';
        const secret = req.get('x-api-secret') ?? '';
        const partnerId = key && secret ? await tally.partners.authenticate(key, secret) : null;
        if (!partnerId) throw new HttpError(401, MESSAGES.invalidPartner);
        const wait = partnerLimiter.take(key);
        if (wait > 0) throw new HttpError(429, MESSAGES.tooManyRequests, {}, { 'Retry-After': String(wait) });
        ctx.partnerId = partnerId;
        return ctx;
      }
      case 'admin': {
        const token = tally.config.adminToken;
        // The operator API does not exist while ADMIN_TOKEN is unset.
        if (!token) throw new HttpError(404, MESSAGES.notFound);
        const given = /^Bearer\s+(\S+)$/i.exec(req.get('authorization') ?? '')?.[1];
        if (!given || !safeEqual(given, token)) throw new HttpError(401, 'Invalid admin token');
        return ctx;
      }
      case 'bearer': {
        const token = /^Bearer\s+(\S+)$/i.exec(req.get('authorization') ?? '')?.[1];
        const claims = token ? await tally.login.authenticateBearer(token) : null;
        if (!claims) throw new HttpError(401, spec.bearerError ?? MESSAGES.invalidToken);
        const wait = userLimiter.take(claims.userId);
        if (wait > 0) throw new HttpError(429, MESSAGES.tooManyRequests, {}, { 'Retry-After': String(wait) });
        ctx.userId = claims.userId;
        ctx.partnerId = claims.partnerId;
        return ctx;
      }
      default:
        return ctx;
    }
  }

  app.use((_req, _res, next) => next(new HttpError(404, MESSAGES.notFound)));

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { status, body, headers } = toErrorReply(error);
    if (status >= 500) tally.log.error({ err: error, requestId: res.locals.requestId, route: res.locals.routePath }, 'request failed');
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    void req;
    res.status(status).json(body);
  });

  return app;
}

/** What express's router matches for a route path: each parameter is one non-empty segment (case-insensitive). */
function pathPattern(path: string): RegExp {
  const escaped = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
  return new RegExp(`^${escaped}/?$`, 'i');
}

export function toErrorReply(error: unknown): { status: number; body: Record<string, unknown>; headers: Record<string, string> } {
  if (error instanceof HttpError) return { status: error.status, body: { success: false, error: error.message, ...error.extra }, headers: error.headers };
  if (error instanceof ProviderFailure || error instanceof LedgerProviderFailure)
    return { status: 502, body: { success: false, error: error.message }, headers: {} };
  if (error instanceof TooManySends) return { status: 429, body: { success: false, error: MESSAGES.tooManyRequests }, headers: { 'Retry-After': '3600' } };
  if (error instanceof WrongExpectedRevisionError)
    return { status: 409, body: { success: false, error: 'Concurrent update; retry the request' }, headers: { 'Retry-After': '1' } };
  if (error instanceof DomainError) return { status: STATUS_OF[error.kind], body: { success: false, error: error.message }, headers: {} };
  const e = error as { type?: string; status?: number };
  if (e?.type === 'entity.parse.failed') return { status: 400, body: { success: false, error: MESSAGES.invalidJson }, headers: {} };
  if (e?.type === 'entity.too.large') return { status: 413, body: { success: false, error: MESSAGES.tooLarge }, headers: {} };
  if (e?.type === 'charset.unsupported' || e?.type === 'encoding.unsupported')
    return { status: 415, body: { success: false, error: 'Unsupported body encoding' }, headers: {} };
  if (error instanceof StoreUnavailableError || isUnavailable(error))
    return { status: 503, body: { success: false, error: MESSAGES.unavailable }, headers: { 'Retry-After': '1' } };
  return { status: 500, body: { success: false, error: MESSAGES.internal }, headers: {} };
}

function isUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (typeof e?.code === 'string' && (e.code.startsWith('08') || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P03'].includes(e.code))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|PGlite is closed/i.test(e?.message ?? '');
}
