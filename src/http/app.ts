import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TSchema } from '@sinclair/typebox';
import express, { type NextFunction, type Request, type Response } from 'express';
import proxyAddr from 'proxy-addr';
import client from 'prom-client';
import { ProviderFailure } from '../app/kyc';
import { LedgerProviderFailure } from '../app/ledger';
import { TooManySends } from '../app/login';
import { isOutage } from '../app/outage';
import type { Tally } from '../app/tally';
import { DomainError } from '../domain/decider';
import { StoreUnavailableError, WrongExpectedRevisionError } from '../eventstore/port';
import { HttpError, MESSAGES, STATUS_OF } from './errors';
import { registerDomainMetrics } from './metrics';
import { buildOpenApi, renderDocs } from './openapi';
import { carriesOperatorToken } from './operator-token';
import { RateLimiter } from './ratelimit';
import { expressPath, type HttpRequest, type RequestContext, type RouteSpec } from './route';
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
const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

const JSON_TYPE = /^application\/(?:[^\s;/]+\+)?json\s*(?:;|$)/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

/** What a request carries between its steps (in express's res.locals). */
interface RequestLocals {
  requestId: string;
  routePath?: string;
}

interface RouteInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** A request header as one string (node joins repeated ones, as express's req.get returns them). */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

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
  const clientIp = clientIpResolver(tally.config.trustProxy);
  app.disable('x-powered-by');
  // No ETag: every answer is computed fresh from the read models, and hashing each body costs time.
  app.set('etag', false);
  app.set('trust proxy', false);
  app.locals.openapi = openapi;
  app.locals.docs = renderDocs(openapi);
  app.locals.metrics = metrics;
  registerDomainMetrics(metrics.registry, tally);

  /** Every request: its id, its metrics and log line once answered, the per-IP limit (throws a 429). */
  function begin(req: IncomingMessage, res: ServerResponse, locals: RequestLocals): void {
    const incoming = header(req, 'x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Answers carry tokens, codes, secrets and account data: no cache (browser, proxy) keeps any.
    res.setHeader('Cache-Control', 'no-store');
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const routePath = locals.routePath ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const method = req.method ?? '';
      metrics.requests.inc({ method, route: routePath, status: String(res.statusCode) });
      metrics.duration.observe({ method, route: routePath }, seconds);
      // Path only: query strings may carry emails or tokens.
      tally.log.info({ requestId, method, route: routePath, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
    });
    const wait = ipLimiter.take(clientIp(req));
    if (wait > 0) throw new HttpError(429, MESSAGES.tooManyRequests, {}, { 'Retry-After': String(wait) });
  }

  /** A route's work once its input is read: credentials, schemas, the handler, the answer. */
  async function serve(spec: RouteSpec, req: HttpRequest, res: ServerResponse, requestId: string, input: RouteInput): Promise<void> {
    const ctx = await authenticate(spec, req, res, requestId);
    let jsonText: string | undefined;
    if (spec.body && carriesBody(req)) {
      // JSON routes read JSON only, in UTF-8; the hosted pages' buttons post forms (RouteSpec.forms).
      const type = header(req, 'content-type') ?? '';
      if (JSON_TYPE.test(type)) {
        const charset = CHARSET.exec(type)?.[1];
        if (charset && charset.toLowerCase() !== 'utf-8') throw new HttpError(415, 'Unsupported body encoding');
        // The very text the body was parsed from (both parsers drop a byte order mark).
        jsonText = req.rawBody?.toString('utf8').replace(/^\uFEFF/, '');
      } else if (!(spec.forms && FORM_TYPE.test(type))) throw new HttpError(415, MESSAGES.jsonOnly);
    }
    ctx.params = spec.params ? validate(spec.params, { ...(input.params as object) }, { coerce: true }) : input.params;
    ctx.query = spec.query ? validate(spec.query, { ...(input.query as object) }, { coerce: true }) : input.query;
    if (spec.headers) ctx.headers = validate(spec.headers, declaredHeaders(spec.headers, req), { coerce: false });
    if (spec.body) ctx.body = validate(spec.body, input.body ?? {}, { coerce: false, jsonText });
    const reply = await spec.handler(ctx);
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
    res.statusCode = reply.status;
    if (reply.contentType) {
      res.setHeader('Content-Type', reply.contentType);
      // Hosted pages (payment, identity) are never framed by another site (clickjacking).
      if (reply.contentType.startsWith('text/html')) res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
      res.end(reply.body as string);
    } else if (reply.body === undefined) res.end();
    else {
      // No ETag, no freshness check: answers are computed fresh. Node adds the Content-Length of a
      // body given whole to end().
      res.setHeader('Content-Type', JSON_CONTENT_TYPE);
      res.end(JSON.stringify(reply.body));
    }
  }

  /** The error envelope of section 7 for anything a request ran into. */
  function fail(error: unknown, res: ServerResponse, locals: RequestLocals): void {
    const { status, body, headers } = toErrorReply(error);
    // A store out of reach is logged once per outage (tally.outage); each request only by its request line.
    if (status === 503 && isUnavailable(error)) tally.outage.unavailable(error);
    else if (status >= 500) tally.log.error({ err: error, requestId: locals.requestId, route: locals.routePath }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.statusCode = status;
    res.setHeader('Content-Type', JSON_CONTENT_TYPE);
    res.end(JSON.stringify(body));
  }

  app.use((req, res, next) => {
    begin(req, res, res.locals as RequestLocals);
    next();
  });

  // Provider callbacks are verified over their raw bytes, so keep them.
  const keepRaw = (req: Request, _res: Response, buf: Buffer) => {
    (req as HttpRequest).rawBody = buf;
  };
  app.use(express.json({ limit: BODY_LIMIT, strict: false, type: ['application/json', 'application/*+json'], verify: keepRaw }));
  // The sandbox hosted pages post plain HTML forms.
  app.use(express.urlencoded({ limit: BODY_LIMIT, extended: false }));

  for (const spec of routes) {
    app[spec.method](expressPath(spec.path), async (req: Request, res: Response) => {
      res.locals.routePath = spec.path;
      await serve(spec, req, res, res.locals.requestId as string, { params: req.params, query: req.query, body: req.body });
    });
  }

  async function authenticate(spec: RouteSpec, req: HttpRequest, res: ServerResponse, requestId: string): Promise<RequestContext> {
    const ctx: RequestContext = {
      tally,
      body: undefined,
      query: undefined,
      params: undefined,
      headers: {},
      requestId,
      partnerId: '',
      userId: '',
      req,
      res,
      locals: app.locals,
      command: (commandId) => ({
        commandId: commandId ?? randomUUID(),
        unkeyed: commandId === undefined,
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
        const key = header(req, 'x-api-key') ?? '';
        const secret = header(req, 'x-api-secret') ?? '';
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
        if (!carriesOperatorToken(header(req, 'authorization'), token)) throw new HttpError(401, 'Invalid admin token');
        return ctx;
      }
      case 'bearer': {
        const token = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '')?.[1];
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

  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => fail(error, res, res.locals as RequestLocals));

  return app;
}

/** True when the request says a body follows (whatever it parsed to). */
function carriesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** The request's values of the headers a route declares (those it does not carry left out). */
function declaredHeaders(schema: TSchema, req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys((schema as { properties?: object }).properties ?? {})) {
    const value = header(req, name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

export function toErrorReply(error: unknown): { status: number; body: Record<string, unknown>; headers: Record<string, string> } {
  if (error instanceof HttpError) return { status: error.status, body: { success: false, error: error.message, ...error.extra }, headers: error.headers };
  if (error instanceof ProviderFailure) return { status: 502, body: { success: false, error: error.message }, headers: {} };
  // A payment or payout provider out of reach: nothing half-written (a held payout is handed over
  // again on retry), so the decided 503.
  if (error instanceof LedgerProviderFailure) return { status: 503, body: { success: false, error: MESSAGES.unavailable }, headers: { 'Retry-After': '1' } };
  // A partner key's budget of secret checks is spent (app/secret-checks.ts): come back later, never
  // "wrong credentials". Told by its name, as the class is not imported here.
  if (error instanceof Error && error.name === 'TooManySecretChecks')
    return {
      status: 429,
      body: { success: false, error: MESSAGES.tooManyRequests },
      headers: { 'Retry-After': String((error as Error & { retryAfterSeconds: number }).retryAfterSeconds) },
    };
  if (error instanceof TooManySends) return { status: 429, body: { success: false, error: MESSAGES.tooManyRequests }, headers: { 'Retry-After': '3600' } };
  if (error instanceof WrongExpectedRevisionError)
    return { status: 409, body: { success: false, error: 'Concurrent update; retry the request' }, headers: { 'Retry-After': '1' } };
  if (error instanceof DomainError) return { status: STATUS_OF[error.kind], body: { success: false, error: error.message }, headers: {} };
  // The router could not decode a path parameter (`/transactions/%zz`): the client's fault.
  if (error instanceof URIError) return { status: 400, body: { success: false, error: 'Path parameter is not valid percent-encoding' }, headers: {} };
  const e = error as { type?: string; status?: number; expose?: boolean };
  if (e?.type === 'entity.parse.failed') return { status: 400, body: { success: false, error: MESSAGES.invalidJson }, headers: {} };
  if (e?.type === 'entity.too.large') return { status: 413, body: { success: false, error: MESSAGES.tooLarge }, headers: {} };
  if (e?.type === 'charset.unsupported' || e?.type === 'encoding.unsupported')
    return { status: 415, body: { success: false, error: 'Unsupported body encoding' }, headers: {} };
  // Any other client-side fault of the body (e.g. a Content-Encoding it is not in) that body-parser
  // reports: its 4xx, not a 500.
  if (e?.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500)
    return { status: e.status, body: { success: false, error: 'Invalid request body' }, headers: {} };
  if (error instanceof StoreUnavailableError || isUnavailable(error))
    return { status: 503, body: { success: false, error: MESSAGES.unavailable }, headers: { 'Retry-After': '1' } };
  return { status: 500, body: { success: false, error: MESSAGES.internal }, headers: {} };
}

function isUnavailable(error: unknown): boolean {
  return isOutage(error);
}
