import { DomainError } from './decider';

/**
 * Failures a use case raises that are not a decision of the domain (those are DomainError): each
 * says what the caller may do, so that the HTTP layer answers them without knowing the capability.
 */

/** A provider answered badly, or not at all, and nothing was recorded: 502 with this message. */
export class ProviderAnsweredBadly extends Error {}

/** A provider (payments, payouts, card issuer) is out of reach; nothing half-written: 503, retry shortly. */
export class ProviderUnavailable extends Error {}

/** Too many tries of one thing (login code sends, secret checks): 429, again after `retryAfterSeconds`. */
export class TooManyTries extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/**
 * Lookups, not rules: what a request names does not exist or is not the caller's to see (404), its
 * input cannot be read (400), or its credentials name no one (401). They are DomainErrors (the
 * command handler decides a refusal again on stored state, whatever found it), under names that say
 * no decider refused anything: the rules themselves are thrown by the deciders in src/domain.
 */
export class NotFound extends DomainError {
  constructor(message: string) {
    super('not_found', message);
  }
}

export class InvalidRequest extends DomainError {
  constructor(message: string) {
    super('invalid', message);
  }
}

export class Unauthenticated extends DomainError {
  constructor(message: string) {
    super('unauthenticated', message);
  }
}
