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
