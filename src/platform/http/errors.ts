import type { DomainErrorKind } from '../decider';

/** An answer other than success: status, the exact message, and optional extra keys. */
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
