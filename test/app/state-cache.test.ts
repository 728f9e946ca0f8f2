import { expect } from 'chai';
import { load, StateCache, toNewEvents } from '../../src/platform/commands/commands';
import { accountCreditStream, accountDecider, type AccountState } from '../../src/domain/ledger/account';
import type { EventStore } from '../../src/eventstore/port';
import { embeddedStore } from '../support/embedded-store';

/** The state cache against the embedded store: what it keeps when appends settle out of order. */
describe('state cache', () => {
  const embedded = embeddedStore();
  let store: EventStore;
  beforeEach(() => {
    store = embedded.store();
  });

  const stream = accountCreditStream(4242);
  const credit = (n: number) =>
    toNewEvents({ commandId: `credit-${n}`, metadata: {} }, stream, [
      { type: 'FundsCredited', data: { accountId: 4242, transactionId: `t${n}`, amount: '1.00000000', reason: 'transfer', at: '2026-11-25T00:00:00.000Z' } },
    ]);

  it('keeps a state that an append settled out of order left behind, and a load reads only what it missed', async () => {
    const cache = new StateCache();
    for (let n = 0; n < 5; n++) await store.append(stream, credit(n), 'any');
    const loaded = await load<AccountState, never>(store, stream, accountDecider, { cache });
    expect(loaded.revision).to.equal(4);
    // Two appends at any revision; the second one's result is applied first.
    const first = await store.append(stream, credit(5), 'any');
    const second = await store.append(stream, credit(6), 'any');
    cache.advance(accountDecider, stream, credit(6), second.nextRevision);
    cache.advance(accountDecider, stream, credit(5), first.nextRevision);
    // The second result was left out (its state was not the one before it); the first one still
    // folds in. The state stays, one event behind the stream: a trusting caller gets it (an append
    // at its revision would then fail).
    const trusted = await load<AccountState, never>(store, stream, accountDecider, { cache, trustCache: true });
    expect([trusted.revision, trusted.state.creditsPosted.toFixed()]).to.deep.equal([5, '6']);
    // A load that does not trust it folds the event it missed, and no more.
    let readFrom: number | undefined;
    const watched: EventStore = Object.create(store, {
      readStream: {
        value: (name: string, options?: { fromRevision?: number }) => {
          readFrom = options?.fromRevision;
          return store.readStream(name, options);
        },
      },
    });
    const fresh = await load<AccountState, never>(watched, stream, accountDecider, { cache });
    expect(readFrom).to.equal(6);
    expect(fresh.revision).to.equal(6);
    expect(fresh.state.creditsPosted.toFixed()).to.equal('7');
    // In line again: the next append is folded in without a read.
    const third = await store.append(stream, credit(7), 'any');
    cache.advance(accountDecider, stream, credit(7), third.nextRevision);
    const after = await load<AccountState, never>(store, stream, accountDecider, { cache, trustCache: true });
    expect([after.revision, after.state.creditsPosted.toFixed()]).to.deep.equal([7, '8']);
  });
});
