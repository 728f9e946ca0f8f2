import { expect } from 'chai';
import fc from 'fast-check';
import { divideRoundUp8, fixed, money, parseAmount } from '../../src/domain/ledger/money';

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
