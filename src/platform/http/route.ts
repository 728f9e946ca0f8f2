import type { TSchema } from '@sinclair/typebox';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CommandContext } from '../commands/commands';
import type { Refusal } from '../refusals';

/** A request as handlers see it: Node's, with the raw bytes of a body that was read. */
/** `jsonText`: the text a JSON body was parsed from (its byte order mark dropped). */
export type HttpRequest = IncomingMessage & { rawBody?: Buffer; jsonText?: string };

export type Credential = 'partner' | 'bearer' | 'public' | 'admin' | 'signed' | 'auditor';

/**
 * The read models some writes do not wait for (a transfer answers from its own events): each notes
 * its position under `<read model>:<partner id>` (ReadYourWrites.noteWrite), and a read of that model
 * waits for it (ReadYourWrites.readAfterWrites).
 */
export type ReadModelWrittenWithoutWaiting = 'ledger' | 'cards';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send `body` as this content type instead of JSON (HTML pages). */
  contentType?: string;
  /**
   * A body of any size, written as it comes (with `contentType`, instead of `body`): each chunk is
   * written when the client has taken the one before (backpressure), and the iterable is closed
   * (its `finally` runs) as soon as the client goes away. An error after the first chunk cuts the
   * connection: the status is already sent.
   */
  stream?: AsyncIterable<string>;
}

export interface RequestContext<Body = unknown, Query = unknown, Params = unknown, Services = unknown> {
  /** The services the route's module declared it uses, and nothing else (bound by the composition root). */
  services: Services;
  body: Body;
  query: Query;
  params: Params;
  /** The route's declared headers (RouteSpec.headers), validated; {} when it declares none. */
  headers: Record<string, string | undefined>;
  requestId: string;
  /** Set on partner-credential routes. */
  partnerId: string;
  /** Set on bearer routes. */
  userId: string;
  /** Set on auditor routes (the request's use of the route is in the log before its handler runs). */
  auditorId: string;
  /** The client's address as TRUST_PROXY lets us know it (platform/http/client-ip.ts): an IP address, or `unknown`. */
  clientIp: string;
  req: HttpRequest;
  res: ServerResponse;
  /** The app's shared objects (metrics registry, OpenAPI document, rendered docs). */
  locals: Record<string, unknown>;
  /** A fresh command context (who, correlation) for one command of this request. */
  command(commandId?: string): CommandContext;
}

export interface RouteSpec<Body = unknown, Query = unknown, Params = unknown, Services = unknown> {
  method: Method;
  /** OpenAPI style: /api/v1/partner/users/{userId}. */
  path: string;
  auth: Credential;
  summary: string;
  tag: string;
  description?: string;
  deprecated?: boolean;
  /** The 401 message of a bearer route when the token is missing or bad (one route's is its own). */
  bearerError?: string;
  body?: TSchema;
  /** The body may also come as an HTML form (the hosted pages' buttons); otherwise JSON only (415). */
  forms?: boolean;
  query?: TSchema;
  params?: TSchema;
  /** Request headers the route reads, by lower-case name (validated like the body; documented as header parameters). */
  headers?: TSchema;
  /**
   * The read model the handler reads, when writes to it do not wait for it: the request waits
   * (bounded) until it has the caller's partner's last writes, after its credentials and input are
   * checked and before its handler runs, so a caller that wrote reads what it wrote.
   */
  readsAfterWrites?: ReadModelWrittenWithoutWaiting | ReadModelWrittenWithoutWaiting[];
  responses: Record<number, { description: string; schema?: TSchema }>;
  /**
   * The refusals of its capability's catalogue the operation can answer (their status from their
   * kind): the reference documents each with its code and message from the same objects the code throws.
   */
  refuses?: readonly Refusal<never>[];
  handler(ctx: RequestContext<Body, Query, Params, Services>): Promise<Reply>;
  /** The services its handler uses (routeFor), by name. */
  uses?: readonly string[];
  /** Set when the route is served: what `ctx.services` is (see bindRoutes). */
  services?: Services;
}

/** Keeps the handler's types tied to its schemas at the definition site (a route that uses no service). */
export function route<Body = unknown, Query = unknown, Params = unknown>(spec: RouteSpec<Body, Query, Params>): RouteSpec {
  return spec as unknown as RouteSpec;
}

/**
 * The `route` of a module whose handlers use some of the service's services: `routeFor<All>()(uses)`
 * names them once; handlers see exactly those in `ctx.services` (typed `Pick<All, ...>`), and the
 * route is served with exactly those (bindRoutes).
 */
export const routeFor =
  <All>() =>
  <K extends keyof All & string>(uses: readonly K[]) =>
  <Body = unknown, Query = unknown, Params = unknown>(spec: RouteSpec<Body, Query, Params, Pick<All, K>>): RouteSpec =>
    ({ ...spec, uses }) as unknown as RouteSpec;

/** Routes as served: each with the services it named (routeFor), and no other. */
export const bindRoutes = (routes: RouteSpec[], all: object): RouteSpec[] =>
  routes.map((r) => ({ ...r, services: Object.fromEntries((r.uses ?? []).map((name) => [name, (all as Record<string, unknown>)[name]])) }));
