import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';
import { documentedBodies, type Received, type Receiver, subscribedPartner, verifiesStandardWebhook, verifiesXWebhookSignature } from './support';

const CARD_TYPES = ['card.application.updated', 'card.updated', 'card.transaction.created', 'card.transaction.updated'];

describe('card notifications delivered to a real receiver', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  const receivers: Receiver[] = [];
  const key = () => ({ 'x-idempotency-key': randomUUID() });

  before(async () => {
    app = await startTestApp();
  });
  after(async () => {
    await app.close();
    for (const r of receivers) await r.close();
  });

  it('delivers each card type, signed both ways, with the data the card routes answer', async () => {
    const { partner, receiver, secret } = await subscribedPartner(app.http, 'Card partner', CARD_TYPES);
    receivers.push(receiver);
    const ada = await customer(app.http, partner);
    const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
    expect(applied.status, JSON.stringify(applied.body)).to.equal(201);
    const applicationId = applied.body.data.application.id;
    expect((await app.http.post(`/sandbox/v1/cards/applications/${applicationId}/approve`).set(partner.headers).send({})).status).to.equal(202);
    const issued = await app.http.post('/api/v1/cards').set(ada.bearer).set(key()).send({});
    expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
    const cardId = issued.body.data.id;
    expect((await app.http.post('/api/v1/cards/lock').set(ada.bearer).set(key()).send()).status).to.equal(200);
    expect((await app.http.post('/api/v1/cards/unlock').set(ada.bearer).set(key()).send()).status).to.equal(200);
    const limited = await app.http.patch('/api/v1/cards/limit').set(ada.bearer).set(key()).send({ amount: '500', frequency: 'perAuthorization' });
    expect(limited.status, JSON.stringify(limited.body)).to.equal(200);
    await fund(app.http, partner, ada, '100');
    const authorize = (amount: string) =>
      app.http
        .post(`/sandbox/v1/cards/${cardId}/authorizations`)
        .set(partner.headers)
        .send({ amount, currency: 'USD', merchantName: 'Corner Shop', merchantCategoryCode: '5411' });
    const cleared = await authorize('30');
    expect(cleared.status).to.equal(201);
    const clear = await app.http.post(`/sandbox/v1/card-transactions/${cleared.body.data.id}/clear`).set(partner.headers).send({ amount: '28.5' });
    expect(clear.status, JSON.stringify(clear.body)).to.equal(200);
    const reversed = await authorize('10');
    const reverse = await app.http.post(`/sandbox/v1/card-transactions/${reversed.body.data.id}/reverse`).set(partner.headers).send({});
    expect(reverse.status, JSON.stringify(reverse.body)).to.equal(200);
    const declined = await authorize('600');
    expect(declined.body.data.spend.status).to.equal('declined');

    // In log order: first attempts go out in it, but may arrive in another (docs/interface.md, "Notifications (webhooks)": `sequence`).
    const of = (got: Received[], type: string) => got.filter((r) => r.body.type === type).sort((a, b) => a.body.sequence - b.body.sequence);
    const all = await receiver.waitFor(
      (got) =>
        of(got, 'card.application.updated').length >= 2 &&
        of(got, 'card.updated').length >= 4 &&
        of(got, 'card.transaction.created').length >= 3 &&
        of(got, 'card.transaction.updated').length >= 2,
    );
    const check = await documentedBodies(app.http);
    for (const r of all) {
      expect(CARD_TYPES).to.include(r.body.type);
      expect(verifiesXWebhookSignature(r, secret), `X-Webhook-Signature of ${r.body.type}`).to.equal(true);
      expect(verifiesStandardWebhook(r, secret, Math.floor(Date.now() / 1000)), `Standard Webhooks signature of ${r.body.type}`).to.equal(true);
      expect(check(r), r.body.type).to.equal(null);
    }

    // The application: made pending, then approved, as GET cards/application/status shows it.
    const applications = of(all, 'card.application.updated').map((r) => r.body.data.application as { id: string; applicationStatus: string });
    expect(applications.map((a) => [a.id, a.applicationStatus])).to.deep.equal([
      [applicationId, 'pending'],
      [applicationId, 'approved'],
    ]);
    expect(applications[0]).to.deep.equal(applied.body.data.application);
    const status = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
    expect(applications[1]).to.deep.equal(status.body.data.application);

    // The card: issued active, locked, unlocked, given a limit; the last as GET cards/details shows it.
    const cards = of(all, 'card.updated').map((r) => r.body.data as { id: string; status: string; limit: { amount: number; frequency: string } });
    expect(cards.map((c) => [c.id, c.status, c.limit.frequency])).to.deep.equal([
      [cardId, 'active', 'per24HourPeriod'],
      [cardId, 'locked', 'per24HourPeriod'],
      [cardId, 'active', 'per24HourPeriod'],
      [cardId, 'active', 'perAuthorization'],
    ]);
    expect(cards[0]).to.deep.equal(issued.body.data);
    expect(cards[3]).to.deep.equal((await app.http.get('/api/v1/cards/details').set(ada.bearer)).body.data);

    // Card transactions: each created as the authorization answered it, updated as clearing and reversal answered.
    const created = of(all, 'card.transaction.created').map((r) => r.body.data);
    expect(created).to.deep.equal([cleared.body.data, reversed.body.data, declined.body.data]);
    const updated = of(all, 'card.transaction.updated').map((r) => r.body.data);
    expect(updated).to.deep.equal([clear.body.data, reverse.body.data]);
    const listed = (await app.http.get('/api/v1/cards/transactions').set(ada.bearer)).body.items as Array<{ id: string }>;
    expect(updated[0]).to.deep.equal(listed.find((t) => t.id === cleared.body.data.id));
    expect((updated[0] as { spend: { status: string; amount: number } }).spend).to.include({ status: 'completed', amount: 28.5 });
    expect((updated[1] as { spend: { status: string } }).spend.status).to.equal('reversed');
  });
});
