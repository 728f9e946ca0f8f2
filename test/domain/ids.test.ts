import { expect } from 'chai';
import { toNewEvents } from '../../src/platform/commands/commands';
import { eventIdFor, uuidV5, uuidV7 } from '../../src/platform/ids';

/** Event ids must never drift: a command retried across a release must append the same ids. */
describe('name-based ids (golden values)', () => {
  it('computes RFC 4122 version 5 UUIDs (the RFC example: www.example.com in the DNS namespace)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).to.equal('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('derives event ids from the command, the stream and the index as it always did (UTF-8 names too)', () => {
    expect(eventIdFor('cmd-1', 'account-7', 2)).to.equal('c82dec94-eb2f-5cde-b575-7555367bb62f');
    expect(uuidV5('Zoë €')).to.equal('6474dad6-dd2f-5676-acd5-22af1ed5d95a');
  });
});

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('time-ordered ids (version 7)', () => {
  it('carry the Unix milliseconds in their first 48 bits, then random bits with the version and variant set', () => {
    const at = Date.UTC(2026, 10, 25, 12, 0, 0, 123);
    const id = uuidV7(at);
    expect(id).to.match(UUID_V7);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).to.equal(at);
    expect(uuidV7(at)).to.not.equal(id);
  });

  it('sort by the millisecond they were made in (as text, as Postgres compares uuids)', () => {
    const ids = [5, 1, 4, 2, 3].map((ms) => uuidV7(1_700_000_000_000 + ms));
    expect([...ids].sort()).to.deep.equal([1, 2, 3, 4, 5].map((ms) => ids[[5, 1, 4, 2, 3].indexOf(ms)]));
  });
});

describe("a command's event ids", () => {
  const metadata = { actor: { kind: 'system' as const, id: 'test' } };
  const events = [
    { type: 'A', data: { n: 1 } },
    { type: 'B', data: { n: 2 } },
  ];

  it('derive from a command id given by the caller, so the same command sent again appends the same ids', () => {
    const ctx = { commandId: 'payout:42', metadata };
    const ids = toNewEvents(ctx, 'account-7', events).map((e) => e.id);
    expect(ids).to.deep.equal([eventIdFor('payout:42', 'account-7', 0), eventIdFor('payout:42', 'account-7', 1)]);
    expect(toNewEvents({ ...ctx }, 'account-7', events).map((e) => e.id)).to.deep.equal(ids);
  });

  it('are random for a command without a caller key (no request can send it again), time-ordered, and distinct', () => {
    const ctx = { commandId: 'made-up', metadata, unkeyed: true };
    const first = toNewEvents(ctx, 'account-7', events).map((e) => e.id);
    const second = toNewEvents(ctx, 'account-7', events).map((e) => e.id);
    for (const id of [...first, ...second]) expect(id).to.match(UUID_V7);
    expect(new Set([...first, ...second]).size).to.equal(4);
    expect(first).to.not.include(eventIdFor('made-up', 'account-7', 0));
  });
});
