import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { expect } from 'chai';
import { GENESIS_HASH } from '../../src/eventstore/hash';
import type { RecordedEvent } from '../../src/eventstore/port';
import { ADMIN_TOKEN, type PartnerCredentials, type startTestApp } from '../support/app';
import { type Customer, startWithCustomers } from '../support/ledger';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/** The auditors' read-only API over HTTP (docs/decisions.md, "Auditors"), checked against the store port. */
describe('auditor reads (/audit/v1)', function () {
  this.timeout(120_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;
  let auditorId: string;
  let auditor: { Authorization: string };
  /** Every request made with the auditor's token, as route templates, in order. */
  const used: string[] = [];
  let beforeTransfer: Date;
  let started: Date;

  const get = (url: string, route: string) => {
    used.push(route);
    return app.http.get(url).set(auditor);
  };

  before(async () => {
    started = new Date();
    ({ app, acme, ada, bob } = await startWithCustomers());
    const created = await app.http
      .post('/admin/v1/auditors')
      .set(admin)
      .send({ name: 'Ledger & Co.', expiresAt: inDays(30) });
    auditorId = created.body.data.id;
    auditor = { Authorization: `Bearer ${created.body.data.token}` };
    // Record times have millisecond precision: keep the instant clear of the events on both sides.
    await sleep(20);
    beforeTransfer = new Date();
    await sleep(20);
    const transfer = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .send({ toAccountId: bob.accountId, amount: '10.5', description: 'rent' });
    expect(transfer.status, transfer.text).to.equal(201);
  });
  after(() => app?.close());

  it('reads a stream at an instant between two of its events and sees only the first, with its hash chain links', async () => {
    const stream = `account-${ada.accountId}`;
    const stored = await app.tally.store.readStream(stream);
    expect(stored.map((e) => e.type)).to.deep.equal(['AccountOpened', 'FundsDebited']);
    const res = await get(`/audit/v1/streams/${stream}?at=${beforeTransfer.toISOString()}`, '/audit/v1/streams/{stream}');
    expect(res.status, res.text).to.equal(200);
    const { data } = res.body;
    expect(data).to.include({ stream, at: beforeTransfer.toISOString(), aggregate: 'account' });
    expect(data.events).to.have.length(1);
    const [opened] = stored as [RecordedEvent, RecordedEvent];
    expect(data.events[0]).to.deep.equal({ ...opened, previousHash: GENESIS_HASH });
    expect(data.state).to.include({ opened: true, accountId: ada.accountId, userId: ada.id, debitsPosted: '0' });

    const now = await get(`/audit/v1/streams/${stream}`, '/audit/v1/streams/{stream}');
    expect(now.body.data.at).to.equal(null);
    expect(now.body.data.events.map((e: { type: string }) => e.type)).to.deep.equal(['AccountOpened', 'FundsDebited']);
    expect(now.body.data.events[1].previousHash).to.equal(opened.hash);
    expect(now.body.data.state.debitsPosted).to.equal('10.5');
  });

  it('shows a stream that exists now as empty before its first event; an unknown stream is 404 `Stream not found`', async () => {
    const early = await get(`/audit/v1/streams/user-${ada.id}?at=2000-01-01`, '/audit/v1/streams/{stream}');
    expect(early.status).to.equal(200);
    expect(early.body.data).to.include({ aggregate: 'user', at: '2000-01-01T00:00:00.000Z' });
    expect(early.body.data.events).to.deep.equal([]);
    const unknown = await get(`/audit/v1/streams/user-${randomUUID()}`, '/audit/v1/streams/{stream}');
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.include({ success: false, error: 'Stream not found', code: 'stream_not_found' });
    const bad = await get('/audit/v1/streams/x?at=yesterday', '/audit/v1/streams/{stream}');
    expect(bad.status).to.equal(400);
    expect(bad.body).to.include({ error: 'at must be an ISO 8601 date', code: 'validation_error' });
  });

  it('folds a balance from the log before and after a transfer; an unknown account is 404', async () => {
    const before = await get(`/audit/v1/accounts/${ada.accountId}/balance?at=${beforeTransfer.toISOString()}`, '/audit/v1/accounts/{accountId}/balance');
    expect(before.status, before.text).to.equal(200);
    const credit = (await app.tally.store.readStream(`accountin-${ada.accountId}`)).at(-1) as RecordedEvent;
    expect(before.body).to.deep.equal({
      success: true,
      data: {
        accountId: ada.accountId,
        asset: 'USDC',
        credits: '100.00000000',
        debits: '0.00000000',
        balance: '100.00000000',
        at: beforeTransfer.toISOString(),
        position: credit.position,
      },
    });
    const after = await get(`/audit/v1/accounts/${ada.accountId}/balance`, '/audit/v1/accounts/{accountId}/balance');
    const debit = (await app.tally.store.readStream(`account-${ada.accountId}`)).at(-1) as RecordedEvent;
    expect(after.body.data).to.include({ credits: '100.00000000', debits: '10.50000000', balance: '89.50000000', position: debit.position });
    const payee = await get(`/audit/v1/accounts/${bob.accountId}/balance`, '/audit/v1/accounts/{accountId}/balance');
    expect(payee.body.data).to.include({ credits: '10.50000000', debits: '0.00000000', balance: '10.50000000' });
    // The read model agrees with the fold of the log.
    const own = await app.http.get('/api/v1/user/accounts').set(ada.bearer);
    expect(own.body.items[0]).to.include({ credits: '100.00000000', debits: '10.50000000' });
    const unknown = await get('/audit/v1/accounts/999999/balance', '/audit/v1/accounts/{accountId}/balance');
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.include({ error: 'Account not found', code: 'account_not_found' });
  });

  it('exports a time range as NDJSON equal to what the store holds in it, each line with its previous hash', async () => {
    const to = new Date();
    await sleep(5);
    const res = await get(`/audit/v1/events?from=${started.toISOString()}&to=${to.toISOString()}`, '/audit/v1/events');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.equal('application/x-ndjson');
    expect(res.text.endsWith('\n')).to.equal(true);
    const lines = res.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    const all = await app.tally.store.readAll({ maxCount: 100_000 });
    const inRange = all.filter((e) => Date.parse(e.recordedAt) >= started.getTime() && Date.parse(e.recordedAt) < to.getTime());
    expect(inRange.length).to.be.greaterThan(10);
    expect(lines.map(({ previousHash: _, ...e }) => e)).to.deep.equal(inRange);
    const hashOf = new Map(all.map((e) => [`${e.stream}#${e.revision}`, e.hash]));
    for (const line of lines) expect(line.previousHash).to.equal(line.revision === 0 ? GENESIS_HASH : hashOf.get(`${line.stream}#${line.revision - 1}`));
    const empty = await get('/audit/v1/events?from=2000-01-01&to=2000-01-02', '/audit/v1/events');
    expect(empty.status).to.equal(200);
    expect(empty.text).to.equal('');
  });

  it('streams a range of thousands of events page by page, and stops reading the log when the client goes away', async () => {
    const stream = `audit-load-${randomUUID()}`;
    const from = new Date();
    for (let batch = 0; batch < 5; batch++) {
      const events = Array.from({ length: 1_000 }, (_, i) => ({ id: randomUUID(), type: 'LoadTested', data: { i: batch * 1_000 + i, pad: 'x'.repeat(400) } }));
      await app.tally.store.append(stream, events, batch === 0 ? 'no_stream' : 'stream_exists');
    }
    const whole = await get(`/audit/v1/events?from=${from.toISOString()}`, '/audit/v1/events');
    expect(whole.status).to.equal(200);
    expect(whole.headers['content-length']).to.equal(undefined);
    const lines = whole.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    const load = lines.filter((l) => l.stream === stream);
    expect(load.map((l) => l.data.i)).to.deep.equal(Array.from({ length: 5_000 }, (_, i) => i));
    for (let i = 1; i < load.length; i++) expect(load[i].previousHash).to.equal(load[i - 1].hash);

    // A client that reads one chunk and hangs up: the server stops reading pages of the log.
    const store = app.tally.store;
    const readAll = store.readAll.bind(store);
    let pagesRead = 0;
    // Only the export's reads: the log's consumers on this thread (the outbox) read it with a filter.
    store.readAll = (options) => {
      if (!options?.filter) pagesRead++;
      return readAll(options);
    };
    try {
      used.push('/audit/v1/events');
      await new Promise<void>((resolve, reject) => {
        const req = http.get(`${app.url}/audit/v1/events`, { headers: auditor }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(error)));
      });
      await sleep(300);
      const afterHangUp = pagesRead;
      await sleep(300);
      expect(pagesRead).to.equal(afterHangUp);
      const logPages = Math.ceil((await readAll({ maxCount: 100_000 })).length / 1_000);
      console.log(`    pages of the log read before the hang-up was noticed: ${afterHangUp} of ${logPages}`);
      expect(afterHangUp).to.be.lessThan(logPages);
    } finally {
      store.readAll = readAll;
    }
    // The service answers on as before.
    expect((await get(`/audit/v1/streams/${stream}?at=2000-01-01`, '/audit/v1/streams/{stream}')).status).to.equal(200);
  });

  it('records every auditor read as an AuditorUsed event in the log, with its route template, refused reads included', async () => {
    const events = await app.tally.store.readStream(`auditor-${auditorId}`);
    const uses = events.filter((e) => e.type === 'AuditorUsed');
    expect(uses.map((e) => e.data.route)).to.deep.equal(used);
    for (const e of uses) {
      expect(e.data.auditorId).to.equal(auditorId);
      expect(Math.abs(Date.parse(e.data.at as string) - Date.parse(e.recordedAt))).to.be.lessThan(5_000);
      expect(e.metadata.auditorId).to.equal(auditorId);
    }
  });

  it('refuses a missing, revoked or expired token with 401 `Invalid or expired token`, its code and WWW-Authenticate', async () => {
    const route = `/audit/v1/accounts/${ada.accountId}/balance`;
    const none = await app.http.get(route);
    expect(none.status).to.equal(401);
    expect(none.body).to.include({ error: 'Invalid or expired token', code: 'auditor_token_missing' });
    expect(none.headers['www-authenticate']).to.equal('Bearer');
    for (const other of [acme.headers, ada.bearer, admin]) expect((await app.http.get(route).set(other)).status).to.equal(401);

    const made = await app.http
      .post('/admin/v1/auditors')
      .set(admin)
      .send({ name: 'Short', expiresAt: new Date(Date.now() + 1_500).toISOString() });
    const token = { Authorization: `Bearer ${made.body.data.token}` };
    expect((await app.http.get(route).set(token)).status).to.equal(200);
    await sleep(1_600);
    const expired = await app.http.get(route).set(token);
    expect(expired.status).to.equal(401);
    expect(expired.body).to.include({ error: 'Invalid or expired token', code: 'auditor_token_expired' });
    expect(expired.headers['www-authenticate']).to.equal('Bearer error="invalid_token"');

    expect((await app.http.get(route).set(auditor)).status).to.equal(200);
    expect((await app.http.delete(`/admin/v1/auditors/${auditorId}`).set(admin)).status).to.equal(204);
    const revoked = await app.http.get(route).set(auditor);
    expect(revoked.status).to.equal(401);
    expect(revoked.body).to.include({ error: 'Invalid or expired token', code: 'auditor_token_invalid' });
    const garbled = await app.http.get(route).set({ Authorization: 'Bearer ta_garbled' });
    expect(garbled.body.code).to.equal('auditor_token_invalid');
  });
});
