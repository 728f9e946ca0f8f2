import { expect } from 'chai';
import { comparePositions } from '../../src/eventstore/port';
import { createPartner, lastWrittenPosition, startTestApp, stepReactorsUntil } from '../support/app';
import { customer, fund } from '../support/ledger';
import { Receiver } from './support';

describe('the notifications outbox while no partner listens', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  const receiver = new Receiver();

  before(async () => {
    app = await startTestApp();
    await receiver.start();
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  const checkpoint = async () =>
    (await app.tally.sql.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = 'outbox'`))[0]?.position ?? '';
  const deliveries = async () =>
    app.tally.sql
      .query<{ type: string; body: string }>(`SELECT type, body FROM webhook_deliveries ORDER BY sequence`)
      .then((rows) => rows.map((r) => [r.type, (JSON.parse(r.body) as { data: { uuid: string } }).data.uuid]));

  it('moves past the events before the first endpoint, then notifies every event after it, in one pass over the log', async () => {
    await app.tally.reactors.stop();
    const partner = await createPartner(app.http, 'Late listener');
    const who = await customer(app.http, partner);
    const before = await fund(app.http, partner, who, '2');
    const put = await app.http
      .put('/api/v1/partner/webhooks')
      .set(partner.headers)
      .send({ url: receiver.url, events: ['deposit.completed'] });
    expect(put.status).to.equal(200);
    const afterIt = await fund(app.http, partner, who, '3');
    const head = await lastWrittenPosition(app);

    // Stepped by hand: the first steps stop at the endpoint's configuration, the next read from it.
    await stepReactorsUntil(app, async () => comparePositions(await checkpoint(), head) >= 0);
    expect(comparePositions(await checkpoint(), head)).to.be.at.least(0);
    const made = await deliveries();
    expect(made).to.deep.equal([['deposit.completed', afterIt]]);
    expect(made.map(([, uuid]) => uuid)).not.to.include(before);
  });

  it('commits nothing once another node holds the lease, though this node renews its own only every few seconds', async () => {
    const outbox = app.tally.reactors;
    await outbox.stop();
    const partner = await createPartner(app.http, 'Taken over');
    const who = await customer(app.http, partner);
    await fund(app.http, partner, who, '1');
    // This node holds the lease (and remembers it), with events to take.
    expect(await outbox.step()).to.equal(true);
    await fund(app.http, partner, who, '2');
    const before = await checkpoint();
    await app.tally.sql.query(`UPDATE projection_checkpoints SET owner = 'another-node', lease_until = now() + interval '1 minute' WHERE name = 'outbox'`);
    await outbox.step();
    expect(await checkpoint()).to.equal(before);
    // Told at its commit, it asks for the lease again, and does not get it.
    expect(await outbox.step()).to.equal(false);
    expect(await checkpoint()).to.equal(before);
  });

  it('goes on from the checkpoint it kept in a table of its own before it was a reactor, once (a node upgraded over an existing database)', async () => {
    const { sql } = app.tally;
    await app.tally.reactors.stop();
    const partner = await createPartner(app.http, 'Upgraded');
    const who = await customer(app.http, partner);
    await fund(app.http, partner, who, '1');
    const old = await app.tally.store.headPosition();
    // The database as the release before left it: the outbox's checkpoint in its own table, none among the projections'.
    await sql.query(`CREATE TABLE webhook_outbox_checkpoint (name text PRIMARY KEY, position text NOT NULL DEFAULT '', owner text, lease_until timestamptz)`);
    try {
      await sql.query(`INSERT INTO webhook_outbox_checkpoint (name, position) VALUES ('outbox', $1)`, [old]);
      await sql.query(`DELETE FROM projection_checkpoints WHERE name = 'outbox'`);
      await app.tally.reactors.prepare();
      expect(await checkpoint()).to.equal(old);
      // Carried over once: the old table is not read again.
      await sql.query(`UPDATE webhook_outbox_checkpoint SET position = ''`);
      await app.tally.reactors.prepare();
      expect(await checkpoint()).to.equal(old);
    } finally {
      await sql.query(`DROP TABLE webhook_outbox_checkpoint`);
    }
  });
});
