import { expect } from 'chai';
import { isLuhnValid, luhnCheckDigit, maskPan } from '../../src/providers/cards/port';
import { SANDBOX_BIN, sandboxPan } from '../../src/providers/cards/sandbox';
import { CardVault } from '../../src/providers/cards/vault';

describe('card secrets at rest', () => {
  const vault = CardVault.fromSecret('pepper-of-the-test-service');

  it('seals a value so that only the same key, bound to the same thing, opens it', () => {
    const sealed = vault.seal('4000001234567899', 'iss_card_1:pan');
    expect(sealed).to.match(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.to.contain('4000001234567899');
    expect(vault.open(sealed, 'iss_card_1:pan')).to.equal('4000001234567899');
    expect(() => vault.open(sealed, 'iss_card_2:pan'), 'bound to another card').to.throw();
    expect(() => vault.open(sealed, 'iss_card_1:cvc'), 'bound to another secret').to.throw();
    expect(() => CardVault.fromSecret('another-pepper').open(sealed, 'iss_card_1:pan'), 'another key').to.throw();
  });

  it('never seals the same value the same way twice (a fresh IV each time), and refuses an altered one', () => {
    const [a, b] = [vault.seal('1234', 'r:pin'), vault.seal('1234', 'r:pin')];
    expect(a).not.to.equal(b);
    const parts = a.split('.');
    const data = Buffer.from(parts[3] as string, 'base64url');
    data[0] = (data[0] ?? 0) ^ 1;
    expect(() => vault.open([parts[0], parts[1], parts[2], data.toString('base64url')].join('.'), 'r:pin')).to.throw();
    expect(() => vault.open('not sealed', 'r:pin')).to.throw('not a sealed card secret');
  });

  it('derives the same key from the same service secret (every node opens what another sealed)', () => {
    expect(CardVault.fromSecret('pepper-of-the-test-service').open(vault.seal('737', 'r:cvc'), 'r:cvc')).to.equal('737');
  });
});

describe('card numbers', () => {
  it("computes Luhn's check digit", () => {
    expect(luhnCheckDigit('424242424242424')).to.equal('2');
    expect(isLuhnValid('4242424242424242')).to.equal(true);
    expect(isLuhnValid('4242424242424241')).to.equal(false);
    expect(isLuhnValid('79927398713')).to.equal(false);
    expect(isLuhnValid('4000056655665556')).to.equal(true);
  });

  it('issues sandbox numbers of 16 digits under the test BIN, each Luhn-valid', () => {
    for (let i = 0; i < 200; i++) {
      const pan = sandboxPan();
      expect(pan).to.match(/^[0-9]{16}$/);
      expect(pan.startsWith(SANDBOX_BIN)).to.equal(true);
      expect(isLuhnValid(pan), pan).to.equal(true);
    }
  });

  it('masks a number to its first six and last four digits', () => {
    expect(maskPan('4000001234567899')).to.equal('400000******7899');
  });
});
