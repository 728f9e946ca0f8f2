import { isOutage } from '../outage';
import { DomainError } from '../decider';
import { ProviderAnsweredBadly, ProviderUnavailable, TooManyTries } from '../failures';
import { OverloadedError, StoreUnavailableError, WrongExpectedRevisionError } from '../../eventstore/port';
import { CODE_OF_STATUS, HttpError, MESSAGES, PLATFORM_CODES as C, STATUS_OF } from './errors';

export interface ErrorReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * The error envelope (docs/interface.md, "Errors") for anything a request ran into: the message, and
 * the stable `code` a client switches on; `param` where one field was refused. The request path adds
 * `requestId`.
 */
export function toErrorReply(error: unknown): ErrorReply {
  const reply = replyOf(error);
  const body = reply.body as { code?: unknown; param?: unknown; details?: Array<{ field?: unknown }> };
  if (typeof body.code !== 'string') body.code = CODE_OF_STATUS[reply.status] ?? (reply.status >= 500 ? C.internal : 'invalid_request');
  const field = body.details?.[0]?.field;
  if (body.param === undefined && typeof field === 'string' && field) body.param = field;
  return reply;
}

const reply = (status: number, error: string, code: string, headers: Record<string, string> = {}, more: Record<string, unknown> = {}): ErrorReply => ({
  status,
  body: { success: false, error, code, ...more },
  headers,
});

function replyOf(error: unknown): ErrorReply {
  if (error instanceof HttpError) return { status: error.status, body: { success: false, error: error.message, ...error.extra }, headers: error.headers };
  if (error instanceof ProviderAnsweredBadly) return reply(502, error.message, C.providerError);
  // A payment or payout provider out of reach: nothing half-written (a held payout is handed over
  // again on retry), so the decided 503.
  if (error instanceof ProviderUnavailable) return reply(503, MESSAGES.unavailable, C.unavailable, { 'Retry-After': '1' });
  // Too many tries (a partner key's secret checks, a login code's sends): come back later, never
  // "wrong credentials".
  if (error instanceof TooManyTries) return reply(429, MESSAGES.tooManyRequests, C.rateLimited, { 'Retry-After': String(error.retryAfterSeconds) });
  // A bounded queue is full (a hot account, the event log): nothing was done, come back shortly.
  if (error instanceof OverloadedError) return reply(503, MESSAGES.unavailable, C.unavailable, { 'Retry-After': '1' });
  if (error instanceof WrongExpectedRevisionError) return reply(409, 'Concurrent update; retry the request', C.concurrentUpdate, { 'Retry-After': '1' });
  if (error instanceof DomainError) return reply(STATUS_OF[error.kind], error.message, error.code, {}, error.param === undefined ? {} : { param: error.param });
  // The router could not decode a path parameter (`/transactions/%zz`): the client's fault.
  if (error instanceof URIError) return reply(400, 'Path parameter is not valid percent-encoding', C.validation);
  return bodyParserReply(error) ?? unavailableOrInternal(error);
}

/** What body-parser reports about a body (its errors carry a `type`, or a 4xx `status` to expose). */
function bodyParserReply(error: unknown): ErrorReply | undefined {
  const e = error as { type?: string; status?: number; expose?: boolean };
  if (e?.type === 'entity.parse.failed') return reply(400, MESSAGES.invalidJson, C.invalidJson);
  if (e?.type === 'entity.too.large') return reply(413, MESSAGES.tooLarge, C.tooLarge);
  if (e?.type === 'charset.unsupported' || e?.type === 'encoding.unsupported') return reply(415, 'Unsupported body encoding', C.unsupportedMediaType);
  // Any other client-side fault of the body (e.g. a Content-Encoding it is not in): its 4xx, not a 500.
  if (e?.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500)
    return reply(e.status, 'Invalid request body', CODE_OF_STATUS[e.status] ?? 'invalid_request');
  return undefined;
}

function unavailableOrInternal(error: unknown): ErrorReply {
  if (error instanceof StoreUnavailableError || isOutage(error)) return reply(503, MESSAGES.unavailable, C.unavailable, { 'Retry-After': '1' });
  return reply(500, MESSAGES.internal, C.internal);
}
