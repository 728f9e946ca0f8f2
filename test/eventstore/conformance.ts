import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { verifyChain } from '../../src/eventstore/hash';
import { UnstorableEventError } from '../../src/eventstore/storable';
import {
  comparePositions,
  EventIdConflictError,
  type EventStore,
  type JsonObject,
  type NewEvent,
  type RecordedEvent,
  readAllWithHead,
  WrongExpectedRevisionError,
} from '../../src/eventstore/port';

export interface ConformanceTarget {
  /** A store on an empty (or at least private) log. */
  open(): Promise<EventStore>;
  /**
   * Starts an append in a transaction that stays open until `commit` is called, for the gap test.
   * Absent where the adapter cannot interleave transactions (PGlite runs one at a time).
   */
  openTransactionAppend?(store: EventStore, stream: string, event: NewEvent): Promise<{ commit(): Promise<void> }>;
  /** The adapter gives `previousHash` on a readAll with `withPreviousHash` (an adapter may leave it to the caller). */
  givesPreviousHash?: boolean;
}

const ev = (type = 'Something', data: Record<string, string | number> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { correlationId: randomUUID(), actor: { kind: 'system', id: 'test' } },
});

/** Every store has its own log, but tests also prefix their streams so they never see each other. */
const uniqueStream = (category = 'test') => `${category}-${randomUUID()}`;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

export function eventStoreConformance(name: string, target: ConformanceTarget): void {
  describe(`event store conformance: ${name}`, () => {
    let store: EventStore;
    before(async () => {
      store = await target.open();
    });
    after(async () => {
      await store.close();
    });

    describe('what no store can hold', () => {
      it('refuses, before writing anything, an append whose text has U+0000, a lone surrogate or a control character', async () => {
        const stream = uniqueStream();
        const head = await store.headPosition();
        for (const data of [{ note: 'a\u0000b' }, { note: 'x\ud800' }, { 'key\u0001': 'v' }] as JsonObject[]) {
          const error = await rejection(
            store.appendMany([
              { stream: uniqueStream(), events: [ev('Fine')], expectedRevision: 'any' },
              { stream, events: [{ ...ev('Bad'), data }], expectedRevision: 'any' },
            ]),
          );
          expect(error).to.be.instanceOf(UnstorableEventError);
        }
        expect(await store.headPosition()).to.equal(head);
        expect(await store.readStream(stream)).to.have.length(0);
      });
    });

    describe('append with an expected revision', () => {
      it('creates a stream with no_stream and numbers its events from revision 0', async () => {
        const stream = uniqueStream();
        const result = await store.append(stream, [ev('A'), ev('B')], 'no_stream');
        expect(result.nextRevision).to.equal(1);
        const read = await store.readStream(stream);
        expect(read.map((e) => [e.revision, e.type])).to.deep.equal([
          [0, 'A'],
          [1, 'B'],
        ]);
        expect(read[1]?.position).to.equal(result.position);
      });

      it('rejects no_stream when the stream exists, and writes nothing', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev()], 'no_stream');
        const error = await rejection(store.append(stream, [ev()], 'no_stream'));
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect((error as WrongExpectedRevisionError).actual).to.equal(0);
        expect(await store.readStream(stream)).to.have.length(1);
      });

      it('takes -1, as a number or a bigint, for no_stream', async () => {
        const stream = uniqueStream();
        expect((await store.append(stream, [ev()], -1n)).nextRevision).to.equal(0);
        expect(await rejection(store.append(stream, [ev()], -1n))).to.be.instanceOf(WrongExpectedRevisionError);
        expect(await rejection(store.append(stream, [ev()], -1))).to.be.instanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(stream)).to.have.length(1);
      });

      it('rejects stream_exists on a missing stream', async () => {
        const stream = uniqueStream();
        expect(await rejection(store.append(stream, [ev()], 'stream_exists'))).to.be.instanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(stream)).to.have.length(0);
        await store.append(stream, [ev()], 'no_stream');
        expect((await store.append(stream, [ev()], 'stream_exists')).nextRevision).to.equal(1);
      });

      it('appends at the exact revision and rejects a stale one', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev(), ev()], 'no_stream');
        expect((await store.append(stream, [ev()], 1)).nextRevision).to.equal(2);
        const error = await rejection(store.append(stream, [ev()], 1));
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect((error as WrongExpectedRevisionError).actual).to.equal(2);
      });

      it('appends anywhere with any', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev()], 'any');
        expect((await store.append(stream, [ev()], 'any')).nextRevision).to.equal(1);
      });

      it('lets exactly one of many concurrent writers at the same revision win', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev()], 'no_stream');
        const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => store.append(stream, [ev()], 0)));
        expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(1);
        for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(stream)).to.have.length(2);
      });

      it('gives each of many concurrent appends its own outcome', async () => {
        const existing = Array.from({ length: 12 }, () => uniqueStream());
        await Promise.all(existing.map((s) => store.append(s, [ev()], 'no_stream')));
        const created = Array.from({ length: 4 }, () => uniqueStream());
        const missing = Array.from({ length: 4 }, () => uniqueStream());
        const outcomes = await Promise.allSettled([
          ...existing.map((s, i) => store.append(s, [ev('Next')], i % 3 === 0 ? 5 : 0)),
          ...created.map((s) => store.append(s, [ev('New')], 'no_stream')),
          ...missing.map((s) => store.append(s, [ev('Never')], 'stream_exists')),
        ]);
        for (const [i, s] of existing.entries()) {
          const o = outcomes[i];
          if (i % 3 === 0) {
            expect(o?.status === 'rejected' && o.reason).to.be.instanceOf(WrongExpectedRevisionError);
            expect(await store.readStream(s)).to.have.length(1);
          } else {
            expect(o?.status === 'fulfilled' && o.value.nextRevision).to.equal(1);
            expect(await store.readStream(s)).to.have.length(2);
          }
        }
        for (const [i, s] of created.entries()) {
          expect(outcomes[existing.length + i]?.status).to.equal('fulfilled');
          expect((await store.append(s, [ev()], 0)).nextRevision).to.equal(1);
        }
        for (const [i, s] of missing.entries()) {
          const o = outcomes[existing.length + created.length + i];
          expect(o?.status === 'rejected' && o.reason).to.be.instanceOf(WrongExpectedRevisionError);
          // The failed append did not create the stream.
          expect(await store.readStream(s)).to.have.length(0);
          expect((await store.append(s, [ev()], 'no_stream')).nextRevision).to.equal(0);
        }
      });
    });

    describe('idempotency by event id', () => {
      it('answers a retried append with the first result and stores nothing twice', async () => {
        const stream = uniqueStream();
        const events = [ev('A'), ev('B')];
        const first = await store.append(stream, events, 'no_stream');
        const retry = await store.append(stream, events, 'no_stream');
        expect(retry).to.deep.equal(first);
        expect(await store.readStream(stream)).to.have.length(2);
      });

      it('treats concurrent identical retries as one append', async () => {
        const stream = uniqueStream();
        const events = [ev('A')];
        const results = await Promise.all(Array.from({ length: 5 }, () => store.append(stream, events, 'any')));
        for (const r of results) expect(r).to.deep.equal(results[0]);
        expect(await store.readStream(stream)).to.have.length(1);
      });

      it('rejects an append that mixes stored and new event ids', async () => {
        const stream = uniqueStream();
        const stored = ev('A');
        await store.append(stream, [stored], 'no_stream');
        expect(await rejection(store.append(stream, [stored, ev('B')], 'any'))).to.be.instanceOf(EventIdConflictError);
        expect(await store.readStream(stream)).to.have.length(1);
      });

      it('recognizes a retry at any or stream_exists while up to 64 events followed it, however many events it has', async () => {
        const stream = uniqueStream();
        const many = Array.from({ length: 70 }, () => ev('Many'));
        const first = await store.append(stream, many, 'any');
        expect(await store.append(stream, many, 'any')).to.deep.equal(first);
        const later = [ev('Later')];
        const laterFirst = await store.append(stream, later, 'stream_exists');
        await store.append(
          stream,
          Array.from({ length: 64 }, () => ev('After')),
          'any',
        );
        expect(await store.append(stream, later, 'stream_exists')).to.deep.equal(laterFirst);
        expect(await store.append(stream, later, 'any')).to.deep.equal(laterFirst);
        expect(await store.readStream(stream)).to.have.length(70 + 1 + 64);
      });

      it('refuses an append whose ids are stored with other content, at its revision or at any', async () => {
        const stream = uniqueStream();
        const first = ev('A', { n: 1 });
        await store.append(stream, [first], 'no_stream');
        const other = { ...first, data: { n: 2 } };
        expect(await rejection(store.append(stream, [other], 'no_stream'))).to.be.instanceOf(EventIdConflictError);
        expect(await rejection(store.append(stream, [other], 'any'))).to.be.instanceOf(EventIdConflictError);
        expect(await rejection(store.append(stream, [{ ...first, type: 'B' }], 'any'))).to.be.instanceOf(EventIdConflictError);
        expect((await store.readStream(stream)).map((e) => e.data)).to.deep.equal([{ n: 1 }]);
      });

      it('tells the losers of a race between the same ids with other content that they were not appended', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('Start')], 'no_stream');
        const ids = [randomUUID(), randomUUID()];
        const variant = (n: number): NewEvent[] => ids.map((id) => ({ ...ev('Raced', { n }), id }));
        const outcomes = await Promise.allSettled([1, 2, 3].map((n) => store.append(stream, variant(n), 'any')));
        const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i + 1] : []));
        expect(won, 'exactly one content is appended').to.have.length(1);
        for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).to.be.instanceOf(EventIdConflictError);
        const stored = await store.readStream(stream);
        expect(stored.map((e) => e.data)).to.deep.equal([{}, { n: won[0] as number }, { n: won[0] as number }]);
      });

      it('answers concurrent retries amid other appends with the first result', async () => {
        const stream = uniqueStream();
        const events = [ev('A'), ev('B')];
        const others = Array.from({ length: 6 }, () => uniqueStream());
        const results = await Promise.all([
          ...others.map((s) => store.append(s, [ev()], 'no_stream')),
          ...Array.from({ length: 4 }, () => store.append(stream, events, 'any')),
        ]);
        const retries = results.slice(others.length);
        expect(retries[0]?.nextRevision).to.equal(1);
        for (const r of retries) expect(r).to.deep.equal(retries[0]);
        expect((await store.readStream(stream)).map((e) => e.type)).to.deep.equal(['A', 'B']);
        for (const s of others) expect(await store.readStream(s)).to.have.length(1);
      });
    });

    describe('atomic append to several streams', () => {
      it('writes every stream in one call', async () => {
        const a = uniqueStream();
        const b = uniqueStream();
        const results = await store.appendMany([
          { stream: a, events: [ev('A')], expectedRevision: 'no_stream' },
          { stream: b, events: [ev('B'), ev('B')], expectedRevision: 'no_stream' },
        ]);
        expect(results.map((r) => r.nextRevision)).to.deep.equal([0, 1]);
        expect(await store.readStream(a)).to.have.length(1);
        expect(await store.readStream(b)).to.have.length(2);
      });

      it('writes nothing at all when one stream fails its expected revision', async () => {
        const a = uniqueStream();
        const b = uniqueStream();
        await store.append(b, [ev()], 'no_stream');
        const error = await rejection(
          store.appendMany([
            { stream: a, events: [ev('A')], expectedRevision: 'no_stream' },
            { stream: b, events: [ev('B')], expectedRevision: 'no_stream' },
          ]),
        );
        expect(error).to.be.instanceOf(WrongExpectedRevisionError);
        expect((error as WrongExpectedRevisionError).stream).to.equal(b);
        expect(await store.readStream(a)).to.have.length(0);
        expect(await store.readStream(b)).to.have.length(1);
      });

      it('gives each event the position in its stream that $all gives it, and chains each stream by hash', async () => {
        const category = `multi${randomUUID().slice(0, 8)}`;
        const a = uniqueStream(category);
        const b = uniqueStream(category);
        await store.append(a, [ev('A0')], 'no_stream');
        const results = await store.appendMany([
          { stream: a, events: [ev('A1'), ev('A2')], expectedRevision: 0 },
          { stream: b, events: [ev('B0'), ev('B1'), ev('B2')], expectedRevision: 'no_stream' },
        ]);
        const fromStreams = [...(await store.readStream(a)), ...(await store.readStream(b))];
        const fromAll = await store.readAll({ filter: { streamPrefixes: [`${category}-`] } });
        expect(fromAll).to.have.length(6);
        const positionInAll = new Map(fromAll.map((e) => [e.id, e.position]));
        for (const e of fromStreams) expect(e.position, `${e.stream}@${e.revision}`).to.equal(positionInAll.get(e.id));
        expect(results.map((r) => r.position)).to.deep.equal([fromStreams[2]?.position, fromStreams[5]?.position]);
        expect(verifyChain(await store.readStream(a))).to.deep.equal([]);
        expect(verifyChain(await store.readStream(b))).to.deep.equal([]);
      });

      it('is idempotent as a whole', async () => {
        const appends = [
          { stream: uniqueStream(), events: [ev('A')], expectedRevision: 'no_stream' as const },
          { stream: uniqueStream(), events: [ev('B')], expectedRevision: 'no_stream' as const },
        ];
        const first = await store.appendMany(appends);
        expect(await store.appendMany(appends)).to.deep.equal(first);
      });
    });

    describe('reading a stream', () => {
      it('reads a range of revisions', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('0'), ev('1'), ev('2'), ev('3')], 'no_stream');
        const read = await store.readStream(stream, { fromRevision: 1, toRevision: 2 });
        expect(read.map((e) => e.type)).to.deep.equal(['1', '2']);
      });

      it('returns a long stream in revision order (numeric, not text)', async () => {
        const stream = uniqueStream();
        await store.append(
          stream,
          Array.from({ length: 12 }, (_, i) => ev(String(i))),
          'no_stream',
        );
        const read = await store.readStream(stream);
        expect(read.map((e) => e.revision)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        expect(read.map((e) => e.type)).to.deep.equal(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11']);
      });

      it('reads the stream as it was at an instant', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('before')], 'no_stream');
        const [first] = await store.readStream(stream);
        await new Promise((r) => setTimeout(r, 20));
        await store.append(stream, [ev('after')], 0);
        const read = await store.readStream(stream, { untilTime: new Date(first?.recordedAt ?? 0) });
        expect(read.map((e) => e.type)).to.deep.equal(['before']);
      });

      it('keeps data and metadata as appended', async () => {
        const stream = uniqueStream();
        const event = ev('Rich', { amount: '0.30000000', count: 3, text: 'ünïcødé "quoted"' });
        await store.append(stream, [event], 'no_stream');
        const [read] = await store.readStream(stream);
        expect(read?.id).to.equal(event.id);
        expect(read?.data).to.deep.equal(event.data);
        expect(read?.metadata).to.deep.include({ correlationId: event.metadata?.correlationId, actor: { kind: 'system', id: 'test' } });
        expect(Date.parse(read?.recordedAt ?? '')).to.be.closeTo(Date.now(), 60_000);
      });

      it('chains every event of a stream to the one before it by hash', async () => {
        const stream = uniqueStream();
        await store.append(stream, [ev('A', { n: 1 })], 'no_stream');
        await store.append(stream, [ev('B', { n: 2 }), ev('C', { n: 3 })], 0);
        const read = await store.readStream(stream);
        expect(verifyChain(read)).to.deep.equal([]);
        const tampered = read.map((e) => (e.revision === 1 ? { ...e, data: { n: 99 } } : e));
        expect(verifyChain(tampered).map((b) => b.revision)).to.deep.equal([1]);
        expect(verifyChain([read[0], read[2]] as RecordedEvent[]).length).to.be.greaterThan(0);
      });
    });

    describe('reading all streams', () => {
      it('returns events in position order, after a position, with filters', async () => {
        const category = `cat${randomUUID().slice(0, 8)}`;
        const a = uniqueStream(category);
        const b = uniqueStream(category);
        await store.append(a, [ev('X')], 'no_stream');
        await store.append(b, [ev('Y')], 'no_stream');
        await store.append(a, [ev('Y')], 0);
        const all = await store.readAll({ filter: { streamPrefixes: [`${category}-`] } });
        expect(all.map((e) => `${e.stream === a ? 'a' : 'b'}${e.type}`)).to.deep.equal(['aX', 'bY', 'aY']);
        for (let i = 1; i < all.length; i++) expect(comparePositions(all[i - 1]?.position ?? '', all[i]?.position ?? '')).to.equal(-1);
        const after = await store.readAll({ fromPosition: all[0]?.position, filter: { streamPrefixes: [`${category}-`] } });
        expect(after).to.have.length(2);
        const onlyY = await store.readAll({ filter: { streamPrefixes: [`${category}-`], eventTypes: ['Y'] } });
        expect(onlyY.map((e) => e.type)).to.deep.equal(['Y', 'Y']);
        const limited = await store.readAll({ filter: { streamPrefixes: [`${category}-`] }, maxCount: 1 });
        expect(limited).to.have.length(1);
        expect(comparePositions(await store.headPosition(), all[2]?.position ?? '')).to.be.at.least(0);
      });

      it('reads the log and its head as of one moment (readAllWithHead): the events readAll gives, the head headPosition gives', async () => {
        const category = `head${randomUUID().slice(0, 8)}`;
        const a = uniqueStream(category);
        await store.append(a, [ev('X'), ev('Y')], 'no_stream');
        await store.append(uniqueStream(category), [ev('Y')], 'no_stream');
        const options = { filter: { streamPrefixes: [`${category}-`] } };
        const both = await readAllWithHead(store, options);
        const all = await store.readAll(options);
        expect(both.events.map((e) => [e.id, e.position, e.type, e.revision])).to.deep.equal(all.map((e) => [e.id, e.position, e.type, e.revision]));
        expect(both.events.map((e) => e.data)).to.deep.equal(all.map((e) => e.data));
        expect(both.head).to.equal(await store.headPosition());
        expect(comparePositions(both.head, all[2]?.position ?? '')).to.be.at.least(0);
        const cut = await readAllWithHead(store, { ...options, maxCount: 1 });
        expect(cut.events.map((e) => e.id)).to.deep.equal([all[0]?.id]);
        expect(cut.head).to.equal(both.head);
        const none = await readAllWithHead(store, { ...options, fromPosition: all[2]?.position });
        expect(none.events).to.deep.equal([]);
        expect(none.head).to.equal(both.head);
        const onlyY = await readAllWithHead(store, { filter: { streamPrefixes: [`${category}-`], eventTypes: ['Y'] } });
        expect(onlyY.events.map((e) => e.type)).to.deep.equal(['Y', 'Y']);
      });

      it('gives each event the hash of the one before it in its stream when asked (withPreviousHash), or leaves it out', async () => {
        const category = `prev${randomUUID().slice(0, 8)}`;
        const a = uniqueStream(category);
        const b = uniqueStream(category);
        await store.append(a, [ev('X'), ev('Y')], 'no_stream');
        await store.append(b, [ev('Z')], 'no_stream');
        await store.append(a, [ev('W')], 1);
        const all = await store.readAll({ filter: { streamPrefixes: [`${category}-`] }, withPreviousHash: true });
        const before = new Map<string, string>();
        for (const e of all) {
          if (target.givesPreviousHash) expect(e.previousHash, `${e.stream}@${e.revision}`).to.equal(before.get(e.stream) ?? '');
          else if (e.previousHash !== undefined) expect(e.previousHash).to.equal(before.get(e.stream) ?? '');
          before.set(e.stream, e.hash);
        }
        expect(all.map((e) => e.type)).to.deep.equal(['X', 'Y', 'Z', 'W']);
        const plain = await store.readAll({ filter: { streamPrefixes: [`${category}-`] } });
        expect(plain.every((e) => e.previousHash === undefined)).to.equal(true);
      });

      it('gives each event its stream, revision, position, type and hash on a heads-only read (data and metadata may be left out)', async () => {
        const category = `heads${randomUUID().slice(0, 8)}`;
        const a = uniqueStream(category);
        await store.append(a, [ev('X', { n: 1 }), ev('Y', { n: 2 })], 'no_stream');
        const full = await store.readAll({ filter: { streamPrefixes: [`${category}-`] } });
        const heads = await store.readAll({ filter: { streamPrefixes: [`${category}-`] }, headsOnly: true });
        const headOf = (e: RecordedEvent) => [e.stream, e.revision, e.position, e.type, e.hash, e.id];
        expect(heads.map(headOf)).to.deep.equal(full.map(headOf));
        expect(heads.every((e) => e.hash.length === 64)).to.equal(true);
        for (const [i, e] of heads.entries()) if (Object.keys(e.data).length > 0) expect(e.data).to.deep.equal(full[i]?.data);
      });

      it('catches a subscription up, then delivers new events live', async () => {
        const category = `sub${randomUUID().slice(0, 8)}`;
        const stream = uniqueStream(category);
        await store.append(stream, [ev('old')], 'no_stream');
        const seen: string[] = [];
        let resolveSeen: () => void = () => {};
        const twoSeen = new Promise<void>((r) => {
          resolveSeen = r;
        });
        const subscription = store.subscribe({
          filter: { streamPrefixes: [`${category}-`] },
          pollIntervalMs: 50,
          async onEvents(events) {
            seen.push(...events.map((e) => e.type));
            if (seen.length >= 2) resolveSeen();
          },
        });
        try {
          await new Promise((r) => setTimeout(r, 100));
          await store.append(stream, [ev('new')], 0);
          await Promise.race([twoSeen, new Promise((_, reject) => setTimeout(() => reject(new Error('not delivered')), 5_000))]);
          expect(seen).to.deep.equal(['old', 'new']);
        } finally {
          await subscription.stop();
        }
      });
    });

    if (target.openTransactionAppend) {
      const openTransactionAppend = target.openTransactionAppend;
      describe('global order without gaps', () => {
        it('never lets a reader pass an event that commits later with a lower position', async () => {
          const category = `gap${randomUUID().slice(0, 8)}`;
          const slow = uniqueStream(category);
          const fast = uniqueStream(category);
          const filter = { streamPrefixes: [`${category}-`] };
          // The slow transaction takes its position first and stays open while the fast one commits.
          const pending = await openTransactionAppend(store, slow, ev('slow'));
          await store.append(fast, [ev('fast')], 'no_stream');
          // A reader now must not see 'fast' yet: if it did and checkpointed it, 'slow' would be skipped.
          const whileOpen = await store.readAll({ filter });
          expect(whileOpen.map((e) => e.type)).to.deep.equal([]);
          // Nor may the head pass it: a consumer moves its checkpoint up to the head of a short read.
          const withHead = await readAllWithHead(store, { filter });
          expect(withHead.events).to.deep.equal([]);
          const fastPosition = (await store.readStream(fast))[0]?.position ?? '';
          expect(comparePositions(withHead.head, fastPosition)).to.equal(-1);
          await pending.commit();
          const afterCommit = await store.readAll({ filter });
          expect(afterCommit.map((e) => e.type)).to.deep.equal(['slow', 'fast']);
          // A checkpointing reader that read before the commit resumes without losing 'slow'.
          const resumed = await store.readAll({ filter, fromPosition: whileOpen.at(-1)?.position });
          expect(resumed.map((e) => e.type)).to.deep.equal(['slow', 'fast']);
        });
      });
    }

    describe('global order under concurrent writers', () => {
      it('keeps every event when many writers interleave with a polling reader', async () => {
        const category = `gapmany${randomUUID().slice(0, 8)}`;
        const filter = { streamPrefixes: [`${category}-`] };
        const seen: string[] = [];
        let position: string | undefined;
        let writing = true;
        const reader = (async () => {
          while (writing || seen.length < 200) {
            const batch = await store.readAll({ filter, fromPosition: position, maxCount: 17 });
            for (const e of batch) seen.push(e.id);
            position = batch.at(-1)?.position ?? position;
            if (batch.length === 0) await new Promise((r) => setTimeout(r, 2));
            if (!writing && batch.length === 0 && seen.length >= 200) break;
          }
        })();
        const written: string[] = [];
        await Promise.all(
          Array.from({ length: 20 }, async () => {
            for (let i = 0; i < 10; i++) {
              const e = ev('w');
              written.push(e.id);
              await store.append(uniqueStream(category), [e], 'no_stream');
            }
          }),
        );
        writing = false;
        await Promise.race([reader, new Promise((_, reject) => setTimeout(() => reject(new Error(`reader saw ${seen.length} of 200`)), 10_000))]);
        expect([...seen].sort()).to.deep.equal([...written].sort());
      });
    });
  });
}
