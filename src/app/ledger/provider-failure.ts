/** A payment or payout provider failed or timed out: 503, with nothing half-done. */
export class LedgerProviderFailure extends Error {}
