import { type Amount, money, ZERO } from '../ledger';
import type { Spend } from './limit';
import { type BucketMap, bucketMapOf, emptyBucketMap, getIn, setIn } from '../../platform/bucket-map';

/**
 * A card's kept spends, persistent: each change makes a new book that shares everything but what it
 * changed with the one before, and never alters that one (a decision made on a state, then thrown
 * away, leaves the state as it was). A card keeps a year of spends; copying all of them at each
 * authorization, as a plain record would be copied, made one cost about a millisecond at 1,000 spends
 * and 37 ms at 10,000. Here an authorization copies one day's spends, one of the id buckets and the
 * list of days (at most about 367), and a window's sum adds whole days' totals and looks at the
 * spends of the two days at its edges only.
 */
export interface SpendBook {
  /** The spends by transaction id: a change copies one of its buckets. */
  readonly byId: BucketMap<CardSpend>;
  /** The spends by the UTC day of their authorization, oldest day first. */
  readonly days: readonly SpendDay[];
  /** As JSON (a snapshot, `tally events read`): the spends by transaction id, as a record, by day of authorization. */
  readonly toJSON: (this: SpendBook) => Record<string, CardSpend>;
}

/**
 * An approved spend as the card's limit and later clearing see it: `amount` is what it takes from
 * the window (the authorized amount, the cleared one once cleared), `at` when it was authorized.
 */
export type CardSpend = Spend & { transactionId: string; authorizedAmount: string };

/** One UTC day's spends, in the order they were added, and what its pending and completed ones take. */
export interface SpendDay {
  /** Days since the epoch. */
  readonly day: number;
  readonly spends: readonly CardSpend[];
  readonly counted: Amount;
  /** Its earliest and latest spend's instants (ms since the epoch). */
  readonly earliestMs: number;
  readonly latestMs: number;
}

const DAY_MS = 86_400_000;

function spendsById(this: SpendBook): Record<string, CardSpend> {
  return Object.fromEntries(allSpends(this).map((s) => [s.transactionId, s]));
}

export const EMPTY_SPEND_BOOK: SpendBook = { byId: emptyBucketMap(), days: [], toJSON: spendsById };

/** Whether a spend takes from the card's windows: pending and completed ones do; reversed ones do not. */
const counted = (spend: CardSpend): boolean => spend.status === 'pending' || spend.status === 'completed';
const takes = (spend: CardSpend): Amount => (counted(spend) ? money(spend.amount) : ZERO);
const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** The spend with that card transaction id, if the book keeps it. */
export function spendOf(book: SpendBook, transactionId: string): CardSpend | undefined {
  return getIn(book.byId, transactionId);
}

/** Every spend kept, by day of authorization, then in the order added. */
export function allSpends(book: SpendBook): CardSpend[] {
  return book.days.flatMap((d) => d.spends);
}

/** A book of these spends (distinct ids, as a snapshot lists them), built at once: no change copied per spend. */
export function spendBookOf(spends: readonly CardSpend[]): SpendBook {
  const byDay = new Map<number, CardSpend[]>();
  for (const s of spends) {
    const day = dayOf(Date.parse(s.at));
    const list = byDay.get(day);
    if (list) list.push(s);
    else byDay.set(day, [s]);
  }
  const days = [...byDay].sort(([a], [b]) => a - b).map(([day, list]) => spendDayOf(day, list));
  return { ...EMPTY_SPEND_BOOK, byId: bucketMapOf(Object.fromEntries(spends.map((s) => [s.transactionId, s]))), days };
}

/** A day's record of its spends (at least one), each summed and read. */
function spendDayOf(day: number, spends: readonly CardSpend[]): SpendDay {
  return { day, spends, counted: spends.reduce((sum, s) => sum.plus(takes(s)), ZERO), ...instantsOf(spends) };
}

/** The earliest and latest instants of a day's spends (at least one). */
function instantsOf(spends: readonly CardSpend[]): { earliestMs: number; latestMs: number } {
  let earliestMs = Number.POSITIVE_INFINITY;
  let latestMs = Number.NEGATIVE_INFINITY;
  for (const s of spends) {
    const ms = Date.parse(s.at);
    earliestMs = Math.min(earliestMs, ms);
    latestMs = Math.max(latestMs, ms);
  }
  return { earliestMs, latestMs };
}

/** The days with the day `day` made what `change` makes of it (undefined: there is none; returned undefined: removed). */
function withDay(days: readonly SpendDay[], day: number, change: (d: SpendDay | undefined) => SpendDay | undefined): SpendDay[] {
  let at = days.length;
  while (at > 0 && (days[at - 1] as SpendDay).day > day) at--;
  const found = at > 0 && (days[at - 1] as SpendDay).day === day ? (days[at - 1] as SpendDay) : undefined;
  const changed = change(found);
  const from = found ? at - 1 : at;
  return [...days.slice(0, from), ...(changed ? [changed] : []), ...days.slice(at)];
}

/** The book with a new spend (one it already keeps under that id is replaced). */
export function addSpend(book: SpendBook, spend: CardSpend): SpendBook {
  const kept = spendOf(book, spend.transactionId);
  if (kept) return addSpend(withoutSpend(book, kept), spend);
  const ms = Date.parse(spend.at);
  const day = dayOf(ms);
  const days = withDay(book.days, day, (d) => ({
    day,
    spends: [...(d?.spends ?? []), spend],
    counted: (d?.counted ?? ZERO).plus(takes(spend)),
    earliestMs: Math.min(d?.earliestMs ?? ms, ms),
    latestMs: Math.max(d?.latestMs ?? ms, ms),
  }));
  return { ...book, byId: setIn(book.byId, spend.transactionId, spend), days };
}

/** The book without a spend it keeps. */
function withoutSpend(book: SpendBook, spend: CardSpend): SpendBook {
  const day = dayOf(Date.parse(spend.at));
  const days = withDay(book.days, day, (d) => {
    const spends = d?.spends.filter((s) => s.transactionId !== spend.transactionId) ?? [];
    return spends.length === 0 ? undefined : { day, spends, counted: (d as SpendDay).counted.minus(takes(spend)), ...instantsOf(spends) };
  });
  return { ...book, byId: setIn(book.byId, spend.transactionId, undefined), days };
}

/** The book with a kept spend changed (its amount or status; its id and instant stay); unchanged when it keeps none by that id. */
export function replaceSpend(book: SpendBook, spend: CardSpend): SpendBook {
  const old = spendOf(book, spend.transactionId);
  if (!old) return book;
  const day = dayOf(Date.parse(old.at));
  const days = withDay(book.days, day, (d) => {
    if (!d) return d;
    return {
      ...d,
      spends: d.spends.map((s) => (s.transactionId === spend.transactionId ? spend : s)),
      counted: d.counted.minus(takes(old)).plus(takes(spend)),
    };
  });
  return { ...book, byId: setIn(book.byId, spend.transactionId, spend), days };
}

/**
 * The book without the settled spends authorized at or before `oldestMs` (pending ones stay until
 * settled), and what the completed ones it dropped took (null when it dropped none).
 */
export function dropSettled(book: SpendBook, oldestMs: number): { book: SpendBook; dropped: Amount | null } {
  const last = dayOf(oldestMs);
  if (book.days.length === 0 || (book.days[0] as SpendDay).day > last) return { book, dropped: null };
  let byId = book.byId;
  let dropped: Amount | null = null;
  const kept: SpendDay[] = [];
  let i = 0;
  for (; i < book.days.length && (book.days[i] as SpendDay).day <= last; i++) {
    const d = book.days[i] as SpendDay;
    const stay = d.spends.filter((s) => s.status === 'pending' || Date.parse(s.at) > oldestMs);
    if (stay.length === d.spends.length) {
      kept.push(d);
      continue;
    }
    const staying = new Set(stay);
    for (const s of d.spends) {
      if (staying.has(s)) continue;
      byId = setIn(byId, s.transactionId, undefined);
      if (s.status === 'completed') dropped = (dropped ?? ZERO).plus(money(s.amount));
    }
    if (stay.length > 0) kept.push(spendDayOf(d.day, stay));
  }
  if (byId === book.byId) return { book, dropped: null };
  return { book: { ...book, byId, days: [...kept, ...book.days.slice(i)] }, dropped };
}

/**
 * What the pending and completed spends authorized in (fromMs, toMs] take: days whose spends all
 * fall inside it by their totals (every day between its edges, and an edge day such as today, when
 * the window ends at the latest spend), the others at its edges (and any after `toMs`, a clock that
 * stepped back) spend by spend.
 */
export function takenBetween(book: SpendBook, fromMs: number, toMs: number): Amount {
  const first = dayOf(fromMs);
  const last = dayOf(toMs);
  let total = ZERO;
  for (let i = book.days.length - 1; i >= 0; i--) {
    const d = book.days[i] as SpendDay;
    if (d.day < first) break;
    if ((d.day > first && d.day < last) || (d.earliestMs > fromMs && d.latestMs <= toMs)) {
      total = total.plus(d.counted);
      continue;
    }
    for (const s of d.spends) {
      if (!counted(s)) continue;
      const ms = Date.parse(s.at);
      if (ms > fromMs && ms <= toMs) total = total.plus(money(s.amount));
    }
  }
  return total;
}
