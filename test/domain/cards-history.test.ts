import { expect } from 'chai';
import { type AccountState, accountDecider } from '../../src/domain/ledger/account';
import { type AuthorizationRequest, decideAuthorization } from '../../src/domain/cards/authorization';
import { type CardEvent, type CardState, cardDecider } from '../../src/domain/cards/card';
import { type LimitFrequency, type Spend, spentInWindow } from '../../src/domain/cards/limit';
import { type CardSpendData, KEEP_SETTLED_MS } from '../../src/domain/cards/spend';
import { type Amount, fixed, money } from '../../src/domain/ledger/money';
import type { JsonObject } from '../../src/eventstore/port';
import { AT, issued } from './cards-support';
import { allSpends } from '../../src/domain/cards/spend-book';

const codec = cardDecider.snapshot as NonNullable<typeof cardDecider.snapshot>;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const T0 = Date.parse(AT);
const iso = (ms: number) => new Date(ms).toISOString();

const spendData = (i: number, amount: string, at: string): CardSpendData => ({
  cardId: 'card-1',
  transactionId: `spend-${i}`,
  userId: 'ada',
  partnerId: 'acme',
  accountId: 1001,
  cardType: 'virtual',
  amount,
  currency: 'USD',
  localAmount: null,
  localCurrency: null,
  merchantName: 'Corner Shop',
  merchantCategoryCode: '5411',
  authorizationMethod: null,
  at,
});

/**
 * Three years of a card's use, one authorization every 23 hours (so spends fall at every hour of the
 * day): most cleared (some for less), every seventh reversed, every 101st left pending, every 13th
 * declined. Beside the events, every spend as a card keeping all of them would hold it.
 */
function threeYears(): { events: CardEvent[]; all: Spend[]; lastMs: number } {
  const events: CardEvent[] = [issued()];
  const all: Spend[] = [];
  let ms = T0;
  for (let i = 0; ms < T0 + 3 * 365 * DAY_MS; i++, ms += 23 * HOUR_MS) {
    const at = iso(ms);
    const amount = fixed(money(`${1 + (i % 17)}.${String(i % 100).padStart(2, '0')}`));
    if (i % 13 === 5) {
      events.push({ type: 'CardSpendDeclined', data: { ...spendData(i, amount, at), declinedReason: 'SPEND_LIMIT_EXCEEDED' } });
      continue;
    }
    events.push({ type: 'CardSpendAuthorized', data: spendData(i, amount, at) });
    const settledAt = iso(ms + HOUR_MS);
    if (i % 101 === 3) all.push({ amount, at, status: 'pending' });
    else if (i % 7 === 0) {
      events.push({ type: 'CardSpendReversed', data: { cardId: 'card-1', transactionId: `spend-${i}`, amount, at: settledAt } });
      all.push({ amount, at, status: 'reversed' });
    } else {
      const cleared = i % 5 === 0 ? fixed(money(amount).minus('0.5')) : amount;
      events.push({
        type: 'CardSpendCleared',
        data: { cardId: 'card-1', transactionId: `spend-${i}`, authorizedAmount: amount, amount: cleared, at: settledAt },
      });
      all.push({ amount: cleared, at, status: 'completed' });
    }
  }
  return { events, all, lastMs: ms - 23 * HOUR_MS };
}

const fold = (events: CardEvent[]): CardState => events.reduce(cardDecider.evolve, cardDecider.initialState());
const rich: AccountState = [
  { type: 'AccountOpened', data: { accountId: 1001, userId: 'ada', partnerId: 'acme', asset: 'USDC', type: 'LIABILITY', at: AT } },
  { type: 'FundsCredited', data: { accountId: 1001, transactionId: 'dep', amount: '1000000000', reason: 'deposit', at: AT } },
].reduce((s, e) => accountDecider.evolve(s, e as Parameters<typeof accountDecider.evolve>[1]), accountDecider.initialState());

let asked = 0;
const request = (amount: string, at: string): AuthorizationRequest => ({
  transactionId: `ask-${++asked}`,
  ledgerId: asked,
  amount,
  currency: 'USD',
  localAmount: null,
  localCurrency: null,
  merchantName: 'Corner Shop',
  merchantCategoryCode: '5411',
  authorizationMethod: null,
  at,
});

/** The outcome of `amount` authorized at `at` on the card, its limit set to `limit` over `frequency`. */
function outcome(state: CardState, frequency: LimitFrequency, limit: Amount, amount: string, at: string): string {
  const card = state.card;
  if (!card) throw new Error('no card');
  const limited = { ...state, card: { ...card, limit: { amount: fixed(limit), frequency } } };
  const decided = decideAuthorization(limited, rich, request(amount, at));
  return decided.outcome === 'declined' ? decided.reason : decided.outcome;
}

const WINDOWS: Array<[LimitFrequency, number]> = [
  ['per24HourPeriod', DAY_MS],
  ['per7DayPeriod', 7 * DAY_MS],
  ['per30DayPeriod', 30 * DAY_MS],
  ['perYearPeriod', 365 * DAY_MS],
];

describe('a card used for years', () => {
  const { events, all, lastMs } = threeYears();
  const state = fold(events);

  it('keeps the settled spends of its last 366 days and every pending one, and the sum of the cleared ones it dropped', () => {
    const kept = allSpends(state.spends);
    expect(events.length).to.be.above(2_000);
    expect(kept.length).to.be.below(420);
    for (const spend of kept) {
      if (spend.status !== 'pending') expect(Date.parse(spend.at), spend.transactionId).to.be.above(lastMs - KEEP_SETTLED_MS);
    }
    const pending = all.filter((s) => s.status === 'pending');
    expect(kept.filter((s) => s.status === 'pending').length).to.equal(pending.length);
    const dropped = all.filter((s) => s.status === 'completed' && Date.parse(s.at) <= lastMs - KEEP_SETTLED_MS);
    expect(state.earlierSpent).to.equal(fixed(dropped.reduce((sum, s) => sum.plus(money(s.amount)), money('0'))));
  });

  describe('decides as a card keeping its whole history would, at every window edge', () => {
    const decoded = codec.decode(JSON.parse(JSON.stringify(codec.encode(state))) as JsonObject);
    /** The instants around the edge of each window: its oldest spend one millisecond before and exactly when it leaves. */
    const edges = WINDOWS.flatMap(([frequency, length]) => {
      const oldest = all.filter((s) => s.status !== 'reversed' && Date.parse(s.at) > lastMs - length).sort((a, b) => Date.parse(a.at) - Date.parse(b.at))[0];
      if (!oldest) throw new Error('no spend in the window');
      return [Date.parse(oldest.at) + length - 1, Date.parse(oldest.at) + length].map((ms) => [frequency, iso(ms)] as const);
    });
    const later = iso(lastMs + HOUR_MS);
    const cases = [...edges, ['allTime', later] as const, ['perAuthorization', later] as const];

    for (const [from, loaded] of [
      ['folded', state],
      ['read back from its snapshot', decoded],
    ] as const) {
      it(`from its state ${from}`, () => {
        for (const [frequency, at] of cases) {
          const spent = spentInWindow(all, frequency, at);
          // Reaching the limit exactly is allowed; a hundred-millionth more is not.
          expect(outcome(loaded, frequency, spent.plus('2.5'), '2.5', at), `${frequency} at ${at}`).to.equal('approved');
          expect(outcome(loaded, frequency, spent.plus('2.49999999'), '2.5', at), `${frequency} at ${at}`).to.equal('SPEND_LIMIT_EXCEEDED');
        }
      });
    }
  });

  it('reads back from its snapshot exactly, and refuses a snapshot in another shape', () => {
    const json = JSON.parse(JSON.stringify(codec.encode(state))) as JsonObject;
    expect(codec.decode(json)).to.deep.equal(state);
    expect(codec.encode(codec.decode(json))).to.deep.equal(json);
    const [id] = allSpends(state.spends).map((s) => s.transactionId);
    const spends = json.spends as Record<string, Record<string, unknown>>;
    const broken = [
      { ...json, earlierSpent: 12.5 },
      { ...json, spends: { ...spends, [id as string]: { ...spends[id as string], status: 'declined' } } },
      { ...json, spends: { ...spends, [id as string]: { ...spends[id as string], amount: '1e3' } } },
      { ...json, card: { ...(json.card as JsonObject), accountId: '1001' } },
      { ...json, card: { ...(json.card as JsonObject), limit: { amount: '10', frequency: 'perFortnight' } } },
    ];
    for (const j of broken) expect(() => codec.decode(j as JsonObject), JSON.stringify(j).slice(0, 80)).to.throw(/Card snapshot/);
  });
});
