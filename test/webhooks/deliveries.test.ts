import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';
import { Receiver } from './support';

describe('partner webhook delivery log and redelivery over HTTP', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  const receiver = new Receiver();
  const deposits: string[] = [];

  before(async () => {
    app = await startTestApp();
    // A still clock: the failed attempt's retry stays pending however long the run takes.
    const frozen = Date.now();
    Object.assign(app.tally.notifications.dispatcher.options, { pollMs: 50, now: () => frozen });
    await receiver.start();
    // The first attempt of the first notification fails; every other answer is 200.
    receiver.behaviour = () => (receiver.received.length === 1 ? 500 : 200);
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
    const put = await app.http
      .put('/api/v1/partner/webhooks')
      .set(acme.headers)
      .send({ url: receiver.url, events: ['deposit.completed'] });
    expect(put.status).to.equal(200);
    const who = await customer(app.http, acme);
    for (const amount of ['1', '2', '3']) deposits.push(await fund(app.http, acme, who, amount));
    await receiver.waitFor((got) => got.length === 3);
    await app.tally.notifications.dispatcher.settled();
  });
  after(async () => {
    await app.close();
    await receiver.close();
  });

  const list = (query = '', partner = acme) => app.http.get(`/api/v1/partner/webhooks/deliveries${query}`).set(partner.headers);

  it('lists deliveries newest first with cursor pagination', async () => {
    const first = await list('?limit=2');
    expect(first.status).to.equal(200);
    expect(first.body.success).to.equal(true);
    expect(first.body.data.items).to.have.length(2);
    expect(first.body.data.nextCursor).to.be.a('string');
    const second = await list(`?limit=2&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data.items).to.have.length(1);
    expect(second.body.data.nextCursor).to.equal(null);
    const all = [...first.body.data.items, ...second.body.data.items];
    const sequences = all.map((d: { sequence: number }) => d.sequence);
    expect(sequences).to.deep.equal([...sequences].sort((a, b) => b - a));
    expect(new Set(all.map((d: { id: string }) => d.id))).to.deep.equal(new Set(receiver.received.map((r) => r.body.id)));
    expect(Object.keys(all[0]).sort()).to.deep.equal(['attempts', 'createdAt', 'eventId', 'id', 'nextAttemptAt', 'sequence', 'status', 'type']);
  });

  it('shows every attempt with its time, HTTP status or error, and duration, and filters by status, type and event', async () => {
    const pending = await list('?status=pending');
    expect(pending.body.data.items).to.have.length(1);
    const [failedOnce] = pending.body.data.items;
    expect(failedOnce.id).to.equal(receiver.received[0]?.body.id);
    expect(failedOnce.attempts).to.have.length(1);
    expect(failedOnce.attempts[0]).to.include({ httpStatus: 500, error: null });
    expect(failedOnce.attempts[0].durationMs).to.be.a('number');
    expect(Date.parse(failedOnce.nextAttemptAt)).to.be.above(Date.parse(failedOnce.attempts[0].at));
    const succeeded = await list('?status=succeeded');
    expect(succeeded.body.data.items).to.have.length(2);
    expect(succeeded.body.data.items.every((d: { attempts: Array<{ httpStatus: number }> }) => d.attempts[0]?.httpStatus === 200)).to.equal(true);
    expect((await list('?type=deposit.completed')).body.data.items).to.have.length(3);
    expect((await list('?type=payout.updated')).body.data.items).to.have.length(0);
    const byEvent = await list(`?eventId=${failedOnce.eventId}`);
    expect(byEvent.body.data.items.map((d: { id: string }) => d.id)).to.deep.equal([failedOnce.id]);
    expect((await list('?status=lost')).status).to.equal(400);
    expect((await list('?cursor=nonsense')).body).to.include({ success: false, error: 'cursor is not valid', code: 'invalid_cursor', param: 'cursor' });
  });

  it("never shows one partner's deliveries to another", async () => {
    const other = await list('', globex);
    expect(other.status).to.equal(200);
    expect(other.body.data).to.deep.equal({ items: [], nextCursor: null });
  });

  it('reports queue depth, the oldest pending age and attempts by outcome in /metrics', async () => {
    const res = await app.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).to.equal(200);
    const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(res.text)?.[1]);
    expect(value('tally_webhook_queue_depth')).to.equal(1);
    expect(value('tally_webhook_oldest_pending_seconds')).to.be.within(0, 120);
    expect(value('tally_webhook_attempts_total{outcome="succeeded"}')).to.equal(2);
    expect(value('tally_webhook_attempts_total{outcome="http_error"}')).to.equal(1);
    expect(value('tally_webhook_attempts_total{outcome="no_answer"}')).to.equal(0);
  });

  it('redelivers on demand now, with the same id, and records the attempt', async () => {
    const [latest] = (await list('?status=succeeded&limit=1')).body.data.items;
    const res = await app.http.post(`/api/v1/partner/webhooks/deliveries/${latest.id}/redeliver`).set(acme.headers).send();
    expect(res.status).to.equal(202);
    expect(res.body.data).to.include({ id: latest.id, status: 'pending' });
    const got = await receiver.waitFor((all) => all.length === 4);
    expect(got[3]?.body.id).to.equal(latest.id);
    await app.tally.notifications.dispatcher.settled();
    const [after] = (await list(`?eventId=${latest.eventId}`)).body.data.items;
    expect(after.status).to.equal('succeeded');
    expect(after.attempts).to.have.length(2);
  });

  it("answers 404 for an unknown delivery and for another partner's", async () => {
    const [mine] = (await list('?limit=1')).body.data.items;
    for (const [partner, id] of [
      [acme, randomUUID()],
      [acme, 'not-a-uuid'],
      [globex, mine.id],
    ] as const) {
      const res = await app.http.post(`/api/v1/partner/webhooks/deliveries/${id}/redeliver`).set(partner.headers).send();
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ success: false, error: 'Delivery not found', code: 'delivery_not_found' });
    }
  });
});
