import { expect } from 'chai';
import { DEFAULT_DISPATCH, retryWaitMs } from '../../src/app/notifications/dispatcher';

/**
 * The retry schedule of docs/decisions.md ("Partner notifications"): the first retry within 30 s, then
 * the wait doubles, with jitter, capped. The jitter only shortens a wait to no less than half of it,
 * so no retry comes later than the schedule says.
 */
describe('the retry schedule of a notification', () => {
  const SECOND = 1_000;
  const waits = (random: number) =>
    [1, 2, 3, 4].map((attempt) =>
      retryWaitMs(attempt, { firstRetryMs: DEFAULT_DISPATCH.firstRetryMs, maxRetryWaitMs: DEFAULT_DISPATCH.maxRetryWaitMs, random: () => random }),
    );

  it('waits 15 to 30 s before the first retry, then doubles: the jitter keeps each wait within the upper half of its step', () => {
    expect(waits(0)).to.deep.equal([15 * SECOND, 30 * SECOND, 60 * SECOND, 120 * SECOND]);
    const longest = waits(0.999_999);
    expect(longest.map((w) => Math.round(w / SECOND))).to.deep.equal([30, 60, 120, 240]);
    for (const [i, wait] of longest.entries()) expect(wait, `retry ${i + 1}`).to.be.at.most(30 * SECOND * 2 ** i);
  });

  it('never waits longer than the cap, however many attempts failed', () => {
    for (const attempt of [20, 40, 1_000])
      expect(retryWaitMs(attempt, { ...DEFAULT_DISPATCH, random: () => 0.999_999 }), `attempt ${attempt}`).to.be.at.most(DEFAULT_DISPATCH.maxRetryWaitMs);
    expect(retryWaitMs(1_000, { ...DEFAULT_DISPATCH, random: () => 0 })).to.equal(DEFAULT_DISPATCH.maxRetryWaitMs / 2);
  });
});
