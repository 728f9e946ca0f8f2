import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { type CommandContext, load } from '../../src/platform/commands/commands';
import { snapshotCheck } from '../../src/cli/audit-checks';
import { cardDecider, cardStream } from '../../src/domain/cards/card';
import type { JsonObject } from '../../src/eventstore/port';
import { createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';
import { allSpends } from '../../src/domain/cards/spend-book';

type App = Awaited<ReturnType<typeof startTestApp>>;

const codec = cardDecider.snapshot as NonNullable<typeof cardDecider.snapshot>;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('card stream snapshots (app layer, real Postgres, injected clock)', function () {
  this.timeout(120_000);
  let app: App;
  let acme: PartnerCredentials;
  const ctx = (): CommandContext => ({ commandId: randomUUID(), unkeyed: true, metadata: { actor: { kind: 'partner', id: acme.id } } });
  const spending = () => app.tally.cards.spending;
  const outcome = async (cardId: string, amount: string, ms: number) => {
    spending().clock = () => iso(ms);
    const { spend } = await spending().authorize(acme.id, cardId, { amount, currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5999' }, ctx());
    return spend.declinedReason ?? spend.status;
  };

  /** A customer of acme with an active virtual card, 100 USDC and the given limit. */
  async function card(limit?: { amount: number; frequency: string }): Promise<string> {
    const who = await customer(app.http, acme);
    const user = { userId: who.id, partnerId: acme.id };
    const application = await app.tally.cards.applications.apply(user, { cardType: 'virtual', isTermsOfServiceAccepted: true, ipAddress: null }, ctx());
    await app.tally.providers.sandbox?.cards.decideApplication(application.id, 'approved');
    const cardId = (await app.tally.cards.cards.issue(user, ctx(), randomUUID())).data.id;
    if (limit) await app.tally.cards.cards.setLimit(user, limit, ctx(), randomUUID());
    await fund(app.http, acme, who, '100');
    return cardId;
  }

  before(async () => {
    app = await startTestApp();
    app.tally.stateCache.snapshotEvery = 10;
    acme = await createPartner(app.http);
  });

  after(async () => {
    spending().clock = () => new Date().toISOString();
    await app.close();
  });

  it('answers a clear or reverse of a spend settled so long ago the card no longer keeps it 409 with its status, as a recent one', async () => {
    const cardId = await card();
    spending().clock = () => iso(T0);
    const first = await spending().authorize(acme.id, cardId, { amount: '3', currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5999' }, ctx());
    spending().clock = () => iso(T0 + HOUR_MS);
    await spending().clear(acme.id, first.id, undefined, ctx());
    // An authorization 367 days later leaves the first spend out of the card's state.
    expect(await outcome(cardId, '1', T0 + 367 * DAY_MS)).to.equal('pending');
    const { state } = await load(app.tally.store, cardStream(cardId), cardDecider);
    expect(allSpends(state.spends).map((s) => s.transactionId)).to.not.include(first.id);
    expect(state.earlierSpent).to.equal('3.00000000');
    for (const action of ['clear', 'reverse'] as const) {
      const refused = await (action === 'clear' ? spending().clear(acme.id, first.id, undefined, ctx()) : spending().reverse(acme.id, first.id, ctx())).catch(
        (e) => e,
      );
      expect([refused.kind, refused.message]).to.deep.equal(['conflict', `Cannot ${action} a card transaction in status completed`]);
    }
  });

  it('decides an authorization from the card’s snapshot, reading only the events after it, and exactly at the window’s edge', async () => {
    const cardId = await card({ amount: 10, frequency: 'per24HourPeriod' });
    // The card's stream: issued (0), its limit (1), then 21 spends (2..22) filling the day's window to 10 exactly.
    expect(await outcome(cardId, '5', T0)).to.equal('pending');
    for (let i = 1; i <= 20; i++) expect(await outcome(cardId, '0.25', T0 + HOUR_MS + i)).to.equal('pending');

    const stream = cardStream(cardId);
    let row: { revision: string; state: JsonObject } | undefined;
    for (let waited = 0; waited < 5_000 && row?.revision !== '20'; waited += 20) {
      [row] = await app.tally.sql.query<{ revision: string; state: JsonObject }>(
        `SELECT revision::text AS revision, state FROM state_snapshots WHERE stream_id = $1 AND kind = $2`,
        [stream, codec.kind],
      );
      if (row?.revision !== '20') await sleep(20);
    }
    expect(row?.revision, 'a snapshot at every 10 events of the card stream').to.equal('20');
    // Written by this code, it reads back to what it was written from, and is the fold of its stream.
    const decoded = codec.decode(row?.state as JsonObject);
    expect(codec.encode(decoded)).to.deep.equal(row?.state);
    expect(allSpends(decoded.spends)).to.have.length(19);
    const { findings } = await snapshotCheck.run(app.tally);
    expect(findings.filter((f) => f.subject.includes(stream))).to.deep.equal([]);

    // The notifications' outbox folds a card event's stream from its start when the card has moved
    // since (a card.updated for the limit, say): it is past all of them before the reads are counted.
    expect(await app.tally.reactors.passed('outbox', await lastWrittenPosition(app), 10_000), 'the outbox passed the spends').to.equal(true);
    // No state in memory (a restart, another node): loads of the card stream start after its snapshot.
    app.tally.stateCache.clear();
    const store = app.tally.store;
    const readStream = store.readStream;
    const reads: number[] = [];
    store.readStream = (name, options) => {
      if (name === stream) reads.push(options?.fromRevision ?? 0);
      return readStream.call(store, name, options);
    };
    try {
      expect(await outcome(cardId, '0.01', T0 + DAY_MS - 1), 'a millisecond before the first spend leaves the window').to.equal('SPEND_LIMIT_EXCEEDED');
      expect(await outcome(cardId, '5', T0 + DAY_MS), 'when it leaves: its 5 are free again, and 10 is reached exactly').to.equal('pending');
      expect(await outcome(cardId, '0.01', T0 + DAY_MS + 1)).to.equal('SPEND_LIMIT_EXCEEDED');
    } finally {
      store.readStream = readStream;
    }
    expect(reads.length).to.be.above(0);
    expect(Math.min(...reads), 'the first event read is the one after the snapshot').to.equal(21);
  });
});
