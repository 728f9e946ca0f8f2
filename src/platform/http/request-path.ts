import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TSchema } from '@sinclair/typebox';
import type { Request, RequestHandler, Response } from 'express';
import type { CommandContext } from '../commands/commands';
import { isOutage } from '../outage';
import { uuidV7 } from '../ids';
import type { Logger } from 'pino';
import { writeScope } from '../consumers/read-your-writes';
import { OverloadedError } from '../../eventstore/port';
import { checkedJsonText, formParser, readJsonBody } from './body';
import { COMPRESS_FROM_BYTES, compressFor } from './compress';
import { toErrorReply } from './error-reply';
import { HttpError, MESSAGES, PLATFORM_CODES as C } from './errors';
import type { HttpMetrics } from './metrics';
import { looksLikeAuditorToken } from './auditor-token';
import { carriesOperatorToken } from './operator-token';
import { RateLimiter } from './ratelimit';
import type { Credential, HttpRequest, Reply, RequestContext, RouteSpec } from './route';
import type { RouteTable } from './route-table';
import { validate } from './validation';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const BEARER = /^Bearer\s+(\S+)$/i;

/** Why a bearer token was refused (the 401's code; a missing token is `token_missing`). */
export type BearerRefusal = 'token_expired' | 'token_invalid';

/** Why an auditor token was refused (the 401's code; a missing token is `auditor_token_missing`). */
export type AuditorRefusal = 'auditor_token_expired' | 'auditor_token_invalid';

/** What a request carries between its steps, in express's res.locals. */
interface RequestLocals {
  requestId: string;
  routePath?: string;
  startedNs: bigint;
}

/** A request header as one string (node joins repeated ones, as express's req.get returns them). */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * What the request path needs of the service, and nothing else: who credentials name, the limits,
 * the read-your-writes wait a route may declare, and where a store outage is reported.
 */
export interface RequestPorts {
  log: Logger;
  rateLimit: { partnerRps: number; userRps: number; ipRps: number };
  /** The operator token: the operator API does not exist while it is unset. */
  adminToken: string | undefined;
  /** The partner an API key and secret name, or null. */
  authenticatePartner(apiKey: string, apiSecret: string): Promise<string | null>;
  /** The user and partner a bearer token names, or why it names no one. */
  authenticateBearer(token: string): Promise<{ userId: string; partnerId: string } | BearerRefusal>;
  /**
   * The auditor an auditor token names, its use of `route` (a path template) recorded in the log
   * first; or why it names no one (nothing recorded).
   */
  authenticateAuditor(token: string, route: string, requestId: string): Promise<{ auditorId: string } | AuditorRefusal>;
  readAfterWrites(scope: string, names: string[]): Promise<void>;
  outage: { unavailable(error: unknown): void };
}

/** What a handler is given; its command() names who acts, from the request's credentials. */
class Context implements RequestContext {
  body: unknown = undefined;
  query: unknown = undefined;
  params: unknown = undefined;
  headers: Record<string, string | undefined> = {};
  partnerId = '';
  userId = '';
  auditorId = '';

  constructor(
    readonly services: unknown,
    readonly locals: Record<string, unknown>,
    readonly req: HttpRequest,
    readonly res: ServerResponse,
    readonly requestId: string,
    readonly clientIp: string,
    private readonly auth: Credential,
  ) {}

  /**
   * Who acts, for a command: a getter, so that handlers may take it out of the context (`{ command }`)
   * and a request that makes no command makes no function.
   */
  get command(): (commandId?: string) => CommandContext {
    return (commandId) => ({
      commandId: commandId ?? uuidV7(),
      unkeyed: commandId === undefined,
      metadata: {
        correlationId: this.requestId,
        actor: this.actor(),
        ...(this.partnerId && this.userId ? { partnerId: this.partnerId } : {}),
      },
    });
  }

  private actor(): { kind: 'user' | 'partner' | 'operator' | 'system'; id: string } {
    if (this.userId) return { kind: 'user', id: this.userId };
    if (this.partnerId) return { kind: 'partner', id: this.partnerId };
    return this.auth === 'admin' ? { kind: 'operator', id: 'admin' } : { kind: 'system', id: 'public' };
  }
}

/**
 * The one path of every request, as express's one middleware: begin (request id, headers, metrics and
 * log line, per-IP limit), then the route's work (credentials, input, the wait for the caller's
 * writes where the route reads after them, handler, answer), and fail for anything thrown on the way.
 */
export class RequestPath {
  private readonly partnerLimiter: RateLimiter;
  private readonly ipLimiter: RateLimiter;
  private readonly userLimiter: RateLimiter;
  /** One listener for every response's finish. */
  private readonly finished: (this: Response) => void;

  constructor(
    private readonly ports: RequestPorts,
    private readonly locals: Record<string, unknown>,
    metrics: HttpMetrics,
    private readonly clientIp: (req: IncomingMessage) => string,
  ) {
    this.partnerLimiter = new RateLimiter(ports.rateLimit.partnerRps);
    this.ipLimiter = new RateLimiter(ports.rateLimit.ipRps);
    this.userLimiter = new RateLimiter(ports.rateLimit.userRps);
    this.finished = recordRequest(metrics, ports.log);
  }

  /**
   * Every request, as express's one middleware: begin, its route found in the route table (none:
   * 404), its work, and fail for anything thrown on the way. One middleware, not four: each layer
   * express's router walks costs the request a closure and a path match.
   * The middleware returns nothing to express, and the request forgets express's `next`: the router's
   * closures for the request are garbage at once, instead of living (and being copied by every young
   * collection) while the request waits on the store. Nothing here calls `next`: every request is
   * answered by this path, its errors too.
   */
  serve(table: RouteTable): RequestHandler {
    return (req, res) => {
      req.next = undefined;
      this.serveOne(table, req, res).catch((error: unknown) => {
        // fail() itself threw (the answer could not be written): the connection is all that is left.
        this.ports.log.error({ err: error, requestId: (res.locals as RequestLocals).requestId }, 'request failed and could not be answered');
        res.destroy();
      });
    };
  }

  /** One request along the path (see serve). */
  private async serveOne(table: RouteTable, req: Request, res: Response): Promise<void> {
    const locals = res.locals as RequestLocals;
    try {
      const clientIp = this.begin(req, res, locals);
      const match = table.match(req.method, req.url);
      if (!match) throw unmatched(table, req.url);
      const { spec } = match;
      locals.routePath = spec.path;
      req.params = match.params;
      if (spec.body) await readBody(spec, req, res);
      const ctx = await this.authenticate(spec, req, res, locals.requestId, clientIp);
      readInput(spec, req, ctx);
      const reads = spec.readsAfterWrites;
      if (reads !== undefined)
        for (const model of typeof reads === 'string' ? [reads] : reads) await this.ports.readAfterWrites(writeScope(model, ctx.partnerId), [model]);
      const reply = await spec.handler(ctx);
      if (reply.stream) await stream(res, locals.requestId, reply, reply.stream);
      else send(res, locals.requestId, reply);
    } catch (error) {
      this.fail(error, res, locals);
    }
  }

  /** Every request, matched or not: its id, its metrics and log line once answered, the per-IP limit; who the client is. */
  private begin(req: IncomingMessage, res: Response, locals: RequestLocals): string {
    const incoming = header(req, 'x-request-id');
    locals.requestId = incoming && REQUEST_ID.test(incoming) ? incoming : uuidV7();
    locals.startedNs = process.hrtime.bigint();
    res.on('finish', this.finished);
    const clientIp = this.clientIp(req);
    const wait = this.ipLimiter.take(clientIp);
    if (wait > 0) throw tooManyRequests(wait);
    return clientIp;
  }

  /** The error envelope for anything a request ran into. */
  private fail(error: unknown, res: ServerResponse, locals: RequestLocals): void {
    const { status, body, headers } = toErrorReply(error);
    // A store out of reach is logged once per outage (ports.outage); each request only by its request line.
    if (status === 503 && isOutage(error)) this.ports.outage.unavailable(error);
    // A full queue is load, not a fault: each such request is told by its request line (status 503).
    else if (status >= 500 && !(error instanceof OverloadedError))
      this.ports.log.error({ err: error, requestId: locals.requestId, route: locals.routePath }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    answer(res, locals.requestId, status, headers, JSON_CONTENT_TYPE, JSON.stringify({ ...body, requestId: locals.requestId }));
  }

  /** The request's credentials, as the route requires them (401, or 429 past the partner's or user's limit). */
  private async authenticate(spec: RouteSpec, req: HttpRequest, res: ServerResponse, requestId: string, clientIp: string): Promise<Context> {
    const ctx = new Context(spec.services, this.locals, req, res, requestId, clientIp, spec.auth);
    switch (spec.auth) {
      case 'partner': {
        const key = header(req, 'x-api-key') ?? '';
        const secret = header(req, 'x-api-secret') ?? '';
        const partnerId = key && secret ? await this.ports.authenticatePartner(key, secret) : null;
        if (!partnerId) throw new HttpError(401, MESSAGES.invalidPartner, { code: C.invalidPartner });
        const wait = this.partnerLimiter.take(key);
        if (wait > 0) throw tooManyRequests(wait);
        ctx.partnerId = partnerId;
        return ctx;
      }
      case 'admin': {
        const token = this.ports.adminToken;
        // The operator API does not exist while ADMIN_TOKEN is unset.
        if (!token) throw new HttpError(404, MESSAGES.notFound);
        if (!carriesOperatorToken(header(req, 'authorization'), token)) throw new HttpError(401, 'Invalid admin token', { code: C.invalidAdminToken });
        return ctx;
      }
      case 'bearer': {
        const token = BEARER.exec(header(req, 'authorization') ?? '')?.[1];
        // An auditor token opens auditor routes only: refused here without asking the service.
        const claims = !token ? C.tokenMissing : looksLikeAuditorToken(token) ? C.tokenInvalid : await this.ports.authenticateBearer(token);
        if (typeof claims === 'string') throw bearerRefused(spec, claims);
        const wait = this.userLimiter.take(claims.userId);
        if (wait > 0) throw tooManyRequests(wait);
        ctx.userId = claims.userId;
        ctx.partnerId = claims.partnerId;
        return ctx;
      }
      case 'auditor': {
        const token = BEARER.exec(header(req, 'authorization') ?? '')?.[1];
        const auditor = token ? await this.ports.authenticateAuditor(token, spec.path, requestId) : C.auditorTokenMissing;
        if (typeof auditor === 'string') throw auditorRefused(auditor);
        ctx.auditorId = auditor.auditorId;
        return ctx;
      }
      default:
        return ctx;
    }
  }
}

/** Once a request is answered: its metrics and its log line (a listener of the response's finish). */
function recordRequest(metrics: HttpMetrics, log: Logger): (this: Response) => void {
  return function finished(this: Response): void {
    const { requestId, routePath = 'unmatched', startedNs } = this.locals as RequestLocals;
    const seconds = Number(process.hrtime.bigint() - startedNs) / 1e9;
    const method = this.req.method;
    metrics.requests.inc({ method, route: routePath, status: String(this.statusCode) });
    metrics.duration.observe({ method, route: routePath }, seconds);
    // Path only: query strings may carry emails or tokens.
    log.info({ requestId, method, route: routePath, status: this.statusCode, ms: Math.round(seconds * 1000) }, 'request');
  };
}

function tooManyRequests(retryAfterSeconds: number): HttpError {
  return new HttpError(429, MESSAGES.tooManyRequests, { code: C.rateLimited }, { 'Retry-After': String(retryAfterSeconds) });
}

/**
 * A bearer route's 401: one message (the route's own, or the interface's), told apart by its code, and
 * the challenge of RFC 6750 (`invalid_token` when a token was sent and refused).
 */
function bearerRefused(spec: RouteSpec, why: BearerRefusal | typeof C.tokenMissing): HttpError {
  const challenge = why === C.tokenMissing ? 'Bearer' : 'Bearer error="invalid_token"';
  return new HttpError(401, spec.bearerError ?? MESSAGES.invalidToken, { code: why }, { 'WWW-Authenticate': challenge });
}

/** An auditor route's 401: the interface's one message, told apart by its code, with the challenge of RFC 6750. */
function auditorRefused(why: AuditorRefusal | typeof C.auditorTokenMissing): HttpError {
  const challenge = why === C.auditorTokenMissing ? 'Bearer' : 'Bearer error="invalid_token"';
  return new HttpError(401, MESSAGES.invalidToken, { code: why }, { 'WWW-Authenticate': challenge });
}

/** No route for the method and path: 405 with `Allow` where the path is served under other methods, else 404. */
function unmatched(table: RouteTable, url: string): HttpError {
  const allowed = table.methodsOf(url);
  if (allowed.length === 0) return new HttpError(404, MESSAGES.notFound, { code: C.notFound });
  return new HttpError(405, MESSAGES.methodNotAllowed, { code: C.methodNotAllowed }, { Allow: allowed.join(', ') });
}

/** A route's body: JSON (readJsonBody), or a form where the route takes them. */
async function readBody(spec: RouteSpec, req: Request, res: Response): Promise<void> {
  const json = readJsonBody(req);
  if (json) req.body = await json;
  else if (spec.forms) await new Promise<void>((resolve, reject) => formParser(req, res, (error?: unknown) => (error ? reject(error) : resolve())));
}

/** The route's input, checked against its schemas (400 naming the field), into the handler's context. */
function readInput(spec: RouteSpec, req: Request, ctx: Context): void {
  const jsonText = checkedJsonText(spec, req);
  // Validation fills defaults and coerces in place: on copies, not express's own objects.
  ctx.params = spec.params ? validate(spec.params, { ...req.params }, { coerce: true }) : req.params;
  ctx.query = spec.query ? validate(spec.query, { ...(req.query as object) }, { coerce: true }) : {};
  if (spec.headers) ctx.headers = validate(spec.headers, declaredHeaders(spec.headers, req), { coerce: false });
  if (spec.body) ctx.body = validate(spec.body, req.body ?? {}, { coerce: false, jsonText });
}

/**
 * The request's values of the headers a route declares (those it does not carry left out). A header
 * declared with `x-alias` takes the alias's value when only the alias is sent (`x-idempotency-key`
 * from `Idempotency-Key`), so the schema may require it under its own name and either name satisfies it.
 */
function declaredHeaders(schema: TSchema, req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const properties = (schema as { properties?: Record<string, { 'x-alias'?: string }> }).properties ?? {};
  for (const name of Object.keys(properties)) {
    const alias = properties[name]?.['x-alias'];
    const value = header(req, name) ?? (alias === undefined ? undefined : header(req, alias));
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The handler's answer: JSON unless it names another content type (HTML pages). */
function send(res: ServerResponse, requestId: string, reply: Reply): void {
  if (reply.contentType) answer(res, requestId, reply.status, reply.headers, reply.contentType, reply.body as string);
  // No ETag, no freshness check: answers are computed fresh.
  else answer(res, requestId, reply.status, reply.headers, JSON_CONTENT_TYPE, reply.body === undefined ? undefined : JSON.stringify(reply.body));
}

/**
 * A streamed answer (Reply.stream): the headers of every answer (answer), no length, then each chunk
 * as the client takes it. Leaving the loop early (the client gone) closes the iterable.
 */
async function stream(res: ServerResponse, requestId: string, reply: Reply, chunks: AsyncIterable<string>): Promise<void> {
  const headers = ['X-Request-Id', requestId, 'X-Content-Type-Options', 'nosniff', 'Cache-Control', 'no-store'];
  for (const name in reply.headers ?? {}) headers.push(name, (reply.headers as Record<string, string>)[name] as string);
  headers.push('Content-Type', reply.contentType ?? JSON_CONTENT_TYPE);
  res.writeHead(reply.status, headers);
  let closed = false;
  const gone = new Promise<void>((resolve) =>
    res.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  for await (const chunk of chunks) {
    if (closed || res.destroyed) break;
    if (!res.write(chunk)) await Promise.race([new Promise((resolve) => res.once('drain', resolve)), gone]);
    if (closed || res.destroyed) break;
  }
  if (!closed && !res.destroyed) res.end();
}

/**
 * Every answer: its status and headers given to node as one list (writeHead), then its body. Each
 * says its request id and that its content type is the one named, and none is kept by a cache
 * (browser, proxy) unless the route says otherwise (its own Cache-Control, for static assets):
 * answers carry tokens, codes, secrets and account data. A large body goes compressed to a client
 * that accepts it (compress.ts).
 */
function answer(
  res: ServerResponse,
  requestId: string,
  status: number,
  own: Record<string, string> | undefined,
  contentType: string,
  body: string | undefined,
): void {
  const cacheControl = own?.['Cache-Control'];
  const headers = ['X-Request-Id', requestId, 'X-Content-Type-Options', 'nosniff', 'Cache-Control', cacheControl ?? 'no-store'];
  if (own) for (const name in own) if (name !== 'Cache-Control') headers.push(name, own[name] as string);
  let bytes: Buffer | string | undefined = body;
  if (body !== undefined) {
    const compressed = compressFor(res.req?.headers['accept-encoding'], body, cacheControl?.startsWith('public') === true);
    if (compressed) {
      bytes = compressed.bytes;
      headers.push('Content-Encoding', compressed.encoding);
    }
    if (body.length >= COMPRESS_FROM_BYTES) headers.push('Vary', 'Accept-Encoding');
    headers.push('Content-Type', contentType, 'Content-Length', String(Buffer.byteLength(bytes as string | Buffer)));
    // Hosted pages (payment, identity) are never framed by another site (clickjacking).
    if (contentType.startsWith('text/html')) headers.push('Content-Security-Policy', "frame-ancestors 'none'");
  }
  res.writeHead(status, headers);
  res.end(bytes);
}
