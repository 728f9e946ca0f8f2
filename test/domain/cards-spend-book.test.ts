import { expect } from 'chai';
import { fixed, money } from '../../src/domain/ledger/money';
import { LIMIT_FREQUENCIES, type Spend, spentInWindow, windowRange } from '../../src/domain/cards/limit';
import type { CardSpend } from '../../src/domain/cards/spend';
import { addSpend, allSpends, dropSettled, EMPTY_SPEND_BOOK, replaceSpend, type SpendBook, spendOf, takenBetween } from '../../src/domain/cards/spend-book';

const DAY_MS = 86_400_000;
const T0 = Date.parse('2026-03-01T00:00:00.000Z');

/** A small deterministic generator (the same cases on every run). */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x / 2_147_483_648;
  };
}

const spend = (id: string, ms: number, amount: string): CardSpend => ({
  transactionId: id,
  amount,
  authorizedAmount: amount,
  at: new Date(ms).toISOString(),
  status: 'pending',
});

/** What the window (fromMs, toMs] holds, the plain way: every kept spend read. */
function plainTaken(spends: Spend[], fromMs: number, toMs: number): string {
  let total = money(0);
  for (const s of spends) {
    const ms = Date.parse(s.at);
    if ((s.status === 'pending' || s.status === 'completed') && ms > fromMs && ms <= toMs) total = total.plus(money(s.amount));
  }
  return fixed(total);
}

describe("a card's spend book", () => {
  it('changes into a new book and leaves the one it came from as it was', () => {
    const one = addSpend(addSpend(EMPTY_SPEND_BOOK, spend('a', T0, '5')), spend('b', T0 + DAY_MS, '7'));
    const before = JSON.stringify({ byId: one.byId, days: one.days });
    const two = replaceSpend(addSpend(one, spend('c', T0 + DAY_MS + 1, '1')), { ...spend('a', T0, '4'), status: 'completed' });
    const three = dropSettled(two, T0 + 2 * DAY_MS).book;
    expect(JSON.stringify({ byId: one.byId, days: one.days })).to.equal(before);
    expect(allSpends(one).map((s) => [s.transactionId, s.status, s.amount])).to.deep.equal([
      ['a', 'pending', '5'],
      ['b', 'pending', '7'],
    ]);
    expect(allSpends(two).map((s) => [s.transactionId, s.status, s.amount])).to.deep.equal([
      ['a', 'completed', '4'],
      ['b', 'pending', '7'],
      ['c', 'pending', '1'],
    ]);
    expect(allSpends(three).map((s) => s.transactionId)).to.deep.equal(['b', 'c']);
    expect([spendOf(three, 'a'), three.byId.size]).to.deep.equal([undefined, 2]);
  });

  it('copies one id bucket and one day at an authorization, sharing the rest with the book before', () => {
    let book = EMPTY_SPEND_BOOK;
    for (let i = 0; i < 2_000; i++) book = addSpend(book, spend(`spend-${i}`, T0 + i * 3_600_000, '1'));
    const next = addSpend(book, spend('one-more', T0 + 2_000 * 3_600_000, '1'));
    expect(next.byId.buckets.filter((bucket, i) => bucket !== book.byId.buckets[i])).to.have.length(1);
    expect(next.days.filter((day, i) => day !== book.days[i])).to.have.length(1);
    expect(next.byId.size).to.equal(2_001);
  });

  it('answers as the plain record of spends would, through authorizations, settlements, drops and a clock that steps back', () => {
    const next = random(7);
    let book: SpendBook = EMPTY_SPEND_BOOK;
    const plain = new Map<string, CardSpend>();
    let clock = T0;
    for (let step = 0; step < 3_000; step++) {
      const roll = next();
      // Mostly forward by up to six hours; now and then a few minutes back.
      clock += roll < 0.05 ? -Math.floor(next() * 600_000) : Math.floor(next() * 6 * 3_600_000);
      const ids = [...plain.keys()];
      if (roll < 0.6 || ids.length === 0) {
        const s = spend(`s${step}`, clock, fixed(money(Math.floor(next() * 10_000)).div(100)));
        book = addSpend(book, s);
        plain.set(s.transactionId, s);
      } else if (roll < 0.9) {
        const id = ids[Math.floor(next() * ids.length)] as string;
        const old = plain.get(id) as CardSpend;
        if (old.status !== 'pending') continue;
        const settled: CardSpend = roll < 0.8 ? { ...old, status: 'completed', amount: fixed(money(old.amount).times(0.9)) } : { ...old, status: 'reversed' };
        book = replaceSpend(book, settled);
        plain.set(id, settled);
      } else {
        const oldest = clock - 40 * DAY_MS;
        const { book: kept, dropped } = dropSettled(book, oldest);
        let expected = money(0);
        for (const [id, s] of plain) {
          if (s.status === 'pending' || Date.parse(s.at) > oldest) continue;
          if (s.status === 'completed') expected = expected.plus(money(s.amount));
          plain.delete(id);
        }
        expect(fixed(dropped ?? money(0))).to.equal(fixed(expected));
        book = kept;
      }
      expect(book.byId.size).to.equal(plain.size);
      if (step % 50 !== 0) continue;
      expect(
        allSpends(book)
          .map((s) => s.transactionId)
          .sort(),
      ).to.deep.equal([...plain.keys()].sort());
      for (const [id, s] of plain) expect(spendOf(book, id)).to.deep.equal(s);
      for (const frequency of LIMIT_FREQUENCIES) {
        const at = new Date(clock - Math.floor(next() * DAY_MS)).toISOString();
        const range = windowRange(frequency, at);
        const spends = [...plain.values()];
        const fromBook = range ? fixed(takenBetween(book, range.fromMs, range.toMs)) : fixed(money(0));
        expect(fromBook, `${frequency} at ${at}`).to.equal(fixed(spentInWindow(spends, frequency, at)));
        if (range) expect(fromBook).to.equal(plainTaken(spends, range.fromMs, range.toMs));
      }
    }
    expect(plain.size).to.be.above(100);
  });

  it('takes a spend added again under a kept id as the new one, on its own day', () => {
    const book = addSpend(addSpend(EMPTY_SPEND_BOOK, spend('a', T0, '5')), spend('a', T0 + 3 * DAY_MS, '2'));
    expect(allSpends(book)).to.deep.equal([spend('a', T0 + 3 * DAY_MS, '2')]);
    expect([fixed(takenBetween(book, T0 - 1, T0 + DAY_MS)), fixed(takenBetween(book, T0, T0 + 4 * DAY_MS)), book.byId.size]).to.deep.equal([
      '0.00000000',
      '2.00000000',
      1,
    ]);
  });

  it("takes a day by its total when every spend of it is inside the window, and spend by spend at the window's exact edges", () => {
    const hour = 3_600_000;
    // One busy day (a fleet card): spends at 09:00, 10:00 and 11:00, one reversed, and one moved to another day.
    let book = [spend('a', T0 + 9 * hour, '1'), spend('b', T0 + 10 * hour, '2'), spend('c', T0 + 11 * hour, '4'), spend('d', T0 + 12 * hour, '8')].reduce(
      addSpend,
      EMPTY_SPEND_BOOK,
    );
    book = replaceSpend(book, { ...(spendOf(book, 'b') as CardSpend), status: 'reversed' });
    book = addSpend(book, spend('d', T0 + DAY_MS + hour, '16'));
    const taken = (fromMs: number, toMs: number) => fixed(takenBetween(book, fromMs, toMs));
    const cases: Array<[number, number]> = [
      [T0 - DAY_MS, T0 + 12 * hour], // the whole day inside, 12:00's spend moved away: by the total
      [T0 - DAY_MS, T0 + 10 * hour], // ends before the day's later spends: spend by spend
      [T0 + 9 * hour, T0 + 11 * hour], // from exactly 09:00 (not counted) to exactly 11:00 (counted)
      [T0 + 9 * hour - 1, T0 + 11 * hour - 1],
      [T0 + 10 * hour, T0 + 2 * DAY_MS],
      [T0, T0 + DAY_MS + hour],
    ];
    for (const [fromMs, toMs] of cases) expect(taken(fromMs, toMs), `(${fromMs - T0}, ${toMs - T0}]`).to.equal(plainTaken(allSpends(book), fromMs, toMs));
    expect(cases.map(([fromMs, toMs]) => taken(fromMs, toMs))).to.deep.equal([
      '5.00000000',
      '1.00000000',
      '4.00000000',
      '1.00000000',
      '20.00000000',
      '21.00000000',
    ]);
  });

  it('prints as the record of its spends by transaction id', () => {
    const book = addSpend(addSpend(EMPTY_SPEND_BOOK, spend('b', T0 + DAY_MS, '2')), spend('a', T0, '1'));
    expect(JSON.parse(JSON.stringify({ spends: book }))).to.deep.equal({ spends: { a: spend('a', T0, '1'), b: spend('b', T0 + DAY_MS, '2') } });
    expect(spendOf(book, 'constructor')).to.equal(undefined);
  });
});
