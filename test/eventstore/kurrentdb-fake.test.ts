import { randomUUID } from 'node:crypto';
import * as kdb from '@kurrent/kurrentdb-client';
import { expect } from 'chai';
import { verifyChain } from '../../src/eventstore/hash';
import { type AppendLimits, KurrentDbEventStore, type KurrentClientWithFeatures } from '../../src/eventstore/kurrentdb';
import { type NewEvent, StoreUnavailableError, WrongExpectedRevisionError } from '../../src/eventstore/port';
import { eventStoreConformance } from './conformance';
import { FakeKurrentServer } from './fake-kurrentdb';

/** Short limits, so that the waits these tests provoke stay well under a second. */
const LIMITS: AppendLimits = { appendBudgetMs: 5_000, appendReplyTimeoutMs: 300 };
/** The fake server's WriteTimeoutMs (the real one's is 2 s). */
const WRITE_TIMEOUT_MS = 200;

const ev = (type = 'Something'): NewEvent => ({ id: randomUUID(), type, data: { n: 1 }, metadata: { correlationId: randomUUID() } });
const stream = () => `fake-${randomUUID()}`;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Two processes' stores on one server: what one process alone never does to the server, two can. */
async function twoNodes(server: FakeKurrentServer): Promise<[KurrentDbEventStore, KurrentDbEventStore]> {
  return [await KurrentDbEventStore.open(server.client(), LIMITS), await KurrentDbEventStore.open(server.client(), LIMITS)];
}

describe('KurrentDB adapter against a fake 25.1 server', () => {
  // The suite the real server runs, on a server that indexes each write a little after writing it.
  eventStoreConformance('kurrentdb (fake server)', {
    open: async () => KurrentDbEventStore.open(new FakeKurrentServer({ indexLagMs: 2, writeTimeoutMs: WRITE_TIMEOUT_MS }).client(), LIMITS),
  });

  describe('retries racing their original (the server drops one unanswered: IdempotentNotReady)', () => {
    it('answers an append and its identical retry from another node with one result, after the dropped one times out', async () => {
      const server = new FakeKurrentServer({ indexLagMs: 50, writeTimeoutMs: WRITE_TIMEOUT_MS });
      const [a, b] = await twoNodes(server);
      const s = stream();
      const events = [ev('A'), ev('B')];
      const [first, retry] = await Promise.all([a.append(s, events, 'any'), b.append(s, events, 'any')]);
      expect(retry).to.deep.equal(first);
      expect(server.writes.map((w) => w.outcome)).to.include('not_ready');
      expect(await a.readStream(s)).to.have.length(2);
    });

    it('does the same for an atomic append to several streams (the server answers internal, not a timeout)', async () => {
      const server = new FakeKurrentServer({ indexLagMs: 50, writeTimeoutMs: WRITE_TIMEOUT_MS });
      const [a, b] = await twoNodes(server);
      const appends = [
        { stream: stream(), events: [ev('A')], expectedRevision: 'no_stream' as const },
        { stream: stream(), events: [ev('B')], expectedRevision: 'any' as const },
      ];
      const [first, retry] = await Promise.all([a.appendMany(appends), b.appendMany(appends)]);
      expect(retry).to.deep.equal(first);
      expect(server.writes.filter((w) => w.kind === 'multi').map((w) => w.outcome)).to.include('not_ready');
    });

    it('never sends the same ids twice at once from one process', async () => {
      const server = new FakeKurrentServer({ indexLagMs: 20, writeTimeoutMs: WRITE_TIMEOUT_MS });
      const store = await KurrentDbEventStore.open(server.client(), LIMITS);
      const s = stream();
      const events = [ev('A')];
      const results = await Promise.all(Array.from({ length: 5 }, () => store.append(s, events, 'any')));
      for (const r of results) expect(r).to.deep.equal(results[0]);
      expect(server.writes.map((w) => w.outcome)).to.deep.equal(['ok']);
    });

    it('answers StoreUnavailableError once its time budget is spent on outcomes it cannot learn', async () => {
      const server = new FakeKurrentServer();
      const client = server.client();
      const failing: KurrentClientWithFeatures = { ...client, appendToStream: async () => Promise.reject(new kdb.DeadlineExceededError()) };
      const store = new KurrentDbEventStore(failing, { version: '25.1.0', multiStreamAppend: true }, { appendBudgetMs: 300, appendReplyTimeoutMs: 100 });
      const started = Date.now();
      expect(await rejection(store.append(stream(), [ev()], 'no_stream'))).to.be.instanceOf(StoreUnavailableError);
      expect(Date.now() - started).to.be.below(2_000);
    });
  });

  describe('a multi-stream outcome mixing an idempotent stream with a conflict (the server answers internal)', () => {
    it('plans again and refuses the conflicting stream for its revision', async () => {
      const server = new FakeKurrentServer();
      const [a, b] = await twoNodes(server);
      const first = { stream: stream(), events: [ev('A')], expectedRevision: 'no_stream' as const };
      const second = { stream: stream(), events: [ev('B')], expectedRevision: 'no_stream' as const };
      // Between this append's plan and its write, another node writes the first stream's very events
      // and something else to the second.
      server.beforeNextSession = async () => {
        await b.append(first.stream, first.events, 'no_stream');
        await b.append(second.stream, [ev('Other')], 'no_stream');
      };
      const error = await rejection(a.appendMany([first, second]));
      expect(server.writes.filter((w) => w.kind === 'multi').map((w) => w.outcome)).to.deep.equal(['internal']);
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect((error as WrongExpectedRevisionError).stream).to.equal(second.stream);
    });
  });

  describe("'any' appends to a busy stream", () => {
    it("queues one process's appends per stream: none conflicts at the server", async () => {
      const server = new FakeKurrentServer({ indexLagMs: 5 });
      const store = await KurrentDbEventStore.open(server.client(), LIMITS);
      const s = stream();
      await Promise.all(Array.from({ length: 20 }, () => store.append(s, [ev()], 'any')));
      expect(server.writes.filter((w) => w.outcome !== 'ok')).to.deep.equal([]);
      expect(verifyChain(await store.readStream(s))).to.deep.equal([]);
    });

    it("appends every one of many nodes' appends, backing off through conflicts that come before the winner is readable", async () => {
      const server = new FakeKurrentServer({ indexLagMs: 20, writeTimeoutMs: WRITE_TIMEOUT_MS });
      const nodes = [...(await twoNodes(server)), ...(await twoNodes(server))];
      const s = stream();
      await Promise.all(nodes.flatMap((node) => Array.from({ length: 5 }, () => node.append(s, [ev()], 'any'))));
      expect(server.writes.map((w) => w.outcome)).to.include('wrong');
      const stored = await nodes[0]?.readStream(s);
      expect(stored).to.have.length(20);
      expect(verifyChain(stored ?? [])).to.deep.equal([]);
    });
  });

  describe('a server without multi-stream append', () => {
    it('is refused at start, naming the version needed, and not tried again', async () => {
      let clients = 0;
      const error = await rejection(
        KurrentDbEventStore.connect('kurrentdb://fake:2113?tls=false', {
          log: () => {},
          makeClient: () => {
            clients++;
            return new FakeKurrentServer({ serverVersion: '24.10.0', multiStreamAppend: false }).client();
          },
        }),
      );
      expect((error as Error).message).to.equal(
        "KurrentDB server 24.10.0 has no multi-stream append (the v2 streams API's AppendSession): Tally needs KurrentDB 25.1 or later",
      );
      expect(clients).to.equal(1);
    });

    it('reads what the server supports from the pinned client (the getter the adapter relies on is there)', () => {
      const getter = Object.getOwnPropertyDescriptor(kdb.KurrentDBClient.prototype, 'capabilities')?.get;
      expect(getter).to.be.a('function');
    });
  });

  describe('a cluster whose followers lag', () => {
    it('reads from the leader, so an append is verified (and decided on) with its own write in sight', async () => {
      const server = new FakeKurrentServer();
      server.followerLagWrites = 1;
      const store = await KurrentDbEventStore.open(server.client(), LIMITS);
      const s = stream();
      expect((await store.append(s, [ev()], 'no_stream')).nextRevision).to.equal(0);
      expect((await store.append(s, [ev()], 0)).nextRevision).to.equal(1);
      expect(await store.readStream(s)).to.have.length(2);
      expect(server.streamReads.filter((r) => !r.requiresLeader)).to.deep.equal([]);
    });
  });

  describe('failures that are outages', () => {
    for (const [name, error] of [
      ['a server shutting down (CancelledError)', new kdb.CancelledError()],
      ["the native reader's transport failure (UnknownError)", new kdb.UnknownError()],
    ] as const) {
      it(`answers StoreUnavailableError for ${name}`, async () => {
        const client = new FakeKurrentServer().client();
        const failing: KurrentClientWithFeatures = {
          ...client,
          // biome-ignore lint/correctness/useYield: a reader that fails before its first event
          readStream: async function* () {
            throw error;
          },
        };
        const store = new KurrentDbEventStore(failing, { version: '25.1.0', multiStreamAppend: true }, LIMITS);
        expect(await rejection(store.readStream(stream()))).to.be.instanceOf(StoreUnavailableError);
      });
    }

    it('does not wait forever for a lost reply: it reads whether the write landed and answers', async () => {
      const server = new FakeKurrentServer();
      const store = await KurrentDbEventStore.open(server.client(), LIMITS);
      const s = stream();
      server.loseReplies = 1;
      const result = await store.append(s, [ev(), ev()], 'no_stream');
      expect(result.nextRevision).to.equal(1);
      expect(await store.readStream(s)).to.have.length(2);
    });

    it('tries a server out of reach again at start, with backoff', async () => {
      const server = new FakeKurrentServer();
      const messages: string[] = [];
      let tries = 0;
      const store = await KurrentDbEventStore.connect('kurrentdb://fake:2113?tls=false', {
        log: (m) => messages.push(m),
        makeClient: () => {
          const client = server.client();
          if (++tries > 2) return client;
          return {
            ...client,
            // biome-ignore lint/correctness/useYield: a reader that fails before its first event
            readAll: async function* () {
              throw new kdb.UnavailableError();
            },
          };
        },
      });
      expect(store.server.version).to.equal('25.1.0');
      expect(messages).to.have.length(2);
      expect(messages[0]).to.match(/^KurrentDB out of reach \(try 1/);
    });

    it('gives up at start once its budget is spent', async () => {
      const error = await rejection(
        KurrentDbEventStore.connect('kurrentdb://fake:2113?tls=false', {
          log: () => {},
          connectBudgetMs: 300,
          makeClient: () => ({
            ...new FakeKurrentServer().client(),
            // biome-ignore lint/correctness/useYield: a reader that fails before its first event
            readAll: async function* () {
              throw new kdb.UnavailableError();
            },
          }),
        }),
      );
      expect(error).to.be.instanceOf(StoreUnavailableError);
    });
  });

  describe('what the multi-stream append refuses, refused before anything is sent', () => {
    it("refuses an event type outside the server's pattern and streams named alike but for case", async () => {
      const server = new FakeKurrentServer();
      const store = await KurrentDbEventStore.open(server.client(), LIMITS);
      const s = stream();
      expect(((await rejection(store.append(s, [ev('Has space')], 'any'))) as Error).message).to.match(/Event type "Has space"/);
      const caseOnly = await rejection(
        store.appendMany([
          { stream: `${s}-x`, events: [ev()], expectedRevision: 'any' },
          { stream: `${s}-X`, events: [ev()], expectedRevision: 'any' },
        ]),
      );
      expect((caseOnly as Error).message).to.match(/differ only in case/);
      expect(server.writes).to.deep.equal([]);
    });
  });
});
