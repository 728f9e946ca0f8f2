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
 * shortest round-trip form (what bignumber.js reads from a number) is exactly what the partner wrote
 * for any amount with at most 15 significant digits, so `100.1` stays 100.1 (never
 * 100.09999999999999), and 1e-7 is 0.0000001. Longer amounts should be sent as strings, which are
 * read as written and must be plain decimals.
 */
export function parseAmount(value: unknown): Amount | null {
  if (typeof value === 'number') return Number.isFinite(value) ? new Money(value) : null;
  return parseDecimalString(value);
}

/** A JSON number with more digits than a double keeps exactly may not be what the partner wrote. */
export const MAX_EXACT_NUMBER_DIGITS = 15;

export function isImpreciseNumber(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && (new Money(value).precision(true) ?? 0) > MAX_EXACT_NUMBER_DIGITS;
}

function parseDecimalString(value: unknown): Amount | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (!PLAIN.test(text)) return null;
  return money(text);
}

export type AmountProblem = 'not_a_number' | 'not_positive' | 'too_many_decimals' | 'too_large';

export function checkAmount(amount: Amount | null): AmountProblem | null {
  if (!amount) return 'not_a_number';
  if (amount.lte(0)) return 'not_positive';
  if ((amount.decimalPlaces() ?? 0) > MONEY_DECIMALS) return 'too_many_decimals';
  if (amount.integerValue(BigNumber.ROUND_DOWN).toFixed().replace('-', '').length > MAX_INTEGER_DIGITS) return 'too_large';
  return null;
}

/**
 * Recently read amount texts. A command reads its amount several times over (the route, the
 * decision, the events, the fold of the state); amounts are immutable, so one reading serves all.
 * Bounded: forgotten all at once when full.
 */
const readAmounts = new Map<string, Amount>();
const READ_AMOUNTS_MAX = 1_024;

export const money = (value: string | number | Amount): Amount => {
  if (typeof value !== 'string') return new Money(value);
  let amount = readAmounts.get(value);
  if (amount === undefined) {
    amount = new Money(value);
    if (readAmounts.size >= READ_AMOUNTS_MAX) readAmounts.clear();
    readAmounts.set(value, amount);
  }
  return amount;
};

/** The canonical stored and shown form: 8 decimal places. */
export const fixed = (amount: Amount): string => amount.toFixed(MONEY_DECIMALS);

/**
 * An amount as a whole number of its smallest unit (10^-8), exactly: for sums taken many times over
 * (an account's holds, at every decision), where bignumber.js would allocate at each addition.
 * Anything but a plain decimal of at most 8 places throws: no such amount is ever stored.
 */
export function moneyUnits(amount: Amount | string): bigint {
  const text = typeof amount === 'string' ? amount : amount.toFixed();
  const dot = text.indexOf('.');
  const fraction = dot < 0 ? '' : text.slice(dot + 1);
  if (fraction.length > MONEY_DECIMALS || !PLAIN.test(text)) throw new Error(`not an amount of at most ${MONEY_DECIMALS} decimal places: ${text}`);
  return BigInt((dot < 0 ? text : text.slice(0, dot)) + fraction.padEnd(MONEY_DECIMALS, '0'));
}

/** Division rounded once, up, to 8 places (bignumber.js rounds the exact quotient in its mode). */
const Up8 = BigNumber.clone({ DECIMAL_PLACES: MONEY_DECIMALS, ROUNDING_MODE: BigNumber.ROUND_UP, EXPONENTIAL_AT: 1e9 });

/**
 * amount / divisor rounded up to 8 places: what a payout debits for a converted amount. Dividing at
 * 20 places and then rounding up would lose the round-up when the quotient's places 9 to 20 are
 * zeros and a later one is not.
 */
export const divideRoundUp8 = (amount: Amount, divisor: string | Amount): Amount => money(new Up8(amount).div(new Up8(divisor)).toFixed());
