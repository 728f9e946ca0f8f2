import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';
import { type Received, verifiesStandardWebhook, verifiesXWebhookSignature } from './support';

const INBOX = '/sandbox/v1/webhook-inbox';

interface InboxItem {
  id: number;
  receivedAt: string;
  deliveryId: string;
  headers: Record<string, string | null>;
  rawBody: string;
  notification: { id: string; type: string; data: { uuid?: string } };
}

describe('the sandbox webhook inbox: a receiver a partner points its endpoint at, read back with its credentials', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  let secret: string;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Inbox Acme');
    globex = await createPartner(app.http, 'Inbox Globex');
    const put = await app.http
      .put('/api/v1/partner/webhooks')
      .set(acme.headers)
      .send({ url: `${app.url}${INBOX}`, events: ['deposit.completed'] });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    secret = put.body.data.secret;
  });
  after(async () => {
    await app.close();
  });

  const inbox = async (partner: PartnerCredentials, query = '') => {
    const res = await app.http.get(`${INBOX}${query}`).set(partner.headers);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data as { items: InboxItem[]; nextCursor: string | null };
  };

  async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** An inbox item as the receiver test helpers take it: headers and the raw body. */
  const asReceived = (item: InboxItem): Received => ({
    headers: Object.fromEntries(Object.entries(item.headers).filter(([, v]) => v !== null)) as Received['headers'],
    raw: item.rawBody,
    body: JSON.parse(item.rawBody),
  });

  it('records a deposit.completed delivered to it, signed both ways, and shows it only to the partner it was for', async () => {
    const who = await customer(app.http, acme);
    const deposit = await fund(app.http, acme, who, '12');
    const { items } = await until(
      () => inbox(acme),
      (page) => page.items.some((i) => i.notification.data.uuid === deposit),
    );
    const item = items.find((i) => i.notification.data.uuid === deposit) as InboxItem;
    expect(item.notification.type).to.equal('deposit.completed');
    expect(item.notification).to.deep.equal(JSON.parse(item.rawBody));
    expect(item.deliveryId).to.equal(item.notification.id);
    expect(verifiesStandardWebhook(asReceived(item), secret, Math.floor(Date.now() / 1000))).to.equal(true);
    expect(verifiesXWebhookSignature(asReceived(item), secret)).to.equal(true);
    expect(item.notification.data).to.deep.equal((await app.http.get(`/api/v1/transactions/${deposit}`).set(who.bearer)).body);

    // The delivery log shows the inbox's 200.
    const deliveries = await until(
      async () => (await app.http.get(`/api/v1/partner/webhooks/deliveries`).set(acme.headers)).body.data,
      (page: { items: Array<{ id: string; status: string; attempts: Array<{ httpStatus: number }> }> }) =>
        page.items.some((d) => d.id === item.deliveryId && d.status === 'succeeded'),
    );
    expect(deliveries.items.find((d) => d.id === item.deliveryId)?.attempts.map((a) => a.httpStatus)).to.deep.equal([200]);

    expect((await inbox(globex)).items).to.deep.equal([]);
    expect((await app.http.get(INBOX)).status).to.equal(401);
  });

  it('keeps nothing unsigned, badly signed, altered or stale (401), and pages newest first', async () => {
    const [kept] = (await inbox(acme)).items;
    expect(kept, 'a notification in the inbox').to.not.equal(undefined);
    const item = kept as InboxItem;
    const post = (headers: Record<string, string>, body: string) =>
      app.http
        .post(INBOX)
        .set({ 'Content-Type': 'application/json', ...headers })
        .send(body);
    const signed = { 'webhook-id': item.headers['webhook-id'] ?? '', 'webhook-timestamp': item.headers['webhook-timestamp'] ?? '' };
    const refused = [
      await post({}, item.rawBody),
      await post({ ...signed, 'webhook-signature': 'v1,AAAA' }, item.rawBody),
      await post({ ...signed, 'webhook-signature': item.headers['webhook-signature'] ?? '' }, `${item.rawBody} `),
      await post(
        { ...signed, 'webhook-timestamp': String(Number(signed['webhook-timestamp']) - 3_600), 'webhook-signature': item.headers['webhook-signature'] ?? '' },
        item.rawBody,
      ),
    ];
    for (const res of refused)
      expect([res.status, res.body]).to.deep.equal([
        401,
        { success: false, error: 'Invalid webhook signature', code: 'invalid_webhook_signature', requestId: res.body.requestId },
      ]);
    // The very delivery sent again (as a retry would be) is kept again: the inbox records what arrived.
    const again = await post({ ...signed, 'webhook-signature': item.headers['webhook-signature'] ?? '' }, item.rawBody);
    expect([again.status, again.body]).to.deep.equal([200, { success: true, received: true }]);

    const all = (await inbox(acme)).items;
    expect(all.map((i) => i.deliveryId)).to.deep.equal([item.deliveryId, item.deliveryId]);
    const first = await inbox(acme, '?limit=1');
    expect(first.items.map((i) => i.id)).to.deep.equal([all[0]?.id]);
    const second = await inbox(acme, `?limit=1&cursor=${first.nextCursor}`);
    expect(second.items.map((i) => i.id)).to.deep.equal([all[1]?.id]);
    expect(second.nextCursor).to.equal(null);
  });
});
