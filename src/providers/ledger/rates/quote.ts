import { randomUUID } from 'node:crypto';
import BigNumber from 'bignumber.js';
import type { RateSource } from './port';

/**
 * Exchange quotes. The effective rate is the mid rate less the spread; the amount received is the
 * amount given times that rate, rounded DOWN to the receiving asset's decimals (never in the
 * customer's favour by a fraction of a unit). Decimal strings throughout, never floats; the HTTP
 * layer turns them into JSON numbers.
 */

/** How long a quote is good for. */
export const QUOTE_LIFETIME_SECONDS = 30;

/** Significant digits kept of the effective rate (rounded down). */
export const EFFECTIVE_RATE_SIGNIFICANT_DIGITS = 20;

export interface Quote {
  id: string;
  fromAsset: string;
  toAsset: string;
  /** As given. */
  fromAmount: string;
  /** fromAmount x rate, rounded down, with exactly the `to` asset's decimals. */
  toAmount: string;
  /** Effective rate: mid x (1 - spreadBps / 10000), at most 20 significant digits (rounded down). */
  rate: string;
  /** ISO 8601: now + 30 s. */
  expiresAt: string;
}

/** A caller error in the quote input (the HTTP layer answers 400). */
export class QuoteInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QuoteInputError';
  }
}

const Dec = BigNumber.clone({ DECIMAL_PLACES: 60, ROUNDING_MODE: BigNumber.ROUND_DOWN, EXPONENTIAL_AT: 1e9 });

const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

function positive(text: unknown, what: string): InstanceType<typeof Dec> {
  if (typeof text !== 'string' || !PLAIN_DECIMAL.test(text) || !/[1-9]/.test(text)) {
    throw new QuoteInputError(`${what} must be a positive decimal string, got ${JSON.stringify(text)}`);
  }
  return new Dec(text);
}

export interface QuoteAtRateInput {
  from: string;
  to: string;
  /** Positive decimal string. */
  fromAmount: string;
  /** Spread in basis points, an integer 0..9999. */
  spreadBps: number;
  /** Mid rate from -> to, a positive decimal string. */
  midRate: string;
  /** Decimals of the `to` asset. */
  toDecimals: number;
  now: Date;
  /** Default: a random uuid. */
  id?: string;
}

/** The quote for a known mid rate: no I/O, deterministic apart from the default id. */
export function quoteAtRate(input: QuoteAtRateInput): Quote {
  const amount = positive(input.fromAmount, 'fromAmount');
  const mid = positive(input.midRate, 'midRate');
  const { spreadBps, toDecimals, now } = input;
  if (!Number.isInteger(spreadBps) || spreadBps < 0 || spreadBps >= 10_000) throw new QuoteInputError(`spreadBps must be an integer 0..9999, got ${spreadBps}`);
  if (!Number.isInteger(toDecimals) || toDecimals < 0 || toDecimals > 18) throw new QuoteInputError(`toDecimals must be an integer 0..18, got ${toDecimals}`);
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) throw new QuoteInputError('now must be a valid Date');
  const keep = new Dec(10_000 - spreadBps).div(10_000);
  const rate = mid.times(keep).precision(EFFECTIVE_RATE_SIGNIFICANT_DIGITS, BigNumber.ROUND_DOWN);
  const toAmount = amount.times(rate).decimalPlaces(toDecimals, BigNumber.ROUND_DOWN);
  return {
    id: input.id ?? randomUUID(),
    fromAsset: input.from,
    toAsset: input.to,
    fromAmount: input.fromAmount,
    toAmount: toAmount.toFixed(toDecimals),
    rate: rate.toFixed(),
    expiresAt: new Date(now.getTime() + QUOTE_LIFETIME_SECONDS * 1000).toISOString(),
  };
}

export interface QuoteInput {
  from: string;
  to: string;
  /** Positive decimal string. */
  fromAmount: string;
  /** Spread in basis points, an integer 0..9999. */
  spreadBps: number;
  rates: RateSource;
  now: Date;
  /** Default: a random uuid. */
  id?: string;
}

/**
 * A quote from the rate source. Resolves null when either asset is unknown to it (not listed in
 * `assets()` or no mid rate); throws QuoteInputError for a bad amount or spread.
 */
export async function quote(input: QuoteInput): Promise<Quote | null> {
  const { from, to, rates } = input;
  const assets = rates.assets();
  const toInfo = assets.find((a) => a.asset === to);
  if (toInfo === undefined || !assets.some((a) => a.asset === from)) return null;
  // Checked before the rate source is asked: a bad request costs no lookup.
  positive(input.fromAmount, 'fromAmount');
  const midRate = await rates.midRate(from, to);
  if (midRate === null) return null;
  return quoteAtRate({
    from,
    to,
    fromAmount: input.fromAmount,
    spreadBps: input.spreadBps,
    midRate,
    toDecimals: toInfo.decimals,
    now: input.now,
    id: input.id,
  });
}
