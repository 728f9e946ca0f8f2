import { isOutage } from '../outage';
import { DomainError } from '../decider';
import { ProviderAnsweredBadly, ProviderUnavailable, TooManyTries } from '../failures';
import { OverloadedError, StoreUnavailableError, WrongExpectedRevisionError } from '../../eventstore/port';
import { HttpError, MESSAGES, STATUS_OF } from './errors';

export interface ErrorReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** The error envelope (docs/interface.md, "Errors") for anything a request ran into. */
export function toErrorReply(error: unknown): ErrorReply {
  if (error instanceof HttpError) return { status: error.status, body: { success: false, error: error.message, ...error.extra }, headers: error.headers };
  if (error instanceof ProviderAnsweredBadly) return { status: 502, body: { success: false, error: error.message }, headers: {} };
  // A payment or payout provider out of reach: nothing half-written (a held payout is handed over
  // again on retry), so the decided 503.
  if (error instanceof ProviderUnavailable) return { status: 503, body: { success: false, error: MESSAGES.unavailable }, headers: { 'Retry-After': '1' } };
  // Too many tries (a partner key's secret checks, a login code's sends): come back later, never
  // "wrong credentials".
  if (error instanceof TooManyTries)
    return { status: 429, body: { success: false, error: MESSAGES.tooManyRequests }, headers: { 'Retry-After': String(error.retryAfterSeconds) } };
  // A bounded queue is full (a hot account, the event log): nothing was done, come back shortly.
  if (error instanceof OverloadedError) return { status: 503, body: { success: false, error: MESSAGES.unavailable }, headers: { 'Retry-After': '1' } };
  if (error instanceof WrongExpectedRevisionError)
    return { status: 409, body: { success: false, error: 'Concurrent update; retry the request' }, headers: { 'Retry-After': '1' } };
  if (error instanceof DomainError) return { status: STATUS_OF[error.kind], body: { success: false, error: error.message }, headers: {} };
  // The router could not decode a path parameter (`/transactions/%zz`): the client's fault.
  if (error instanceof URIError) return { status: 400, body: { success: false, error: 'Path parameter is not valid percent-encoding' }, headers: {} };
  return bodyParserReply(error) ?? unavailableOrInternal(error);
}

/** What body-parser reports about a body (its errors carry a `type`, or a 4xx `status` to expose). */
function bodyParserReply(error: unknown): ErrorReply | undefined {
  const e = error as { type?: string; status?: number; expose?: boolean };
  if (e?.type === 'entity.parse.failed') return { status: 400, body: { success: false, error: MESSAGES.invalidJson }, headers: {} };
  if (e?.type === 'entity.too.large') return { status: 413, body: { success: false, error: MESSAGES.tooLarge }, headers: {} };
  if (e?.type === 'charset.unsupported' || e?.type === 'encoding.unsupported')
    return { status: 415, body: { success: false, error: 'Unsupported body encoding' }, headers: {} };
  // Any other client-side fault of the body (e.g. a Content-Encoding it is not in): its 4xx, not a 500.
  if (e?.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500)
    return { status: e.status, body: { success: false, error: 'Invalid request body' }, headers: {} };
  return undefined;
}

function unavailableOrInternal(error: unknown): ErrorReply {
  if (error instanceof StoreUnavailableError || isOutage(error))
    return { status: 503, body: { success: false, error: MESSAGES.unavailable }, headers: { 'Retry-After': '1' } };
  return { status: 500, body: { success: false, error: MESSAGES.internal }, headers: {} };
}
