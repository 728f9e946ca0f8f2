import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { JsonObject, NewEvent } from '../../src/eventstore/port';
import { lastWrittenPosition, startTestApp } from '../support/app';
import { login } from '../support/identity';
import { PAYOUT_DESTINATION } from '../support/ledger';

/**
 * A log written by an earlier build (commit 16aeb51, before the ledger's rules moved into the domain
 * and its commands into one handler: test/ledger/fixtures/log-16aeb51.json, made over HTTP by that build)
 * stays readable: loaded into a fresh store, the read models folded from it show the balances that
 * build showed, and the commands of this build decide on its streams (a transfer at the old account
 * revision, a keyed transfer and a payout retried under their old keys).
 */
interface Fixture {
  partner: { id: string; apiKey: string; apiSecret: string };
  users: Record<'ada' | 'bob', { email: string; accountId: number }>;
  balances: Record<'ada' | 'bob', { credits: string; debits: string }>;
  events: Array<{ id: string; stream: string; revision: number; type: string; data: JsonObject; metadata: JsonObject }>;
}

describe('a log written by an earlier build', () => {
  const fixture = JSON.parse(readFileSync(path.join(__dirname, 'fixtures', 'log-16aeb51.json'), 'utf8')) as Fixture;
  let app: Awaited<ReturnType<typeof startTestApp>>;
  const partner = {
    ...fixture.partner,
    headers: { 'X-Api-Key': fixture.partner.apiKey, 'X-Api-Secret': fixture.partner.apiSecret },
  };

  before(async () => {
    app = await startTestApp();
    // Stream by stream, in log order, with the ids and metadata it was written with.
    for (const e of fixture.events) {
      const event: NewEvent = { id: e.id, type: e.type, data: e.data, metadata: e.metadata };
      await app.tally.store.appendMany([{ stream: e.stream, events: [event], expectedRevision: e.revision === 0 ? 'no_stream' : e.revision - 1 }]);
    }
    // Appended behind the API, which would have waited for its read models: the partner's key is read from one.
    expect(await app.tally.engine.waitFor(await lastWrittenPosition(app))).to.equal(true);
  });

  after(async () => {
    await app?.close();
  });

  const bearerOf = async (who: 'ada' | 'bob') => ({ Authorization: `Bearer ${(await login(app.http, partner, fixture.users[who].email)).accessToken}` });
  const balance = async (bearer: { Authorization: string }) => {
    const res = await app.http.get('/api/v1/user/accounts').set(bearer);
    return { credits: res.body.items[0].credits, debits: res.body.items[0].debits };
  };

  it('folds into the balances that build showed, and takes new commands decided on its streams', async () => {
    const [ada, bob] = [await bearerOf('ada'), await bearerOf('bob')];
    expect(await balance(ada)).to.deep.equal({ credits: fixture.balances.ada.credits, debits: fixture.balances.ada.debits });
    expect(await balance(bob)).to.deep.equal({ credits: fixture.balances.bob.credits, debits: fixture.balances.bob.debits });

    const transfer = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada)
      .send({ toAccountId: fixture.users.bob.accountId, amount: '2', description: 'after' });
    expect(transfer.status).to.equal(201);
    // The keyed transfer of the old build, sent again: its first answer, no money moved again.
    const keyed = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada)
      .set('Idempotency-Key', '0b9c7f8e-2f4a-4d51-9a43-3f0c1b2a5e61')
      .send({ toAccountId: fixture.users.bob.accountId, amount: '1', description: 'keyed' });
    expect([keyed.status, keyed.headers['idempotent-replayed']]).to.deep.equal([201, 'true']);
    // The settled payout's request again: the answer the old build gave.
    const payout = await app.http
      .post('/api/v1/user/payout')
      .set(ada)
      .send({
        transactionId: '6a1f0c1e-7d2b-4c3a-8e9f-0a1b2c3d4e5f',
        amount: 40000,
        asset: 'COP',
        provider: 'mock',
        source: { metadata: { fundingId: 'f1' } },
        destination: PAYOUT_DESTINATION,
      });
    expect([payout.status, payout.body.success, payout.headers['idempotent-replayed']]).to.deep.equal([200, true, 'true']);
    // Ada's available balance is what the old log left minus the new transfer.
    const available = (b: { credits: string; debits: string }) => Number(b.credits) - Number(b.debits);
    expect(available(await balance(ada))).to.be.closeTo(available(fixture.balances.ada) - 2, 1e-9);
    expect((await balance(bob)).credits).to.equal('15.50000000');
  });
});
