import { expect } from 'chai';
import fc from 'fast-check';
import { divideRoundUp8, fixed, money, moneyUnits, parseAmount } from '../../src/domain/ledger/money';

describe('money: amounts read once and shared', () => {
  it('gives the same value for the same text however often it is read, and arithmetic never changes it', () => {
    const first = money('12.34567891');
    const sum = first.plus(money('0.00000009')).minus('2');
    expect(fixed(sum)).to.equal('10.34567900');
    expect(fixed(money('12.34567891'))).to.equal('12.34567891');
    expect(money('12.34567891')).to.equal(first);
    expect(fixed(parseAmount(' 12.34567891 ') as ReturnType<typeof money>)).to.equal('12.34567891');
    // Texts of the same value stay distinct texts, each read as written.
    expect(money('1.10').toFixed()).to.equal('1.1');
    expect(money('1.1').eq(money('1.10'))).to.equal(true);
  });

  it('still reads every text once the remembered ones are forgotten (bounded)', () => {
    for (let i = 0; i < 3_000; i++) expect(money(`${i}.5`).toFixed()).to.equal(`${i}.5`);
    expect(fixed(money('0.5'))).to.equal('0.50000000');
  });
});

describe('money: a converted amount rounded up to 8 places', () => {
  it('rounds the exact quotient up, even when places 9 to 20 are zeros and a later one is not', () => {
    // 111806.50667064 / 1.2345678901237 = 90563.27121827000000000000008...
    expect(fixed(divideRoundUp8(money('111806.50667064'), '1.2345678901237'))).to.equal('90563.27121828');
    expect(fixed(divideRoundUp8(money('10'), '4'))).to.equal('2.50000000');
    expect(fixed(divideRoundUp8(money('1'), '3'))).to.equal('0.33333334');
  });

  it('is the least 8-place amount that covers the converted amount, for any amount and rate', () => {
    const decimal = (maxInt: number, places: number) =>
      fc
        .tuple(fc.integer({ min: 0, max: maxInt }), fc.integer({ min: 0, max: 10 ** places - 1 }))
        .map(([i, f]) => `${i}.${String(f).padStart(places, '0')}`)
        .filter((t) => money(t).gt(0));
    fc.assert(
      fc.property(decimal(1_000_000_000, 8), decimal(10_000, 13), (amount, rate) => {
        const q = divideRoundUp8(money(amount), rate);
        expect(q.times(rate).gte(amount), `${q} x ${rate} covers ${amount}`).to.equal(true);
        expect(q.minus('0.00000001').times(rate).lt(amount), `${q} is the least`).to.equal(true);
        expect(q.decimalPlaces()).to.be.at.most(8);
      }),
      { numRuns: 2_000, seed: 11 },
    );
  });
});

describe('money: an amount in whole units of 10^-8', () => {
  it('counts the units of any stored form exactly, and refuses what is not a plain amount of at most 8 places', () => {
    expect([moneyUnits('12.34'), moneyUnits('12.34000000'), moneyUnits('7'), moneyUnits('-0.5'), moneyUnits(money('0.00000001'))]).to.deep.equal([
      1_234_000_000n,
      1_234_000_000n,
      700_000_000n,
      -50_000_000n,
      1n,
    ]);
    expect(moneyUnits('999999999999999999.99999999')).to.equal(99_999_999_999_999_999_999_999_999n);
    for (const text of ['0.000000001', '0x10', '1e5', ' 1', '', '1.', '.5']) expect(() => moneyUnits(text), text).to.throw(/decimal places/);
  });

  it('agrees with bignumber.js on sums of any amounts of at most 8 places', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 18n }), fc.integer({ min: 0, max: 99_999_999 })), { maxLength: 20 }), (parts) => {
        const texts = parts.map(([whole, fraction]) => `${whole}.${String(fraction).padStart(8, '0')}`);
        const units = texts.reduce((sum, text) => sum + moneyUnits(text), 0n);
        expect(units).to.equal(moneyUnits(texts.reduce((sum, text) => sum.plus(money(text)), money(0))));
      }),
      { numRuns: 500, seed: 31 },
    );
  });
});
