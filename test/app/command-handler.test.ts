import { expect } from 'chai';
import { type Append, at, CommandHandler, MAX_ATTEMPTS } from '../../src/platform/commands/command-handler';
import { type CommandContext, StateCache, toNewEvents } from '../../src/platform/commands/commands';
import { IdempotencyKeys } from '../../src/app/ledger/idempotency';
import { type Decider, DomainError } from '../../src/platform/decider';
import { type EventStore, OverloadedError, WrongExpectedRevisionError } from '../../src/eventstore/port';
import { PostgresEventStore } from '../../src/eventstore/postgres';
import { embeddedStore } from '../support/embedded-store';

/** A counter that refuses to go above a ceiling: enough rules to see how commands are carried out. */
type Added = { type: 'Added'; data: { by: number } };
const counter: Decider<number, { add: number; ceiling?: number }, Added> = {
  initialState: () => 0,
  evolve: (total, e) => total + e.data.by,
  decide: (command, total) => {
    if (command.ceiling !== undefined && total + command.add > command.ceiling) throw new DomainError('invalid', `over ${command.ceiling}`);
    return [{ type: 'Added', data: { by: command.add } }];
  },
};

let next = 0;
const ctx = (): CommandContext => ({ commandId: `c${next++}`, metadata: {} });
const added = (by: number, stream: string) => toNewEvents(ctx(), stream, [{ type: 'Added', data: { by } }]);

describe('the command handler (on the embedded store)', () => {
  const embedded = embeddedStore();
  let store: EventStore;
  let stream: string;
  beforeEach(() => {
    store = embedded.store();
    stream = `counter-${next++}`;
  });

  it('decides again on the fresh state when another write lands between its load and its append', async () => {
    const handler = new CommandHandler(store);
    let attempts = 0;
    const done = await handler.run(ctx(), async (reads) => {
      const loaded = await reads.stream(stream, counter);
      if (attempts++ === 0) await store.append(stream, added(5, stream), 'any');
      return {
        appends: [{ stream, events: counter.decide({ add: 1 }, loaded.state), expected: loaded.revision === -1 ? 'no_stream' : loaded.revision }],
        result: loaded.state,
      };
    });
    expect([attempts, done.result]).to.deep.equal([2, 5]);
    expect((await store.readStream(stream)).map((e) => e.data.by)).to.deep.equal([5, 1]);
  });

  it(`gives up after ${MAX_ATTEMPTS} attempts, and refuses at once where the command names the refusal for a conflict`, async () => {
    const handler = new CommandHandler(store);
    let attempts = 0;
    const always = handler.run(ctx(), async () => {
      attempts++;
      await store.append(stream, added(1, stream), 'any');
      return { appends: [{ stream, events: [{ type: 'Added', data: { by: 1 } }], expected: 'no_stream' }], result: null };
    });
    await always.then(
      () => expect.fail('expected a conflict'),
      (error) => expect(error).to.be.instanceOf(WrongExpectedRevisionError),
    );
    expect(attempts).to.equal(MAX_ATTEMPTS);
    const taken = new DomainError('conflict', 'taken');
    const refused = await handler
      .run(ctx(), async () => ({
        appends: [{ stream, events: [{ type: 'Added', data: { by: 1 } }], expected: 'no_stream', refuseOnConflict: taken }],
        result: null,
      }))
      .catch((e) => e);
    expect(refused).to.equal(taken);
  });

  it('decides again when its events are already stored with other content (the same keyed command made by another node)', async () => {
    const handler = new CommandHandler(store);
    const keyed = ctx();
    // "Another node" made the keyed command first: one of its event ids is stored, with another content.
    await store.append(stream, toNewEvents(keyed, stream, [{ type: 'Added', data: { by: 7 } }]), 'any');
    let attempts = 0;
    const done = await handler.run(keyed, async (reads) => {
      attempts++;
      const loaded = await reads.stream(stream, counter);
      // The decision that finds the command made answers with it, appending nothing.
      if (attempts > 1) return { appends: [], result: loaded.state };
      const events = [1, 2].map((by) => ({ type: 'Added', data: { by } }));
      return { appends: [{ stream, events, expected: 'any' }], result: -1 };
    });
    expect([attempts, done.result, done.position]).to.deep.equal([2, 7, undefined]);
  });

  it('refuses only after a decision on the stored state, never on a state trusted from the cache', async () => {
    const cache = new StateCache();
    const handler = new CommandHandler(store, cache);
    await handler.decide(ctx(), stream, counter, { add: 9 });
    // Another node takes the counter down to 1; this node's cache still says 9.
    await store.append(stream, added(-8, stream), 'any');
    const done = await handler.decide(ctx(), stream, counter, { add: 5, ceiling: 10 });
    expect(done.result.state).to.equal(6);
    const over = await handler.decide(ctx(), stream, counter, { add: 5, ceiling: 10 }).catch((e) => e);
    expect([over.kind, over.message]).to.deep.equal(['invalid', 'over 10']);
  });

  it('after a conflicting append reads again only the stream that conflicted, and still refuses only on stored states', async () => {
    const cache = new StateCache();
    const reads: string[] = [];
    const counting: EventStore = Object.assign(Object.create(store) as EventStore, {
      readStream: (name: string, options?: object) => {
        reads.push(name);
        return store.readStream(name, options);
      },
    });
    const handler = new CommandHandler(counting, cache);
    /**
     * This node has a counter at 1 and a fact at 3 in its cache; another node then adds `moves` to
     * them. The command adds 1 to the counter, at its revision, unless that would pass the fact.
     */
    const scenario = async (moves: { counter: number; fact: number }) => {
      const [own, facts] = [`${stream}-${next++}`, `${stream}-${next++}-facts`];
      await handler.decide(ctx(), own, counter, { add: 1 });
      await handler.decide(ctx(), facts, counter, { add: 3 });
      await store.append(own, added(moves.counter, own), 'any');
      await store.append(facts, added(moves.fact, facts), 'any');
      reads.length = 0;
      const done = await handler.run(ctx(), async (r) => {
        const [mine, fact] = await Promise.all([r.stream(own, counter), r.stream(facts, counter)]);
        const refused = mine.state + 1 > fact.state;
        return {
          appends: refused ? [] : [{ stream: own, events: counter.decide({ add: 1 }, mine.state), expected: at(mine) }],
          result: mine.state + 1,
          refused,
        };
      });
      return { result: done.result, reads: reads.map((name) => (name === own ? 'counter' : 'fact')) };
    };
    // The first attempt trusts both (no read) and conflicts on the counter; the second reads the counter alone.
    expect(await scenario({ counter: 1, fact: 6 })).to.deep.equal({ result: 3, reads: ['counter'] });
    // There the fact, still trusted at 3 (stored: 9), refuses: that is decided again on everything stored.
    expect(await scenario({ counter: 2, fact: 6 })).to.deep.equal({ result: 4, reads: ['counter', 'counter', 'fact'] });
  });

  it('batches the commands on one key that arrive while a batch is written: one decision, one result or refusal each', async () => {
    const handler = new CommandHandler(store, new StateCache());
    const sizes: number[] = [];
    const batches = handler.batches<{ add: number; ctx: CommandContext }, number>(async (asks, reads) => {
      sizes.push(asks.length);
      const adds = asks.map((a) => a.add);
      const loaded = await reads.stream(stream, counter);
      let total = loaded.state;
      const results = adds.map((add) => {
        try {
          const events = counter.decide({ add, ceiling: 10 }, total);
          total = events.reduce(counter.evolve, total);
          return total;
        } catch (error) {
          return error as DomainError;
        }
      });
      const expected = at(loaded);
      const appends: Append[] = asks.flatMap(({ add, ctx }, i) =>
        results[i] instanceof DomainError ? [] : [{ stream, events: [{ type: 'Added', data: { by: add } }], expected, ctx }],
      );
      return { appends, result: results };
    });
    const outcomes = await Promise.allSettled(
      [4, 4, 4, 1].map((add) => {
        const c = ctx();
        return batches.submit(stream, c, { add, ctx: c });
      }),
    );
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.result : (o.reason as Error).message))).to.deep.equal([4, 8, 'over 10', 9]);
    expect(sizes[0]).to.equal(1);
    expect(sizes.reduce((a, b) => a + b, 0)).to.be.at.most(1 + 3 * 2);
    const bounded = handler.batches<number, number>(async () => new Promise(() => {}), { maxQueued: 2 });
    void bounded.submit('k', ctx(), 1);
    void bounded.submit('k', ctx(), 2);
    const third = await bounded.submit('k', ctx(), 3).catch((e) => e);
    expect(third).to.be.instanceOf(OverloadedError);
  });

  it('has batches of different kinds on one key take turns, so none appends at a revision another just moved', async () => {
    const refused: unknown[] = [];
    const counted: EventStore = Object.create(store);
    counted.appendMany = (appends) =>
      store.appendMany(appends).catch((error) => {
        refused.push(error);
        throw error;
      });
    const handler = new CommandHandler(counted, new StateCache());
    const kind = () =>
      handler.batches<{ add: number; ctx: CommandContext }, number>(async (asks, reads) => {
        const loaded = await reads.stream(stream, counter);
        const appends: Append[] = asks.map(({ add, ctx }) => ({
          stream,
          events: [{ type: 'Added', data: { by: add } }],
          expected: at(loaded),
          ctx,
          cached: counter as Append['cached'],
        }));
        return { appends, result: asks.map(() => loaded.state) };
      });
    const [transfers, authorizations] = [kind(), kind()];
    const submitted = Array.from({ length: 40 }, (_, i) => {
      const c = ctx();
      return (i % 2 ? transfers : authorizations).submit(stream, c, { add: 1, ctx: c });
    });
    await Promise.all(submitted);
    expect(refused, 'appends refused for a stale revision').to.deep.equal([]);
    const events = await store.readStream(stream);
    expect(events.length).to.equal(40);
  });

  it('has a bounded queue in front of the event log', async () => {
    const small = new PostgresEventStore(embedded.sql(), { maxQueued: 1, maxInFlight: 1 });
    const results = await Promise.allSettled([1, 2, 3].map((n) => small.append(`bounded-${next++}`, added(n, 'x'), 'any')));
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).to.satisfy(
      (errors: unknown[]) => errors.length > 0 && errors.every((e) => e instanceof OverloadedError),
    );
  });
});

describe('idempotency keys in flight', () => {
  it('refuse a copy of a header-keyed request while the first runs, and make a payout copy wait for it (bounded)', async () => {
    const keys = new IdempotencyKeys(1);
    let release: () => void = () => {};
    const first = keys.run('k', 'refuse', () => new Promise<string>((resolve) => (release = () => resolve('first'))));
    const copy = await keys.run('k', 'refuse', async () => 'copy').catch((e) => e);
    expect([copy.kind, copy.message]).to.deep.equal(['invalid', 'Duplicate request in progress']);
    const waiting = keys.run('k', 'wait', async () => 'after');
    const overflow = await keys.run('k', 'wait', async () => 'never').catch((e) => e);
    expect(overflow).to.be.instanceOf(OverloadedError);
    release();
    expect(await first).to.equal('first');
    expect(await waiting).to.equal('after');
  });
});
