import BigNumber from 'bignumber.js';
import type { AssetInfo, RateSource } from './port';

/**
 * The default rate source: a configured table of mid rates, each quoted per 1 USDC (how many units
 * of the asset one USDC buys). A cross rate is the quotient of two entries, computed in decimal
 * (bignumber.js), never through a float.
 */

/** The asset every table entry is quoted against. */
export const BASE_ASSET = 'USDC';

/** Significant digits of a computed mid rate (a quotient need not be a finite decimal). */
export const RATE_SIGNIFICANT_DIGITS = 20;

export const DEFAULT_RATES: Readonly<Record<string, string>> = Object.freeze({
  USDC: '1',
  USD: '1',
  COP: '4000',
  MXN: '17.5',
  BRL: '5.4',
  EUR: '0.92',
  ARS: '950',
});

/** Names and decimals of the known assets. USDC has 8 places, as the ledger does. */
export const DEFAULT_ASSET_INFO: readonly AssetInfo[] = Object.freeze([
  { asset: 'USDC', name: 'USD Coin', decimals: 8 },
  { asset: 'USD', name: 'US Dollar', decimals: 2 },
  { asset: 'COP', name: 'Colombian Peso', decimals: 2 },
  { asset: 'MXN', name: 'Mexican Peso', decimals: 2 },
  { asset: 'BRL', name: 'Brazilian Real', decimals: 2 },
  { asset: 'EUR', name: 'Euro', decimals: 2 },
  { asset: 'ARS', name: 'Argentine Peso', decimals: 2 },
]);

/** Decimals of an asset missing from the asset info (a currency added through the environment). */
const FALLBACK_DECIMALS = 2;

/**
 * Division keeps 60 places, truncated. Rounding that truncated quotient to 20 significant digits
 * (half-up or down) gives exactly the rounding of the true quotient: every rounding boundary of a
 * rate above 1e-39 lies on the 60-place grid, so truncation never moves a value across one.
 */
const Dec = BigNumber.clone({ DECIMAL_PLACES: 60, ROUNDING_MODE: BigNumber.ROUND_DOWN, EXPONENTIAL_AT: 1e9 });
type Decimal = InstanceType<typeof Dec>;

const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const ASSET_CODE = /^[A-Z][A-Z0-9]{1,9}$/;

function positiveDecimal(text: string, what: string): Decimal {
  if (!PLAIN_DECIMAL.test(text) || !/[1-9]/.test(text)) throw new Error(`${what} must be a positive decimal, got ${JSON.stringify(text)}`);
  return new Dec(text);
}

/**
 * Reads rate overrides from an environment string: `COP=4100,MXN=17.2` (entries separated by commas,
 * semicolons or whitespace; codes are upper-cased). Each rate is per 1 USDC. Throws on a malformed
 * entry, a non-positive rate or a repeated code: a configuration error should stop the start.
 */
export function parseRateTable(envText: string): Record<string, string> {
  const rates: Record<string, string> = {};
  for (const entry of envText.split(/[\s,;]+/)) {
    if (entry === '') continue;
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new Error(`rate table entry must be ASSET=rate, got ${JSON.stringify(entry)}`);
    const asset = entry.slice(0, eq).toUpperCase();
    const rate = entry.slice(eq + 1);
    if (!ASSET_CODE.test(asset)) throw new Error(`rate table asset code is invalid: ${JSON.stringify(asset)}`);
    positiveDecimal(rate, `rate of ${asset}`);
    if (Object.hasOwn(rates, asset)) throw new Error(`rate table names ${asset} twice`);
    rates[asset] = rate;
  }
  return rates;
}

export interface TableRateSourceOptions {
  /** Mid rates per 1 USDC, decimal strings. Default DEFAULT_RATES. USDC is 1 (added when absent). */
  rates?: Readonly<Record<string, string>>;
  /** Names and decimals. Default DEFAULT_ASSET_INFO; an asset missing here is named by its code, 2 decimals. */
  assets?: readonly AssetInfo[];
}

export class TableRateSource implements RateSource {
  readonly name = 'table';
  private readonly rates = new Map<string, Decimal>();
  private readonly info: AssetInfo[];

  constructor(options: TableRateSourceOptions = {}) {
    const table = { [BASE_ASSET]: '1', ...(options.rates ?? DEFAULT_RATES) };
    for (const [asset, text] of Object.entries(table)) {
      if (!ASSET_CODE.test(asset)) throw new Error(`rate table asset code is invalid: ${JSON.stringify(asset)}`);
      this.rates.set(asset, positiveDecimal(text, `rate of ${asset}`));
    }
    if (!this.rates.get(BASE_ASSET)?.eq(1)) throw new Error(`the rate of ${BASE_ASSET} must be 1: the table is quoted per 1 ${BASE_ASSET}`);
    const known = new Map((options.assets ?? DEFAULT_ASSET_INFO).map((a) => [a.asset, a] as const));
    this.info = [...this.rates.keys()].map((asset) => {
      const a = known.get(asset);
      const decimals = a?.decimals ?? FALLBACK_DECIMALS;
      if (!Number.isInteger(decimals) || decimals < 0 || decimals > 18) throw new Error(`decimals of ${asset} must be an integer 0..18`);
      return { asset, name: a?.name ?? asset, decimals };
    });
  }

  /** DEFAULT_RATES with the environment's overrides (see parseRateTable) on top. */
  static fromEnv(envText: string | undefined): TableRateSource {
    return new TableRateSource({ rates: { ...DEFAULT_RATES, ...parseRateTable(envText ?? '') } });
  }

  /** The table's assets, USDC first, then in the table's order. */
  assets(): AssetInfo[] {
    return this.info.map((a) => ({ ...a }));
  }

  /** The table's rate of an asset per 1 USDC, or null when unknown. */
  rateOf(asset: string): string | null {
    return this.rates.get(asset)?.toFixed() ?? null;
  }

  /** rate[to] / rate[from], rounded half-up to 20 significant digits; null for an unknown asset. */
  async midRate(from: string, to: string): Promise<string | null> {
    return this.midRateSync(from, to);
  }

  midRateSync(from: string, to: string): string | null {
    const f = this.rates.get(from);
    const t = this.rates.get(to);
    if (f === undefined || t === undefined) return null;
    return t.div(f).precision(RATE_SIGNIFICANT_DIGITS, BigNumber.ROUND_HALF_UP).toFixed();
  }
}
