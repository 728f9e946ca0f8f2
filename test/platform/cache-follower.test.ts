import { expect } from 'chai';
import pino from 'pino';
import { at, CommandHandler } from '../../src/platform/commands/command-handler';
import { type CommandContext, StateCache, toNewEvents } from '../../src/platform/commands/commands';
import { CacheFollower } from '../../src/platform/consumers/cache-follower';
import type { Decider } from '../../src/platform/decider';
import type { EventStore } from '../../src/eventstore/port';
import { embeddedStore } from '../support/embedded-store';

type Added = { type: 'Added'; data: { by: number } };
const counter: Decider<number, { add: number }, Added> = {
  initialState: () => 0,
  evolve: (total, e) => total + e.data.by,
  decide: (command) => [{ type: 'Added', data: { by: command.add } }],
};

let next = 0;
const ctx = (): CommandContext => ({ commandId: `f${next++}`, metadata: {} });

/** Resolves once `follower` has read `events` heads (it polls every few ms). */
async function followed(follower: CacheFollower, events: number): Promise<void> {
  const until = Date.now() + 5_000;
  while (follower.stats.events < events) {
    if (Date.now() > until) throw new Error(`the follower read ${follower.stats.events} of ${events} heads`);
    await new Promise((done) => setTimeout(done, 5));
  }
}

describe('the state cache follower (two nodes on one log, each with its own cache)', () => {
  const embedded = embeddedStore();

  it('has a node read what another node appended before deciding, instead of failing its append and deciding again', async () => {
    const store = embedded.store();
    const stream = `counter-${next++}`;
    // Node A: its own cache, the reads it makes counted, its follower.
    const reads: string[] = [];
    const counting: EventStore = Object.assign(Object.create(store) as EventStore, {
      readStream: (name: string, options?: object) => {
        reads.push(name);
        return store.readStream(name, options);
      },
    });
    const cacheA = new StateCache();
    const nodeA = new CommandHandler(counting, cacheA);
    const nodeB = new CommandHandler(store, new StateCache());
    const follower = new CacheFollower(store, cacheA, 2, pino({ level: 'silent' }));
    await follower.start();
    try {
      let attempts = 0;
      const add = (by: number) =>
        nodeA.run(ctx(), async (r) => {
          attempts++;
          const own = await r.stream(stream, counter);
          return { appends: [{ stream, events: counter.decide({ add: by }, own.state), expected: at(own), cached: counter }], result: own.state + by };
        });
      await add(1);
      await followed(follower, 1);
      // Node B moves the stream; node A's cache still has it at revision 0.
      await nodeB.decide(ctx(), stream, counter, { add: 10 });
      await followed(follower, 2);
      [attempts, reads.length] = [0, 0];
      expect((await add(100)).result).to.equal(111);
      expect({ attempts, reads }).to.deep.equal({ attempts: 1, reads: [stream] });
      // Its own append (seen by the follower too) leaves the state trusted: no read.
      await followed(follower, 3);
      [attempts, reads.length] = [0, 0];
      expect((await add(1_000)).result).to.equal(1_111);
      expect({ attempts, reads }).to.deep.equal({ attempts: 1, reads: [] });
    } finally {
      await follower.stop();
    }
  });

  it('notes only streams in the cache, and trusts a state again once it has caught up', () => {
    const cache = new StateCache();
    const key = cache.key(counter, 'counter-x');
    cache.set(key, { state: 1, revision: 0 });
    cache.noteStored('counter-unknown', 5);
    cache.noteStored('counter-x', 0);
    expect(cache.trusted(key)?.revision).to.equal(0);
    cache.noteStored('counter-x', 2);
    expect(cache.trusted(key)).to.equal(undefined);
    expect(cache.get(key)?.state, 'kept, as the base the next read goes on from').to.equal(1);
    cache.set(key, { state: 3, revision: 2 });
    expect(cache.trusted(key)?.state).to.equal(3);
    cache.advance(counter, 'counter-x', toNewEvents(ctx(), 'counter-x', [{ type: 'Added', data: { by: 1 } }]), 3);
    expect(cache.trusted(key)?.state).to.equal(4);
  });
});
