import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';
import { type Receiver, subscribedPartner } from './support';

interface EventBody {
  id: string;
  type: string;
  createdAt: string;
  sequence: number;
  data: { uuid?: string; status?: string };
}

describe('the events API: GET partner/events lists every notification made for the partner, endpoint or not', function () {
  this.timeout(60_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  /** No endpoint configured, ever. */
  let acme: PartnerCredentials;
  /** An endpoint that takes deposit.completed only. */
  let globex: { partner: PartnerCredentials; receiver: Receiver };
  const acmeDeposits: string[] = [];
  let globexDeposit = '';

  const events = (partner: PartnerCredentials, query = '') => app.http.get(`/api/v1/partner/events${query}`).set(partner.headers);
  const one = (partner: PartnerCredentials, id: string) => app.http.get(`/api/v1/partner/events/${id}`).set(partner.headers);

  /** The partner's events once `predicate` holds for them (the outbox makes them shortly after the log has the event). */
  async function eventsOnce(partner: PartnerCredentials, predicate: (items: EventBody[]) => boolean): Promise<EventBody[]> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await events(partner, '?limit=100');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const items = res.body.data.items as EventBody[];
      if (predicate(items)) return items;
      if (Date.now() > deadline) throw new Error(`events: condition not met; got ${items.map((i) => i.type).join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const deposited = (uuid: string) => (items: EventBody[]) => items.some((i) => i.type === 'deposit.completed' && i.data.uuid === uuid);

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    const who = await customer(app.http, acme);
    for (const amount of ['1', '2', '3']) acmeDeposits.push(await fund(app.http, acme, who, amount));
    globex = await subscribedPartner(app.http, 'Globex', ['deposit.completed']);
    const other = await customer(app.http, globex.partner);
    globexDeposit = await fund(app.http, globex.partner, other, '4');
    await eventsOnce(acme, (items) => acmeDeposits.every((uuid) => deposited(uuid)(items)));
    await eventsOnce(globex.partner, deposited(globexDeposit));
  });
  after(async () => {
    await app?.close();
    await globex?.receiver.close();
  });

  it('lists them without any endpoint configured, newest first, each exactly {id, type, createdAt, sequence, data}', async () => {
    const res = await events(acme);
    expect(res.status).to.equal(200);
    expect(Object.keys(res.body).sort()).to.deep.equal(['data', 'success']);
    expect(res.body.success).to.equal(true);
    expect(Object.keys(res.body.data).sort()).to.deep.equal(['items', 'nextCursor']);
    const items = res.body.data.items as EventBody[];
    for (const item of items) expect(Object.keys(item).sort()).to.deep.equal(['createdAt', 'data', 'id', 'sequence', 'type']);
    const sequences = items.map((i) => i.sequence);
    expect(sequences).to.deep.equal([...sequences].sort((a, b) => b - a));
    expect(new Set(sequences).size).to.equal(sequences.length);
    // Not only deposits: the user's activation made notifications too (every type, none subscribed to).
    expect(items.map((i) => i.type)).to.include.members(['deposit.completed', 'user.status.updated']);
    // The newest deposit first, each with its transaction as GET transactions/:id shows it, in the status it notified.
    const deposits = items.filter((i) => i.type === 'deposit.completed');
    expect(deposits.map((d) => d.data.uuid)).to.deep.equal([...acmeDeposits].reverse());
    for (const d of deposits) expect(d.data.status).to.equal('COMPLETED');
    // Nothing of another partner's.
    expect(items.map((i) => i.data.uuid)).not.to.include(globexDeposit);
  });

  it('pages with a cursor (limit, then nextCursor), every event once, and refuses a cursor it did not make (invalid_cursor)', async () => {
    const all = (await events(acme, '?limit=100')).body.data.items as EventBody[];
    expect(all.length).to.be.at.least(4);
    const walked: EventBody[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page++) {
      const res = await events(acme, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).to.equal(200);
      expect(res.body.data.items.length).to.be.at.most(2);
      walked.push(...res.body.data.items);
      cursor = res.body.data.nextCursor;
      if (cursor === null) break;
    }
    expect(walked).to.deep.equal(all);
    const bad = await events(acme, '?cursor=nonsense');
    expect(bad.status).to.equal(400);
    expect(bad.body).to.include({ success: false, error: 'cursor is not valid', code: 'invalid_cursor', param: 'cursor' });
    const tooMany = await events(acme, '?limit=101');
    expect([tooMany.status, tooMany.body.code]).to.deep.equal([400, 'validation_error']);
  });

  it('filters by type and by createdFrom/createdTo (both inclusive)', async () => {
    const all = (await events(acme, '?limit=100')).body.data.items as EventBody[];
    const deposits = (await events(acme, '?type=deposit.completed')).body.data.items as EventBody[];
    expect(deposits).to.deep.equal(all.filter((i) => i.type === 'deposit.completed'));
    expect((await events(acme, '?type=card.updated')).body.data).to.deep.equal({ items: [], nextCursor: null });
    const unknownType = await events(acme, '?type=money.printed');
    expect([unknownType.status, unknownType.body.code]).to.deep.equal([400, 'validation_error']);

    const newest = all[0] as EventBody;
    const oldest = all[all.length - 1] as EventBody;
    const between = (await events(acme, `?limit=100&createdFrom=${oldest.createdAt}&createdTo=${newest.createdAt}`)).body.data.items;
    expect(between).to.deep.equal(all);
    const onlyNewest = (await events(acme, `?limit=100&createdFrom=${newest.createdAt}`)).body.data.items as EventBody[];
    expect(onlyNewest.map((i) => i.id)).to.include(newest.id);
    expect(onlyNewest.every((i) => i.createdAt >= newest.createdAt)).to.equal(true);
    const before = new Date(Date.parse(oldest.createdAt) - 1).toISOString();
    expect((await events(acme, `?createdTo=${before}`)).body.data.items).to.deep.equal([]);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    expect((await events(acme, `?createdFrom=${later}`)).body.data.items).to.deep.equal([]);
    // A date alone is 00:00 UTC of that day, for either bound: day D is createdFrom=D&createdTo=D+1.
    const day = newest.createdAt.slice(0, 10);
    const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    const ofTheDay = (await events(acme, `?limit=100&createdFrom=${day}&createdTo=${next}`)).body.data.items as EventBody[];
    expect(ofTheDay.map((i) => i.id)).to.include(newest.id);
    const toTheDay = (await events(acme, `?limit=100&createdTo=${day}`)).body.data.items as EventBody[];
    expect(toTheDay.map((i) => i.id)).to.not.include(newest.id);
    const notADate = await events(acme, '?createdFrom=yesterday');
    expect([notADate.status, notADate.body.code]).to.deep.equal([400, 'validation_error']);
  });

  it('reads one by its id, the same as in the list', async () => {
    const [newest] = (await events(acme, '?limit=1')).body.data.items as EventBody[];
    const res = await one(acme, newest?.id ?? '');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: newest });
  });

  it('answers for one exactly the body its delivery carried, and lists the types the endpoint does not take too', async () => {
    await globex.receiver.waitFor((got) => got.some((r) => r.body.data.uuid === globexDeposit));
    const delivered = globex.receiver.received.find((r) => r.body.data.uuid === globexDeposit);
    const res = await one(globex.partner, delivered?.body.id ?? '');
    expect(res.status).to.equal(200);
    expect(res.body.data).to.deep.equal(delivered?.body);
    expect(JSON.stringify(res.body.data)).to.equal(delivered?.raw);
    const listed = (await events(globex.partner, '?limit=100')).body.data.items as EventBody[];
    expect(listed.find((i) => i.id === delivered?.body.id)).to.deep.equal(delivered?.body);
    // user.status.updated is not subscribed to: listed, never sent.
    expect(listed.map((i) => i.type)).to.include('user.status.updated');
    expect(globex.receiver.received.map((r) => r.body.type)).to.deep.equal(['deposit.completed']);
  });

  it("answers 404 event_not_found for another partner's event, an unknown id and a malformed one", async () => {
    const [theirs] = (await events(globex.partner, '?limit=1')).body.data.items as EventBody[];
    for (const id of [theirs?.id ?? '', randomUUID(), 'not-an-id']) {
      const res = await one(acme, id);
      expect(res.status, id).to.equal(404);
      expect(res.body).to.include({ success: false, error: 'Event not found', code: 'event_not_found' });
    }
  });
});
