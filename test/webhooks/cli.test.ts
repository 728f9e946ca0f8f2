import { expect } from 'chai';
import { listDeliveries } from '../../src/cli/webhooks';
import { createPartner, startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';
import { capture, cliConfig } from '../cli/support';
import { Receiver } from './support';

describe('tally webhooks deliveries', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  const receiver = new Receiver();

  before(async () => {
    app = await startTestApp();
    app.tally.notifications.dispatcher.options.pollMs = 50;
    await receiver.start();
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  it("lists a partner's deliveries with their status and last attempt, and filters by status", async () => {
    const acme = await createPartner(app.http, 'Acme');
    await app.http
      .put('/api/v1/partner/webhooks')
      .set(acme.headers)
      .send({ url: receiver.url, events: ['deposit.completed'] });
    const deposit = await fund(app.http, acme, await customer(app.http, acme), '4');
    const [got] = await receiver.waitFor((all) => all.length === 1);
    await app.tally.notifications.dispatcher.settled();
    const config = cliConfig({ databaseUrl: app.config.databaseUrl });
    const io = capture();
    const items = await listDeliveries(config, { partner: acme.id }, io);
    expect(items.map((d) => d.id)).to.deep.equal([got?.body.id]);
    expect(got?.body.data.uuid).to.equal(deposit);
    expect(io.lines[0]).to.match(/^ID\s+TYPE\s+SEQUENCE\s+STATUS\s+ATTEMPTS\s+LAST ATTEMPT\s+NEXT ATTEMPT$/);
    expect(io.lines[1]).to.contain(got?.body.id).and.to.contain('deposit.completed').and.to.contain('succeeded').and.to.contain(' 200 ');
    const none = capture();
    expect(await listDeliveries(config, { partner: acme.id, status: 'failed' }, none)).to.deep.equal([]);
    expect(none.lines).to.have.length(1);
  });

  it('refuses a partner id that is not one, and an unknown status', async () => {
    const config = cliConfig({ databaseUrl: app.config.databaseUrl });
    let error: unknown;
    await listDeliveries(config, { partner: 'acme' }, capture()).catch((e) => {
      error = e;
    });
    expect(String(error)).to.contain('is not a partner id');
    error = undefined;
    await listDeliveries(config, { partner: '00000000-0000-4000-8000-000000000000', status: 'lost' }, capture()).catch((e) => {
      error = e;
    });
    expect(String(error)).to.contain('--status must be one of pending, succeeded, failed');
  });
});
