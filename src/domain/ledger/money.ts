import BigNumber from 'bignumber.js';

/**
 * Money is a decimal string end to end: at most 18 integer digits and 8 decimal places, never a
 * float. bignumber.js does the arithmetic; this module is the only place amounts are parsed.
 */
export const MONEY_DECIMALS = 8;
export const MAX_INTEGER_DIGITS = 18;

const Money = BigNumber.clone({ DECIMAL_PLACES: 20, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN, EXPONENTIAL_AT: 1e9 });
export type Amount = InstanceType<typeof Money>;

export const ZERO = new Money(0);

const PLAIN = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/**
 * Reads an amount as it came in JSON. A JSON number reaches us already parsed by JSON.parse; its
 * shortest round-trip text (String(n)) is exactly what the partner wrote for any amount with at most
 * 15 significant digits, so `100.1` stays 100.1 (never 100.09999999999999). Longer amounts should be
 * sent as strings; we refuse a number whose text is in exponent form.
 */
export function parseAmount(value: unknown): Amount | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    text = String(value);
  } else if (typeof value === 'string') text = value.trim();
  else return null;
  if (!PLAIN.test(text)) return null;
  return new Money(text);
}

export type AmountProblem = 'not_a_number' | 'not_positive' | 'too_many_decimals' | 'too_large';

export function checkAmount(amount: Amount | null): AmountProblem | null {
  if (!amount) return 'not_a_number';
  if (amount.lte(0)) return 'not_positive';
  if ((amount.decimalPlaces() ?? 0) > MONEY_DECIMALS) return 'too_many_decimals';
  if (amount.integerValue(BigNumber.ROUND_DOWN).toFixed().replace('-', '').length > MAX_INTEGER_DIGITS) return 'too_large';
  return null;
}

export const money = (value: string | number | Amount): Amount => new Money(value);

/** The canonical stored and shown form: 8 decimal places. */
export const fixed = (amount: Amount): string => amount.toFixed(MONEY_DECIMALS);

/** Rounds up (away from zero) to 8 places: what a payout debits for a converted amount. */
export const roundUp8 = (amount: Amount): Amount => amount.decimalPlaces(MONEY_DECIMALS, BigNumber.ROUND_UP);
export const roundDown8 = (amount: Amount): Amount => amount.decimalPlaces(MONEY_DECIMALS, BigNumber.ROUND_DOWN);
