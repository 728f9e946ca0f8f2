import type { DomainErrorKind } from '../decider';

/**
 * An answer other than success: status, the exact message, and optional extra keys. Its `code` is
 * `extra.code` where given, else the code of its status (CODE_OF_STATUS).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const STATUS_OF: Record<DomainErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  unprocessable: 422,
};

export const MESSAGES = {
  notFound: 'Not found',
  methodNotAllowed: 'Method not allowed',
  invalidJson: 'Invalid JSON body',
  tooLarge: 'Request body too large',
  jsonOnly: 'Content-Type must be application/json',
  invalidPartner: 'Invalid partner credentials',
  invalidToken: 'Invalid or expired token',
  tooManyRequests: 'Too many requests',
  unavailable: 'Service unavailable',
  internal: 'Internal server error',
  userNotFound: 'User not found',
} as const;

/** The code of an answer that names none of its own, by status. */
export const CODE_OF_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  413: 'body_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'provider_error',
  503: 'service_unavailable',
};

/**
 * The codes the request path itself answers, whatever the route: a client switches on these (the
 * capabilities' own refusals are in their catalogues, domain/<capability>/refusals.ts).
 */
export const PLATFORM_CODES = {
  validation: 'validation_error',
  invalidJson: 'invalid_json',
  tooLarge: 'body_too_large',
  unsupportedMediaType: 'unsupported_media_type',
  notFound: 'not_found',
  methodNotAllowed: 'method_not_allowed',
  invalidPartner: 'invalid_partner_credentials',
  invalidAdminToken: 'invalid_admin_token',
  tokenMissing: 'token_missing',
  tokenInvalid: 'token_invalid',
  tokenExpired: 'token_expired',
  auditorTokenMissing: 'auditor_token_missing',
  rateLimited: 'rate_limited',
  concurrentUpdate: 'concurrent_update',
  providerError: 'provider_error',
  unavailable: 'service_unavailable',
  internal: 'internal_error',
} as const;
