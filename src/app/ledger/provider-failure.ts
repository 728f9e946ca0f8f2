import { ProviderUnavailable } from '../../platform/failures';

/** A payment or payout provider (or the card issuer) failed or timed out: 503, with nothing half-done. */
export class LedgerProviderFailure extends ProviderUnavailable {}
