import { expect } from 'chai';
import { SecretChecks, type StoredKey } from '../../src/app/secret-checks';

/** A stand-in for scrypt that counts its runs and answers when told. */
function fakeScrypt() {
  const pending: Array<() => void> = [];
  const calls: string[] = [];
  return {
    calls,
    verify: (secret: string) =>
      new Promise<boolean>((resolve) => {
        calls.push(secret);
        pending.push(() => resolve(secret === 'right'));
      }),
    finishAll: async () => {
      for (const done of pending.splice(0)) done();
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('partner secret checks', () => {
  const key: StoredKey = { apiKey: 'tk_sandbox_1', partnerId: 'p1', secretHash: 'stored' };
  let now = 0;
  const clock = () => now;
  beforeEach(() => {
    now = 1_000_000;
  });

  it('runs at most a small budget of checks per key, refuses other unknown secrets without one, and refills slowly', async () => {
    const scrypt = fakeScrypt();
    const checks = new SecretChecks(scrypt.verify, clock);
    const answers = Promise.all(Array.from({ length: 200 }, (_, i) => checks.check(key, `wrong-${i}`)));
    expect(scrypt.calls).to.have.length(4);
    await scrypt.finishAll();
    expect(new Set(await answers)).to.deep.equal(new Set([false]));
    // Another key has a budget of its own.
    const other = checks.check({ ...key, apiKey: 'tk_sandbox_2' }, 'right');
    expect(scrypt.calls).to.have.length(5);
    await scrypt.finishAll();
    expect(await other).to.equal(true);
    expect(await checks.check(key, 'wrong-x')).to.equal(false);
    expect(scrypt.calls).to.have.length(5);
    now += 2_000;
    const later = checks.check(key, 'right');
    expect(scrypt.calls).to.have.length(6);
    await scrypt.finishAll();
    expect(await later).to.equal(true);
  });

  it('answers a wrong secret presented again from memory, for a while', async () => {
    const scrypt = fakeScrypt();
    const checks = new SecretChecks(scrypt.verify, clock);
    const first = checks.check(key, 'wrong');
    await scrypt.finishAll();
    expect(await first).to.equal(false);
    now += 59_000;
    for (let i = 0; i < 10; i++) expect(await checks.check(key, 'wrong')).to.equal(false);
    expect(scrypt.calls).to.have.length(1);
    now += 2_000;
    const again = checks.check(key, 'wrong');
    expect(scrypt.calls).to.have.length(2);
    await scrypt.finishAll();
    expect(await again).to.equal(false);
  });

  it('checks a pair once however many ask at once, then remembers it right until the partner’s keys are revoked', async () => {
    const scrypt = fakeScrypt();
    const checks = new SecretChecks(scrypt.verify, clock);
    const answers = Promise.all(Array.from({ length: 50 }, () => checks.check(key, 'right')));
    expect(scrypt.calls).to.have.length(1);
    await scrypt.finishAll();
    expect(new Set(await answers)).to.deep.equal(new Set([true]));
    // In use, it stays known past the 5 minutes a pair is remembered.
    for (let i = 0; i < 10; i++) {
      now += 4 * 60_000;
      expect(await checks.check(key, 'right')).to.equal(true);
    }
    expect(scrypt.calls).to.have.length(1);
    checks.forgetPartner('p1');
    const after = checks.check(key, 'right');
    expect(scrypt.calls).to.have.length(2);
    await scrypt.finishAll();
    expect(await after).to.equal(true);
  });
});
