import { expect } from 'chai';
import { fixed, money, parseAmount } from '../../src/domain/ledger/money';

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
