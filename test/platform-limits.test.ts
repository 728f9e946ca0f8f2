import { expect } from 'chai';
import { brokenLimits, LIMITS, type Limits } from '../src/platform/limits';

/** The platform's limits and their relations (src/platform/limits.ts): held at start, and each one refused when broken. */
describe("the platform's limits", () => {
  const changed = (edit: (l: Limits) => void): Limits => {
    const copy = structuredClone(LIMITS) as Limits;
    edit(copy);
    return copy;
  };

  it('keep every relation as they stand', () => {
    expect(brokenLimits(LIMITS)).to.deep.equal([]);
  });

  it('refuse a lease renewed too late, a pace longer than a renewal, a reactor waiting past its lease', () => {
    expect(brokenLimits(changed((l) => Object.assign(l.consumers.projections, { leaseRenewEveryMs: 4_000 })))).to.deep.equal([
      'projections: a lease is renewed at least twice before it lapses',
    ]);
    expect(brokenLimits(changed((l) => Object.assign(l.consumers.reactors, { paceMs: 3_000 })))).to.deep.equal([
      "reactors: a batch's pace is shorter than a lease renewal",
    ]);
    expect(brokenLimits(changed((l) => Object.assign(l.consumers, { reactorReadModelsWaitMs: 10_000 })))).to.deep.equal([
      'reactors: the wait for read models ends before the lease lapses',
    ]);
  });

  it('refuse batches that do not fit one read of the log, and input deeper than the store holds', () => {
    expect(brokenLimits(changed((l) => Object.assign(l.consumers.projections, { batchSize: 20_000 })))).to.deep.equal([
      'projections: a batch fits one read of the log (at most 10000 events)',
    ]);
    expect(brokenLimits(changed((l) => Object.assign(l.store, { readBatch: 500 })))).to.include('a rebuild or verification step fits one read of the log');
    expect(brokenLimits(changed((l) => Object.assign(l.http, { inputDepth: 64 })))).to.deep.equal([
      'whatever the API accepts, the store can hold (input depth)',
    ]);
  });

  it('refuse a KurrentDB reply timeout or backoff that leaves no room in the append budget', () => {
    expect(brokenLimits(changed((l) => Object.assign(l.kurrentdb, { appendReplyTimeoutMs: 10_000 })))).to.deep.equal([
      'kurrentdb: a write may time out and still be planned again within the budget',
    ]);
    expect(brokenLimits(changed((l) => Object.assign(l.kurrentdb, { backoffMaxMs: 20_000 })))).to.deep.equal(['kurrentdb: the backoff fits the append budget']);
  });
});
