import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { verifyChain } from '../../src/eventstore/hash';
import { type AppendResult, EventIdConflictError, type NewEvent, WrongExpectedRevisionError } from '../../src/eventstore/port';
import { type AppendTiming, PostgresEventStore, type PostgresEventStoreOptions } from '../../src/eventstore/postgres';
import { PgliteSql, PgSql, type Sql } from '../../src/eventstore/sql';
import { sharedCluster } from '../support/postgres';

/**
 * The adapter's group commit (PostgresEventStore.appendMany -> es_append_batch): concurrent appends
 * share one transaction, yet each keeps its own outcome, as if they had run one after the other.
 */

const ev = (type = 'Something', data: Record<string, string | number> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { correlationId: randomUUID(), actor: { kind: 'system', id: 'test' } },
});

const uniqueStream = (category = 'batch') => `${category}-${randomUUID()}`;

type Outcome = PromiseSettledResult<AppendResult>;

const fulfilled = (o: Outcome | undefined): AppendResult => {
  if (o?.status !== 'fulfilled') throw new Error(`expected success, got ${o?.status === 'rejected' ? String(o.reason) : 'nothing'}`);
  return o.value;
};

const rejected = (o: Outcome | undefined): unknown => {
  if (o?.status !== 'rejected') throw new Error(`expected a rejection, got ${JSON.stringify(o)}`);
  return o.reason;
};

interface Target {
  name: string;
  /** A store on its own empty log. */
  open(options?: PostgresEventStoreOptions): Promise<{ store: PostgresEventStore; sql: Sql; url?: string; close(): Promise<void> }>;
}

const targets: Target[] = [
  {
    name: 'postgres server',
    async open(options) {
      const url = await (await sharedCluster()).freshDatabase();
      const sql = new PgSql(url);
      const store = await PostgresEventStore.create(sql, options);
      return { store, sql, url, close: () => sql.close() };
    },
  },
  {
    name: 'pglite (embedded)',
    async open(options) {
      const sql = await PgliteSql.open();
      const store = await PostgresEventStore.create(sql, options);
      return { store, sql, close: () => sql.close() };
    },
  },
];

async function expectChainsVerify(store: PostgresEventStore, streams: Iterable<string>): Promise<void> {
  for (const stream of new Set(streams)) {
    const events = await store.readStream(stream);
    expect(events.map((e) => e.revision)).to.deep.equal(
      events.map((_, i) => i),
      `revisions of ${stream}`,
    );
    expect(verifyChain(events), `chain of ${stream}`).to.deep.equal([]);
  }
}

/**
 * A store of the server target on its own log, with a stream of one event whose row another
 * connection holds locked (FOR UPDATE, in an open transaction), as a batch in flight holds its
 * streams until its commit is flushed: an append to it waits until `holder` commits. `close` ends
 * both.
 */
async function withLockedStream(
  target: Target,
  options: PostgresEventStoreOptions,
): Promise<{ store: PostgresEventStore; held: string; holder: pg.Client; close(): Promise<void> }> {
  const s = await target.open(options);
  const holder = new pg.Client({ connectionString: s.url });
  const close = async () => {
    await holder.end().catch(() => {});
    await s.close();
  };
  try {
    const held = uniqueStream();
    await s.store.append(held, [ev()], 'no_stream');
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM es_streams WHERE stream_id = $1 FOR UPDATE', [held]);
    return { store: s.store, held, holder, close };
  } catch (error) {
    await close();
    throw error;
  }
}

for (const target of targets) {
  describe(`postgres event store group commit: ${target.name}`, () => {
    let opened: Awaited<ReturnType<Target['open']>>;
    let store: PostgresEventStore;
    before(async () => {
      opened = await target.open();
      store = opened.store;
    });
    after(async () => {
      await opened.close();
    });

    it('forms batches under concurrency, and a lone append goes alone', async () => {
      const before = { ...store.stats };
      await store.append(uniqueStream(), [ev()], 'no_stream');
      expect(store.stats.batches - before.batches).to.equal(1);
      expect(store.stats.requests - before.requests).to.equal(1);

      const streams = Array.from({ length: 60 }, () => uniqueStream());
      const mid = { ...store.stats };
      const results = await Promise.all(streams.map((s) => store.append(s, [ev('A'), ev('B')], 'no_stream')));
      expect(results.map((r) => r.nextRevision)).to.deep.equal(streams.map(() => 1));
      const batches = store.stats.batches - mid.batches;
      const requests = store.stats.requests - mid.requests;
      expect(requests).to.equal(60);
      expect(batches).to.be.lessThan(requests);
      expect(store.stats.largestBatch).to.be.greaterThan(1);
      await expectChainsVerify(store, streams);
    });

    it('times every batch that ran in one call: its SQL, and each request from queued to answered', async () => {
      const timings: AppendTiming[] = [];
      const stop = store.onAppendTimed((t) => timings.push(t));
      const before = { ...store.stats };
      const streams = Array.from({ length: 20 }, () => uniqueStream());
      await Promise.all(streams.map((s) => store.append(s, [ev()], 'no_stream')));
      stop();
      expect(timings).to.have.length(store.stats.batches - before.batches);
      expect(timings.flatMap((t) => t.requestMs)).to.have.length(20);
      for (const t of timings) {
        expect(t.sqlMs).to.be.greaterThan(0);
        // A request's time holds its batch's SQL, and the wait before it left.
        for (const ms of t.requestMs) expect(ms).to.be.at.least(t.sqlMs);
      }
      await store.append(uniqueStream(), [ev()], 'no_stream');
      expect(timings.flatMap((t) => t.requestMs)).to.have.length(20);
    });

    it('gathers requests made in separate callbacks of one event-loop turn into one batch (as requests read from separate sockets)', async () => {
      const streams = Array.from({ length: 10 }, () => uniqueStream());
      const before = { ...store.stats };
      const calls = await new Promise<Array<Promise<AppendResult>>>((resolve) => {
        const made: Array<Promise<AppendResult>> = [];
        for (const s of streams)
          setImmediate(() => {
            made.push(store.append(s, [ev()], 'no_stream'));
            if (made.length === streams.length) resolve(made);
          });
      });
      await Promise.all(calls);
      expect(store.stats.requests - before.requests).to.equal(10);
      // On a server the first leaves at once and the others gather behind it; PGlite runs a query on
      // this thread, so a batch leaves at the end of the turn, with every request of the turn.
      if (opened.sql.kind === 'pglite') expect(store.stats.batches - before.batches).to.equal(1);
      else expect(store.stats.batches - before.batches).to.be.within(2, 9);
    });

    it('keeps each request all-or-nothing: wrong expected revisions fail alone, the rest of the burst succeeds', async () => {
      const existing = Array.from({ length: 20 }, () => uniqueStream());
      await Promise.all(existing.map((s) => store.append(s, [ev()], 'no_stream')));
      const fresh = Array.from({ length: 10 }, () => uniqueStream());
      const missing = Array.from({ length: 10 }, () => uniqueStream());
      const before = { ...store.stats };
      // One burst: right and wrong revisions on existing streams, new streams, stream_exists on missing
      // streams, and multi-stream appends where only one stream is wrong.
      const burst: Array<Promise<AppendResult | AppendResult[]>> = [];
      existing.forEach((s, i) => {
        burst.push(store.append(s, [ev('X'), ev('Y')], i % 2 === 0 ? 0 : 7));
      });
      fresh.forEach((s) => {
        burst.push(store.append(s, [ev('New')], 'no_stream'));
      });
      missing.forEach((s) => {
        burst.push(store.append(s, [ev('Never')], 'stream_exists'));
      });
      const pairs = Array.from({ length: 5 }, () => [uniqueStream(), uniqueStream()] as const);
      pairs.forEach(([a, b], i) => {
        burst.push(
          store.appendMany([
            { stream: a, events: [ev('PairA')], expectedRevision: 'no_stream' },
            { stream: b, events: [ev('PairB')], expectedRevision: i % 2 === 0 ? 'no_stream' : 3 },
          ]),
        );
      });
      const outcomes = await Promise.allSettled(burst);
      expect(store.stats.batches - before.batches).to.be.lessThan(store.stats.requests - before.requests);

      let k = 0;
      for (const [i, s] of existing.entries()) {
        const o = outcomes[k++] as Outcome;
        if (i % 2 === 0) {
          expect(fulfilled(o).nextRevision).to.equal(2);
          expect((await store.readStream(s)).map((e) => e.type)).to.deep.equal(['Something', 'X', 'Y']);
        } else {
          const error = rejected(o);
          expect(error).to.be.instanceOf(WrongExpectedRevisionError);
          expect((error as WrongExpectedRevisionError).stream).to.equal(s);
          expect((error as WrongExpectedRevisionError).expected).to.equal(7);
          expect((error as WrongExpectedRevisionError).actual).to.equal(0);
          expect(await store.readStream(s)).to.have.length(1);
        }
      }
      for (const s of fresh) {
        expect(fulfilled(outcomes[k++] as Outcome).nextRevision).to.equal(0);
        // The new stream is really there: the next exact-revision append continues it.
        expect((await store.append(s, [ev('Next')], 0)).nextRevision).to.equal(1);
      }
      for (const s of missing) {
        expect(rejected(outcomes[k++] as Outcome)).to.be.instanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(s)).to.have.length(0);
        // Still absent, not a leftover empty stream.
        expect((await store.append(s, [ev('First')], 'no_stream')).nextRevision).to.equal(0);
      }
      for (const [i, [a, b]] of pairs.entries()) {
        const o = outcomes[k++] as PromiseSettledResult<AppendResult[]>;
        if (i % 2 === 0) {
          expect(o.status).to.equal('fulfilled');
          expect((await store.readStream(a)).map((e) => e.type)).to.deep.equal(['PairA']);
          expect((await store.readStream(b)).map((e) => e.type)).to.deep.equal(['PairB']);
        } else {
          expect(o.status).to.equal('rejected');
          expect((o as PromiseRejectedResult).reason).to.be.instanceOf(WrongExpectedRevisionError);
          expect((o as PromiseRejectedResult).reason.stream).to.equal(b);
          // All or nothing: the valid half of the failed request was not written either.
          expect(await store.readStream(a)).to.have.length(0);
          expect(await store.readStream(b)).to.have.length(0);
        }
      }
      expect(store.stats.fallbacks).to.equal(before.fallbacks);
      const [leftovers] = await opened.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM es_streams WHERE revision = -1');
      expect(leftovers?.n).to.equal('0');
      await expectChainsVerify(store, [...existing, ...fresh, ...missing, ...pairs.flat()]);
    });

    it('lets exactly one of several concurrent requests win each revision of the same stream (one batch in flight)', async () => {
      const sequential = await target.open({ maxInFlight: 1 });
      try {
        const s = sequential.store;
        const stream = uniqueStream();
        await s.append(stream, [ev('r0')], 'no_stream');
        // Three competitors per revision 0..9, queued in this order: within the burst the first of each
        // three finds the stream at its revision (the winner before it moved it there), the others not.
        const burst = Array.from({ length: 30 }, (_, i) => s.append(stream, [ev(`w${Math.floor(i / 3)}.${i % 3}`)], Math.floor(i / 3)));
        const outcomes = await Promise.allSettled(burst);
        for (let revision = 0; revision < 10; revision++) {
          const group = outcomes.slice(revision * 3, revision * 3 + 3);
          expect(group.filter((o) => o.status === 'fulfilled')).to.have.length(1, `winners at revision ${revision}`);
          expect(fulfilled(group[0]).nextRevision).to.equal(revision + 1);
          for (const o of group.slice(1)) {
            const error = rejected(o);
            expect(error).to.be.instanceOf(WrongExpectedRevisionError);
            expect((error as WrongExpectedRevisionError).actual).to.equal(revision + 1);
          }
        }
        const events = await s.readStream(stream);
        expect(events.map((e) => e.type)).to.deep.equal(['r0', ...Array.from({ length: 10 }, (_, r) => `w${r}.0`)]);
        expect(s.stats.batches).to.be.lessThan(s.stats.requests);
        expect(s.stats.fallbacks).to.equal(0);
        await expectChainsVerify(s, [stream]);
      } finally {
        await sequential.close();
      }
    });

    // A batch held in flight needs a second connection to hold its row lock.
    if (target.name === 'postgres server')
      it('sends a large request beside a batch in flight at once, and holds a small one until enough have queued', async () => {
        const s = await withLockedStream(target, { maxInFlight: 4, minConcurrentBatch: 8, minConcurrentEvents: 6 });
        const { held, holder } = s;
        try {
          // In flight, waiting for the row lock.
          const blocked = s.store.append(held, [ev()], 0);
          await new Promise((r) => setTimeout(r, 100));
          // One request of six events: leaves beside it at once and finishes while it still waits.
          const large = await s.store.appendMany([
            { stream: uniqueStream(), events: [ev(), ev(), ev()], expectedRevision: 'no_stream' },
            { stream: uniqueStream(), events: [ev(), ev(), ev()], expectedRevision: 'no_stream' },
          ]);
          expect(large.map((r) => r.nextRevision)).to.deep.equal([2, 2]);
          // One small request: waits for the batch in flight (or for more to queue).
          let smallDone = false;
          const small = s.store.append(uniqueStream(), [ev()], 'no_stream').then((r) => {
            smallDone = true;
            return r;
          });
          await new Promise((r) => setTimeout(r, 200));
          expect(smallDone).to.equal(false);
          await holder.query('COMMIT');
          expect((await blocked).nextRevision).to.equal(1);
          expect((await small).nextRevision).to.equal(0);
        } finally {
          await s.close();
        }
      });

    if (target.name === 'postgres server')
      it('leaves a request that shares a stream with a batch in flight for after it, and sends the others beside it', async () => {
        const s = await withLockedStream(target, { maxInFlight: 4, minConcurrentBatch: 4, minConcurrentEvents: 100 });
        const { held, holder } = s;
        try {
          const beside = uniqueStream();
          // In flight, waiting for the row lock (as a batch waits for another's commit to be flushed).
          const blocked = s.store.append(held, [ev('First')], 0);
          await new Promise((r) => setTimeout(r, 100));
          const before = { ...s.store.stats };
          const settled: string[] = [];
          const track = (label: string, call: Promise<AppendResult[]>) =>
            call.then((r) => {
              settled.push(label);
              return r;
            });
          // Queued in this order: one on the held stream, one on the held stream and another, and
          // (later in the queue) one on that other stream, then four unrelated ones.
          const calls = [
            track('held', s.store.appendMany([{ stream: held, events: [ev('Second')], expectedRevision: 1 }])),
            track(
              'held+beside',
              s.store.appendMany([
                { stream: held, events: [ev('Third')], expectedRevision: 2 },
                { stream: beside, events: [ev('B1')], expectedRevision: 'no_stream' },
              ]),
            ),
            track('beside', s.store.appendMany([{ stream: beside, events: [ev('B2')], expectedRevision: 0 }])),
            ...Array.from({ length: 4 }, (_, i) =>
              track(`free${i}`, s.store.appendMany([{ stream: uniqueStream(), events: [ev()], expectedRevision: 'no_stream' }])),
            ),
          ];
          await Promise.all(calls.slice(3));
          // The four unrelated ones went beside the held batch and are done; the other three wait.
          expect(settled.sort()).to.deep.equal(['free0', 'free1', 'free2', 'free3']);
          expect(s.store.stats.heldBack - before.heldBack).to.equal(3);
          await holder.query('COMMIT');
          expect((await blocked).nextRevision).to.equal(1);
          const revisions = (await Promise.all(calls.slice(0, 3))).map((results) => results.map((r) => r.nextRevision));
          expect(revisions).to.deep.equal([[2], [3, 0], [1]]);
          expect((await s.store.readStream(held)).map((e) => e.type)).to.deep.equal(['Something', 'First', 'Second', 'Third']);
          expect((await s.store.readStream(beside)).map((e) => e.type)).to.deep.equal(['B1', 'B2']);
          await expectChainsVerify(s.store, [held, beside]);
        } finally {
          await s.close();
        }
      });

    // PGlite serves one connection: there is no second node to race with.
    if (target.name === 'postgres server')
      it('lets two nodes that create the same new streams at once end as if one came after the other', async () => {
        const shared = await target.open();
        const otherSql = new PgSql(shared.url as string);
        const other = new PostgresEventStore(otherSql);
        try {
          const exclusive = Array.from({ length: 16 }, () => uniqueStream('race'));
          const shared2 = Array.from({ length: 16 }, () => uniqueStream('race'));
          const nodes = [shared.store, other];
          const outcomes = await Promise.allSettled([
            ...exclusive.flatMap((s) => nodes.map((n) => n.append(s, [ev()], 'no_stream'))),
            ...shared2.flatMap((s) => nodes.map((n) => n.append(s, [ev()], 'any'))),
          ]);
          exclusive.forEach((s, i) => {
            const pair = outcomes.slice(2 * i, 2 * i + 2);
            expect(
              pair.filter((o) => o.status === 'fulfilled'),
              s,
            ).to.have.length(1);
            for (const o of pair) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(WrongExpectedRevisionError);
          });
          for (const [i, s] of shared2.entries()) {
            const pair = outcomes.slice(2 * exclusive.length + 2 * i, 2 * exclusive.length + 2 * i + 2);
            expect(pair.map((o) => fulfilled(o).nextRevision).sort()).to.deep.equal([0, 1]);
            expect(await shared.store.readStream(s)).to.have.length(2);
          }
          await expectChainsVerify(shared.store, [...exclusive, ...shared2]);
        } finally {
          await otherSql.close();
          await shared.close();
        }
      });

    if (target.name === 'postgres server')
      it('answers as if after the other writer when a new stream is created by another transaction while the batch runs', async () => {
        const shared = await target.open();
        const holder = new pg.Client({ connectionString: shared.url });
        await holder.connect();
        try {
          const [taken, joined] = [uniqueStream('held'), uniqueStream('held')];
          // Another writer creates both streams and has not committed yet.
          await holder.query('BEGIN');
          for (const stream of [taken, joined]) {
            await holder.query('SELECT * FROM es_append($1::jsonb)', [
              JSON.stringify([{ stream, expected: 'no_stream', events: [{ ...ev('First'), digest: 'a'.repeat(64) }] }]),
            ]);
          }
          const fallbacks = shared.store.stats.fallbacks;
          const outcomes = Promise.allSettled([shared.store.append(taken, [ev()], 'no_stream'), shared.store.append(joined, [ev()], 'any')]);
          // Our batch saw neither stream (not committed) and now waits on the other writer's rows.
          for (let i = 0; i < 200; i++) {
            const [row] = (
              await holder.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
              )
            ).rows;
            if (row.n > 0) break;
            await new Promise((r) => setTimeout(r, 10));
          }
          await holder.query('COMMIT');
          const [first, second] = await outcomes;
          expect(rejected(first)).to.be.instanceOf(WrongExpectedRevisionError);
          expect(fulfilled(second).nextRevision).to.equal(1);
          expect(shared.store.stats.fallbacks).to.equal(fallbacks + 1);
          expect((await shared.store.readStream(joined)).map((e) => e.type)).to.deep.equal(['First', 'Something']);
        } finally {
          await holder.end();
          await shared.close();
        }
      });

    it('never lets two concurrent requests win the same revision (default batches in flight)', async () => {
      const streams = Array.from({ length: 4 }, () => uniqueStream());
      await Promise.all(streams.map((s) => store.append(s, [ev()], 'no_stream')));
      const burst = streams.flatMap((s) => Array.from({ length: 24 }, (_, i) => ({ s, expected: Math.floor(i / 4) })));
      const outcomes = await Promise.allSettled(burst.map((b) => store.append(b.s, [ev()], b.expected)));
      for (const s of streams) {
        const won = outcomes.filter((o, i) => burst[i]?.s === s && o.status === 'fulfilled').map((o) => fulfilled(o).nextRevision);
        expect(new Set(won).size).to.equal(won.length, 'one winner per revision at most');
        expect(await store.readStream(s)).to.have.length(1 + won.length);
      }
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(WrongExpectedRevisionError);
      await expectChainsVerify(store, streams);
    });

    it('treats duplicate ids within a burst idempotently, and mixed ids as a conflict', async () => {
      const sequential = await target.open({ maxInFlight: 1 });
      try {
        const s = sequential.store;
        const stream = uniqueStream();
        const stored = ev('Stored');
        await s.append(stream, [stored], 'no_stream');
        const events = [ev('A'), ev('B')];
        const other = uniqueStream();
        const failingFirst = uniqueStream();
        const retried = [ev('R')];
        const burst = [
          // Queued first, with a wrong revision: fails and stores nothing, so the same ids after it append.
          s.append(failingFirst, retried, 5),
          s.append(stream, events, 0),
          s.append(other, [ev('Other')], 'no_stream'),
          s.append(stream, events, 0),
          s.append(stream, events, 'any'),
          s.append(failingFirst, retried, 'no_stream'),
          s.append(failingFirst, retried, 'no_stream'),
          s.append(stream, [stored, ev('New')], 'any'),
          s.append(stream, [stored], 'any'),
        ];
        const outcomes = await Promise.allSettled(burst);
        expect(rejected(outcomes[0])).to.be.instanceOf(WrongExpectedRevisionError);
        const first = fulfilled(outcomes[1]);
        expect(first.nextRevision).to.equal(2);
        expect(fulfilled(outcomes[3])).to.deep.equal(first);
        expect(fulfilled(outcomes[4])).to.deep.equal(first);
        expect(fulfilled(outcomes[2]).nextRevision).to.equal(0);
        const retry = fulfilled(outcomes[5]);
        expect(retry.nextRevision).to.equal(0);
        expect(fulfilled(outcomes[6])).to.deep.equal(retry);
        expect(rejected(outcomes[7])).to.be.instanceOf(EventIdConflictError);
        expect(fulfilled(outcomes[8]).nextRevision).to.equal(0);
        expect((await s.readStream(stream)).map((e) => e.type)).to.deep.equal(['Stored', 'A', 'B']);
        expect((await s.readStream(failingFirst)).map((e) => e.type)).to.deep.equal(['R']);
        // The stored answer of a retry in a later batch is the same.
        expect(await s.append(stream, events, 0)).to.deep.equal(first);
        expect(s.stats.largestBatch).to.be.greaterThan(1);
        // Settled inside the batches, not by falling back to one request at a time.
        expect(s.stats.fallbacks).to.equal(0);
        await expectChainsVerify(s, [stream, other, failingFirst]);
      } finally {
        await sequential.close();
      }
    });

    it('looks ids up only for a request whose revision fails, or after a stored id stopped the batch', async () => {
      const sequential = await target.open({ maxInFlight: 1 });
      try {
        const s = sequential.store;
        const stream = uniqueStream();
        const events = [ev('A'), ev('B')];
        const stored = await s.append(stream, events, 'no_stream');
        // The retry at its revision fails that check inside the batch, looks its ids up there and
        // gets the stored answer: no second try.
        expect(await s.append(stream, events, 'no_stream')).to.deep.equal(stored);
        expect(s.stats.probedAgain).to.equal(0);
        // At any revision nothing fails before the INSERT meets the stored ids: the batch goes once
        // more, ids looked up first, and answers the same.
        expect(await s.append(stream, events, 'any')).to.deep.equal(stored);
        expect(s.stats.probedAgain).to.equal(1);
        expect(s.stats.fallbacks).to.equal(0);
        // A wrong revision with new ids is still a plain conflict.
        const error = await s.append(stream, [ev('C')], 0).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect((await s.readStream(stream)).map((e) => e.type)).to.deep.equal(['A', 'B']);
      } finally {
        await sequential.close();
      }
    });

    it('confines a malformed request to itself: the batch falls back to one request at a time', async () => {
      const sequential = await target.open({ maxInFlight: 1 });
      try {
        const s = sequential.store;
        const streams = Array.from({ length: 6 }, () => uniqueStream());
        const bad = uniqueStream();
        const outcomes = await Promise.allSettled([
          s.append(streams[0] as string, [ev()], 'no_stream'),
          s.append(streams[1] as string, [ev()], 'no_stream'),
          s.append(bad, [{ ...ev(), id: 'not-a-uuid' }], 'no_stream'),
          ...streams.slice(2).map((stream) => s.append(stream, [ev()], 'no_stream')),
        ]);
        expect(s.stats.fallbacks).to.equal(1);
        expect(outcomes[2]?.status).to.equal('rejected');
        for (const [i, o] of outcomes.entries()) if (i !== 2) expect(fulfilled(o).nextRevision).to.equal(0);
        expect(await s.readStream(bad)).to.have.length(0);
        await expectChainsVerify(s, streams);
      } finally {
        await sequential.close();
      }
    });

    it('keeps every chain intact under a long concurrent mix of appends', async () => {
      const streams = Array.from({ length: 8 }, () => uniqueStream());
      const revisions = new Map<string, number>();
      await Promise.all(
        Array.from({ length: 16 }, async (_, w) => {
          for (let i = 0; i < 15; i++) {
            const stream = streams[(w + i) % streams.length] as string;
            const events = Array.from({ length: 1 + ((w + i) % 3) }, () => ev('Mix', { w, i }));
            try {
              const expected = i % 4 === 0 ? 'any' : (revisions.get(stream) ?? 'no_stream');
              const r = await store.append(stream, events, expected);
              revisions.set(stream, Math.max(revisions.get(stream) ?? -1, r.nextRevision));
            } catch (error) {
              expect(error).to.be.instanceOf(WrongExpectedRevisionError);
              revisions.set(stream, (error as WrongExpectedRevisionError).actual);
            }
          }
        }),
      );
      await expectChainsVerify(store, streams);
      const all = await store.readAll({ filter: { streamPrefixes: streams }, maxCount: 10_000 });
      const total = (await Promise.all(streams.map((s) => store.readStream(s)))).reduce((n, events) => n + events.length, 0);
      expect(all).to.have.length(total);
    });

    if (target.name === 'postgres server') {
      it('tries the batch again, ids looked up, when another transaction stores one of the ids first (23505)', async () => {
        const sequential = await target.open({ maxInFlight: 1 });
        const client = new pg.Client({ connectionString: sequential.url });
        try {
          const s = sequential.store;
          const raced = ev('Raced');
          const elsewhere = uniqueStream();
          // Another writer (another node, say) appends the id to another stream and has not committed.
          await client.connect();
          await client.query('BEGIN');
          await client.query('SELECT * FROM es_append($1::jsonb)', [
            JSON.stringify([
              {
                stream: elsewhere,
                expected: 'any',
                events: [{ ...raced, metadata: raced.metadata, digest: 'f'.repeat(64) }],
              },
            ]),
          ]);
          const first = s.append(uniqueStream(), [ev()], 'no_stream');
          // These two queue behind `first` and leave together; the batch's first try does not look ids
          // up (and could not see the uncommitted one), so its INSERT waits on the unique index, then
          // fails when the other commits. The batch goes again with its ids looked up: the racing
          // request finds the id stored elsewhere, the bystander goes through.
          const racing = s.append(uniqueStream(), [raced], 'no_stream');
          const innocent = uniqueStream();
          const bystander = s.append(innocent, [ev()], 'no_stream');
          await new Promise((r) => setTimeout(r, 300));
          await client.query('COMMIT');
          const outcomes = await Promise.allSettled([first, racing, bystander]);
          expect(outcomes[0]?.status).to.equal('fulfilled');
          expect(rejected(outcomes[1])).to.be.instanceOf(EventIdConflictError);
          expect(fulfilled(outcomes[2]).nextRevision).to.equal(0);
          expect(s.stats.probedAgain).to.equal(1);
          expect(s.stats.fallbacks).to.equal(0);
          expect(await s.readStream(innocent)).to.have.length(1);
        } finally {
          await client.end().catch(() => {});
          await sequential.close();
        }
      });
    }
  });
}
