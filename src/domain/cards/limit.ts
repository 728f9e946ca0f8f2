import { type Amount, checkAmount, fixed, money, parseAmount, ZERO } from '../ledger';
import { LIMIT_FREQUENCIES, type LimitFrequency } from './limit-frequencies';
import { CARD_REFUSALS } from './refusals';

export { LIMIT_FREQUENCIES, type LimitFrequency } from './limit-frequencies';

/** A card's spending limit: a decimal string in USD (the card spends 1:1 from USDC) over a frequency. */
export type CardLimit = {
  amount: string;
  frequency: LimitFrequency;
};

/** What a new card starts with (docs/decisions.md, "Cards"). */
export const DEFAULT_CARD_LIMIT: CardLimit = { amount: fixed(money('1000')), frequency: 'per24HourPeriod' };

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The rolling windows' lengths; `perYearPeriod` is 365 days (docs/decisions.md, "Cards"), whatever the calendar says. */
const WINDOW_MS: Readonly<Record<Exclude<LimitFrequency, 'perAuthorization' | 'allTime'>, number>> = {
  per24HourPeriod: DAY_MS,
  per7DayPeriod: 7 * DAY_MS,
  per30DayPeriod: 30 * DAY_MS,
  perYearPeriod: 365 * DAY_MS,
};

export const isLimitFrequency = (value: unknown): value is LimitFrequency =>
  typeof value === 'string' && (LIMIT_FREQUENCIES as readonly string[]).includes(value);

/** A card transaction as the limit sees it: what it took and when it was authorized. */
export interface Spend {
  amount: string;
  /** ISO 8601: when it was authorized. */
  at: string;
  status: 'pending' | 'completed' | 'declined' | 'reversed';
}

/**
 * Which authorizations a window counts, for an authorization at `at`: the window is rolling and
 * ends at `at`, half open, (at - length, at]. One authorized exactly `length` earlier has left it
 * (the 24 hours before 12:00 start just after 12:00 the day before). `allTime` counts everything
 * since issuance; `perAuthorization` counts nothing before (it caps one authorization alone).
 */
export function inWindow(frequency: LimitFrequency, spendAt: string, at: string): boolean {
  return windowOf(frequency, at)(Date.parse(spendAt));
}

/** The window of `frequency` ending at `at` as instants (ms since the epoch), (fromMs, toMs]; null for `perAuthorization`. */
export function windowRange(frequency: LimitFrequency, at: string): { fromMs: number; toMs: number } | null {
  if (frequency === 'perAuthorization') return null;
  const toMs = Date.parse(at);
  return { fromMs: frequency === 'allTime' ? Number.NEGATIVE_INFINITY : toMs - WINDOW_MS[frequency], toMs };
}

/** Whether an instant (ms since the epoch) is in the window of `frequency` ending at `at` (see inWindow). */
function windowOf(frequency: LimitFrequency, at: string): (spendMs: number) => boolean {
  const range = windowRange(frequency, at);
  if (!range) return () => false;
  return (spendMs) => spendMs > range.fromMs && spendMs <= range.toMs;
}

/**
 * What the window ending at `at` already holds: pending and completed spends inside it, and for
 * `allTime` what `earlier` spends took (spends the card no longer lists, all of them outside every
 * shorter window).
 */
export function spentInWindow(spends: readonly Spend[], frequency: LimitFrequency, at: string, earlier: Amount = ZERO): Amount {
  const inside = windowOf(frequency, at);
  let total = frequency === 'allTime' ? earlier : ZERO;
  for (const spend of spends) {
    if ((spend.status === 'pending' || spend.status === 'completed') && inside(Date.parse(spend.at))) total = total.plus(money(spend.amount));
  }
  return total;
}

/** True when `amount` on top of what the window already holds (`spent`) stays within the limit (reaching it exactly is allowed). */
export function withinLimit(limit: CardLimit, spent: Amount, amount: string): boolean {
  return spent.plus(money(amount)).lte(money(limit.amount));
}

/** A limit as asked for: the amount read as money (never a float), or the refusal naming the rule. */
export function parseLimit(amount: unknown, frequency: unknown): CardLimit {
  if (!isLimitFrequency(frequency)) throw CARD_REFUSALS.invalidLimitFrequency();
  const parsed = parseAmount(amount);
  switch (checkAmount(parsed)) {
    case null:
      return { amount: fixed(parsed as Amount), frequency };
    case 'not_positive':
      throw CARD_REFUSALS.amountNotPositive();
    case 'too_many_decimals':
      throw CARD_REFUSALS.amountTooPrecise();
    case 'too_large':
      throw CARD_REFUSALS.amountTooLarge();
    case 'not_a_number':
      throw CARD_REFUSALS.invalidAmount();
  }
}
