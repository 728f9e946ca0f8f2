import { expect } from 'chai';
import { SecretChecks, type StoredKey, TooManySecretChecks } from '../../src/app/identity/secret-checks';

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

  /** What a check answers: right, wrong, or come back in n seconds. */
  const outcome = (check: Promise<boolean>): Promise<boolean | string> =>
    check.catch((error) => {
      if (error instanceof TooManySecretChecks) return `retry after ${error.retryAfterSeconds}s`;
      throw error;
    });

  it('runs at most a small budget of checks per key, answers other unknown secrets "come back later" without one, and refills slowly', async () => {
    const scrypt = fakeScrypt();
    const checks = new SecretChecks(scrypt.verify, clock);
    const answers = Promise.all(Array.from({ length: 200 }, (_, i) => outcome(checks.check(key, `wrong-${i}`))));
    expect(scrypt.calls).to.have.length(4);
    await scrypt.finishAll();
    const counts = new Map<boolean | string, number>();
    for (const a of await answers) counts.set(a, (counts.get(a) ?? 0) + 1);
    expect(Object.fromEntries(counts)).to.deep.equal({ false: 4, 'retry after 2s': 196 });
    // Another key has a budget of its own.
    const other = checks.check({ ...key, apiKey: 'tk_sandbox_2' }, 'right');
    expect(scrypt.calls).to.have.length(5);
    await scrypt.finishAll();
    expect(await other).to.equal(true);
    now += 1_500;
    expect(await outcome(checks.check(key, 'wrong-x'))).to.equal('retry after 1s');
    expect(scrypt.calls).to.have.length(5);
    now += 500;
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

  it('never calls the right secret wrong behind a flood of wrong ones: it is told to come back, and is right when it does', async () => {
    const scrypt = fakeScrypt();
    const checks = new SecretChecks(scrypt.verify, clock);
    const flood = Promise.all(Array.from({ length: 50 }, (_, i) => outcome(checks.check(key, `wrong-${i}`))));
    await scrypt.finishAll();
    await flood;
    // The partner's own first call on this node, after the flood spent the key's budget.
    expect(await outcome(checks.check(key, 'right'))).to.equal('retry after 2s');
    now += 2_000;
    const retried = outcome(checks.check(key, 'right'));
    await scrypt.finishAll();
    expect(await retried).to.equal(true);
  });
});
