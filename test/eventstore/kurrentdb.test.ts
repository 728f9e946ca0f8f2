import { randomUUID } from 'node:crypto';
import { KurrentDBClient } from '@kurrent/kurrentdb-client';
import { expect } from 'chai';
import {
  decodeMetadata,
  encodeMetadata,
  formatPosition,
  KurrentDbEventStore,
  multiStreamAppendUnsupported,
  parsePosition,
} from '../../src/eventstore/kurrentdb';
import { comparePositions, type EventMetadata, normalizeExpected } from '../../src/eventstore/port';
import { dockerAnswer, startKurrentDbContainer } from '../support/containers';
import { eventStoreConformance } from './conformance';

interface Server {
  url(): Promise<string>;
  stop(): Promise<void>;
}

/** A server named by KURRENTDB_URL, else a throwaway container where Docker runs, else the reason there is none. */
function chooseServer(): Server | string {
  const url = process.env.KURRENTDB_URL;
  if (url) return { url: async () => url, stop: async () => {} };
  const docker = dockerAnswer();
  if (!docker.reachable) return `KURRENTDB_URL is not set and no Docker engine is reachable (${docker.reason})`;
  let started: ReturnType<typeof startKurrentDbContainer> | undefined;
  return {
    async url() {
      started ??= startKurrentDbContainer();
      return (await started).connectionString;
    },
    async stop() {
      if (started) await (await started).stop();
    },
  };
}

const server = chooseServer();
if (typeof server === 'string') {
  // Not a skipped test: the suite is simply not registered, and the run says so once.
  console.log(`KurrentDB conformance suite skipped: ${server}`);
} else {
  describe('KurrentDB event store', () => {
    before(async function () {
      this.timeout(300_000); // the first run pulls the image
      await server.url();
    });
    after(() => server.stop());
    // One server log is shared by every store opened here; the suite's streams are uniquely prefixed.
    eventStoreConformance('kurrentdb', { open: async () => KurrentDbEventStore.connect(await server.url()) });
  });
}

describe('KurrentDB adapter encodings (no server needed)', () => {
  it('reads an expected revision of -1 as no_stream whether a number or a bigint (the client speaks bigint)', () => {
    expect(normalizeExpected(-1n)).to.equal('no_stream');
    expect(normalizeExpected(-1)).to.equal('no_stream');
    expect(normalizeExpected(5n)).to.equal(5);
    expect(() => normalizeExpected(-2n)).to.throw('Invalid expected revision -2');
  });

  it('orders positions by commit then prepare position, as the log does', () => {
    const positions = [
      { commit: 9n, prepare: 9n },
      { commit: 10n, prepare: 0n },
      { commit: 10n, prepare: 11n },
      { commit: 2n ** 64n - 1n, prepare: 2n ** 64n - 1n },
    ].map(formatPosition);
    for (let i = 1; i < positions.length; i++) expect(comparePositions(positions[i - 1] ?? '', positions[i] ?? '')).to.equal(-1);
    expect(parsePosition(positions[2] ?? '')).to.deep.equal({ commit: 10n, prepare: 11n });
    expect(() => parsePosition('12:34')).to.throw('Invalid position');
  });

  it('gives back the appended metadata and its hash from either encoding, ignoring keys the server adds', () => {
    const metadata: EventMetadata = { correlationId: randomUUID(), actor: { kind: 'user', id: 'u1' }, attempt: 2 };
    const serverKeys = { '$schema.name': 'Deposited', '$schema.format': 'Json', '$record.timestamp': new Date().toISOString() };
    const plain = encodeMetadata(metadata, 'h1', false);
    expect(plain).to.include({ correlationId: metadata.correlationId, tallyHash: 'h1' });
    expect(decodeMetadata({ ...plain, ...serverKeys })).to.deep.equal({ metadata, hash: 'h1' });
    const packed = encodeMetadata(metadata, 'h2', true);
    expect(Object.values(packed).every((v) => typeof v === 'string')).to.equal(true);
    expect(decodeMetadata({ ...packed, ...serverKeys })).to.deep.equal({ metadata, hash: 'h2' });
  });

  it('packs metadata whose keys would collide with the server or with its own keys', () => {
    const metadata: EventMetadata = { $custom: 'x', tallyHash: 'not ours' };
    expect(decodeMetadata(encodeMetadata(metadata, 'h', false))).to.deep.equal({ metadata, hash: 'h' });
  });

  it('refuses an atomic append to several streams when the server has no multi-stream append', async () => {
    const client = KurrentDBClient.connectionString('kurrentdb://127.0.0.1:1?tls=false');
    const store = new KurrentDbEventStore(client, { version: '24.10.0', multiStreamAppend: false });
    const event = () => ({ id: randomUUID(), type: 'A', data: {} });
    try {
      const error = await store
        .appendMany([
          { stream: `a-${randomUUID()}`, events: [event()], expectedRevision: 'no_stream' },
          { stream: `b-${randomUUID()}`, events: [event()], expectedRevision: 'no_stream' },
        ])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((error as Error | undefined)?.message).to.equal(multiStreamAppendUnsupported('24.10.0'));
    } finally {
      await client.dispose();
    }
  });
});
