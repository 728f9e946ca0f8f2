import BigNumber from 'bignumber.js';
import fc from 'fast-check';

/** Decimal money for the tests' own bookkeeping: never a float. */
export const Dec = BigNumber.clone({ DECIMAL_PLACES: 20, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN, EXPONENTIAL_AT: 1e9 });
export type Dec = InstanceType<typeof Dec>;

export const ZERO = new Dec(0);
export const dec = (value: string | number | Dec): Dec => new Dec(value);
/** As the accounts read shows amounts: 8 decimal places. */
export const fixed8 = (value: Dec): string => value.toFixed(8);
/** A USDC debit for a converted amount: rounded UP to 8 places. */
export const roundUp8 = (value: Dec): Dec => value.decimalPlaces(8, BigNumber.ROUND_UP);
export const roundDown8 = (value: Dec): Dec => value.decimalPlaces(8, BigNumber.ROUND_DOWN);

/** The default mid rate of the rate table: COP per 1 USDC. */
export const COP_PER_USDC = new Dec(4000);
export const copToUsdcDebit = (cop: string): Dec => roundUp8(new Dec(cop).div(COP_PER_USDC));

/**
 * A JSON number is safe for an amount only when its shortest text is the plain decimal itself (the
 * service refuses exponent forms such as 1e-7); otherwise the amount goes as a string.
 */
export function jsonAmount(amount: string, preferNumber: boolean): number | string {
  if (!preferNumber) return amount;
  const n = Number(amount);
  return String(n) === new Dec(amount).toFixed() ? n : amount;
}

/**
 * A positive decimal below `maxWhole` with 0 to `maxDecimals` decimal places, built from an integer
 * count of 10^-8 units (exact in a double up to 2^53), then shifted by bignumber.js.
 */
export function decimalArb(maxWhole: number, maxDecimals = 8): fc.Arbitrary<string> {
  const maxUnits = Math.round(maxWhole * 1e8);
  return fc.tuple(fc.integer({ min: 1, max: maxUnits }), fc.integer({ min: 0, max: maxDecimals })).map(([units, decimals]) => {
    const quantum = 10 ** (8 - decimals);
    const rounded = Math.max(quantum, units - (units % quantum));
    return new Dec(rounded).shiftedBy(-8).toFixed();
  });
}

/** A small deterministic PRNG (mulberry32) for the crash test's load. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
