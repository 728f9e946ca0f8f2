import { createCipheriv, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import { newKek } from '../../src/platform/keys';
import { isLuhnValid, luhnCheckDigit, maskPan } from '../../src/providers/cards/port';
import { SANDBOX_BIN, sandboxPan } from '../../src/providers/cards/sandbox';
import { CardVault } from '../../src/providers/cards/vault';
import { rejection, testSealer } from '../support/sealing';

/** A value as the vault sealed it before data keys: `v1`, under a key derived from the pepper. */
function sealedAsV1(pepper: string, plaintext: string, boundTo: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(hkdfSync('sha256', pepper, 'tally', 'card-vault/v1', 32)), iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), data].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

describe('card secrets at rest', () => {
  const pepper = 'pepper-of-the-test-service';
  /** The service's key-encryption keys: every node has the same. */
  const keks = [newKek()];
  const [alice, bob] = [randomUUID(), randomUUID()];
  let sql: PgliteSql;
  let vault: CardVault;

  before(async () => {
    sql = await PgliteSql.open();
    vault = new CardVault(await testSealer(sql, { pepper, keks }));
  });

  after(async () => {
    await sql.close();
  });

  it("seals a value under its holder's data key so that only that key, bound to the same thing, opens it", async () => {
    const sealed = await vault.seal(alice, '4000001234567899', 'iss_card_1:pan');
    expect(sealed).to.match(/^v2\.[\w-]+\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.to.contain('4000001234567899');
    expect(await vault.open(sealed, 'iss_card_1:pan')).to.equal('4000001234567899');
    await rejection(vault.open(sealed, 'iss_card_2:pan'), 'bound to another card');
    await rejection(vault.open(sealed, 'iss_card_1:cvc'), 'bound to another secret');
    const bobsKeyId = (await vault.seal(bob, 'x', 'r:pin')).split('.')[1] as string;
    const underBobsKey = sealed
      .split('.')
      .map((part, i) => (i === 1 ? bobsKeyId : part))
      .join('.');
    await rejection(vault.open(underBobsKey, 'iss_card_1:pan'), 'another key');
  });

  it('never seals the same value the same way twice (a fresh IV each time), and refuses an altered one', async () => {
    const [a, b] = [await vault.seal(alice, '1234', 'r:pin'), await vault.seal(alice, '1234', 'r:pin')];
    expect(a).not.to.equal(b);
    const parts = a.split('.');
    const data = Buffer.from(parts[4] as string, 'base64url');
    data[0] = (data[0] ?? 0) ^ 1;
    await rejection(vault.open([...parts.slice(0, 4), data.toString('base64url')].join('.'), 'r:pin'), 'altered');
    expect((await rejection(vault.open('not sealed', 'r:pin'))).message).to.equal('not a sealed card-vault value');
  });

  it('opens on every node what another sealed (the data key is shared through the database)', async () => {
    const otherNode = new CardVault(await testSealer(sql, { pepper, keks }));
    expect(await otherNode.open(await vault.seal(alice, '737', 'r:cvc'), 'r:cvc')).to.equal('737');
  });

  it('still opens what was sealed before data keys (v1, under the pepper), and only with the same pepper', async () => {
    const old = sealedAsV1(pepper, '4000009876543210', 'iss_card_9:pan');
    expect(await vault.open(old, 'iss_card_9:pan')).to.equal('4000009876543210');
    await rejection(vault.open(old, 'iss_card_9:cvc'), 'bound to another secret');
    const elsewhere = new CardVault(await testSealer(sql, { pepper: 'another-pepper' }));
    await rejection(elsewhere.open(old, 'iss_card_9:pan'), 'another pepper');
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
