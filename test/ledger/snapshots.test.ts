import { expect } from 'chai';
import { load, StateCache } from '../../src/platform/commands/commands';
import { type AccountEvent, accountDecider, accountStream, available } from '../../src/domain/ledger/account';
import type { JsonObject } from '../../src/eventstore/port';
import { createPartner, startTestApp } from '../support/app';
import { balanceOf, customer, fund } from '../support/ledger';

const codec = accountDecider.snapshot as NonNullable<typeof accountDecider.snapshot>;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('state snapshots', () => {
  it('an account state survives encoding exactly, holds and daily totals included', () => {
    const at = '2026-11-22T10:00:00.000Z';
    const events: AccountEvent[] = [
      { type: 'AccountOpened', data: { accountId: 7, userId: 'u', partnerId: 'p', asset: 'USDC', type: 'LIABILITY', at } },
      { type: 'FundsCredited', data: { accountId: 7, transactionId: 't1', amount: '123456789012345678.12345678', reason: 'deposit', at } },
      { type: 'FundsDebited', data: { accountId: 7, transactionId: 't2', amount: '0.10000000', reason: 'transfer', pending: false, at } },
      { type: 'FundsDebited', data: { accountId: 7, transactionId: 't3', amount: '0.20000000', reason: 'payout', pending: true, at } },
    ];
    const state = events.reduce(accountDecider.evolve, accountDecider.initialState());
    const decoded = codec.decode(JSON.parse(JSON.stringify(codec.encode(state))) as JsonObject);
    expect(codec.encode(decoded)).to.deep.equal(codec.encode(state));
    expect(available(decoded).toFixed()).to.equal('123456789012345677.82345678');
    expect(decoded.holds.toJSON()).to.deep.equal({ t3: '0.20000000' });
    expect(decoded.dayOutgoing.toFixed()).to.equal('0.3');
    const post = accountDecider.decide({ type: 'PostHold', transactionId: 't3', at }, decoded);
    expect(post).to.deep.equal(accountDecider.decide({ type: 'PostHold', transactionId: 't3', at }, state));
  });

  describe('over HTTP on Postgres', () => {
    let app: Awaited<ReturnType<typeof startTestApp>>;
    before(async () => {
      app = await startTestApp();
      app.tally.stateCache.snapshotEvery = 10;
    });
    after(async () => {
      await app.close();
    });

    it('takes one every N events of a stream; a load without the state in memory starts from it', async () => {
      const partner = await createPartner(app.http, 'Snap');
      const [a, b] = [await customer(app.http, partner), await customer(app.http, partner)];
      if (!a || !b) throw new Error('no customers');
      await fund(app.http, partner, a, 100);
      for (let i = 0; i < 25; i++) {
        const res = await app.http
          .post('/api/v1/transactions/transfer')
          .set(a.bearer)
          .send({ toAccountId: b.accountId, amount: '0.1', description: `t${i}` });
        expect(res.status).to.equal(201);
      }
      const stream = accountStream(a.accountId);
      // The account stream: opened at 0, 25 debits at 1..25; snapshots at 10 and 20, written in the background.
      let row: { revision: string; state: JsonObject } | undefined;
      for (let waited = 0; waited < 5_000 && row?.revision !== '20'; waited += 20) {
        [row] = await app.tally.sql.query<{ revision: string; state: JsonObject }>(
          'SELECT revision::text AS revision, state FROM state_snapshots WHERE stream_id = $1',
          [stream],
        );
        if (row?.revision !== '20') await sleep(20);
      }
      expect(row?.revision).to.equal('20');
      const all = await app.tally.store.readStream(stream);
      const upTo20 = all.slice(0, 21).reduce((s, e) => accountDecider.evolve(s, { type: e.type, data: e.data } as AccountEvent), accountDecider.initialState());
      expect(row?.state).to.deep.equal(codec.encode(upTo20));

      // A cold load (a fresh cache, as after a restart) reads only the events after the snapshot.
      const cold = new StateCache();
      cold.snapshots = app.tally.stateCache.snapshots;
      const reads: number[] = [];
      const store = app.tally.store;
      const counting = Object.create(store) as typeof store;
      counting.readStream = (s, options) => {
        reads.push(options?.fromRevision ?? 0);
        return store.readStream(s, options);
      };
      const fromSnapshot = await load(counting, stream, accountDecider, { cache: cold });
      expect(reads).to.deep.equal([21]);
      const full = await load(store, stream, accountDecider);
      expect(fromSnapshot.revision).to.equal(25);
      expect(codec.encode(fromSnapshot.state)).to.deep.equal(codec.encode(full.state));

      // A snapshot that does not decode (here: an amount that is not a decimal) is passed over.
      await app.tally.sql.query(`UPDATE state_snapshots SET state = jsonb_set(state, '{creditsPosted}', '"lots"') WHERE stream_id = $1`, [stream]);
      reads.length = 0;
      const cold2 = new StateCache();
      cold2.snapshots = app.tally.stateCache.snapshots;
      const refolded = await load(counting, stream, accountDecider, { cache: cold2 });
      expect(reads).to.deep.equal([0]);
      expect(codec.encode(refolded.state)).to.deep.equal(codec.encode(full.state));

      // The service itself, its memory emptied: the next transfer and the balance are right.
      app.tally.stateCache.clear();
      const res = await app.http.post('/api/v1/transactions/transfer').set(a.bearer).send({ toAccountId: b.accountId, amount: '0.1', description: 'after' });
      expect(res.status).to.equal(201);
      expect(await balanceOf(app.http, a)).to.deep.equal({ credits: '100.00000000', debits: '2.60000000' });
    });
  });
});
