import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { JsonObject } from '../../src/eventstore/port';
import { UnstorableEventError } from '../../src/eventstore/storable';
import { createPartner, lastWritten, lastWrittenPosition, type PartnerCredentials, type startTestApp, uniqueEmail } from '../support/app';
import { COMPLETE_PROFILE, registerUser } from '../support/identity';
import { type Customer, PAYOUT_DESTINATION, startWithCustomers } from '../support/ledger';

/**
 * The text policy (decisions, "Input and hardening"): what no store can hold is refused at the edge
 * with a 400 naming the field, and nothing is written. Before it, one transfer with a U+0000 in its
 * description stopped every projection for every partner.
 */
describe('hardening: input the store cannot hold, and other malformed input', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  before(async () => {
    ({ app, acme, ada, bob } = await startWithCustomers());
  });
  after(() => app?.close());

  const head = () => lastWrittenPosition(app);
  const written = () => lastWritten(app);

  /** Every projection has reached the log's head (none is stuck on an event). */
  async function projectionsCaughtUp(): Promise<void> {
    expect(await app.tally.engine.waitFor(await head(), { timeoutMs: 5_000 })).to.equal(true);
  }

  const BAD_TEXTS: Array<[string, string]> = [
    ['U+0000', 'a\u0000b'],
    ['a lone high surrogate', 'x\ud800'],
    ['a lone low surrogate', '\udc00y'],
    ['a C0 control', 'bell\u0007'],
    ['DEL', 'del\u007f'],
    ['a C1 control', 'next\u0085line'],
  ];

  it('refuses a transfer whose description the store could not hold, writes nothing, and every projection stays live', async () => {
    for (const [name, text] of BAD_TEXTS) {
      const before = await written();
      const res = await app.http
        .post('/api/v1/transactions/transfer')
        .set(ada.bearer)
        .send({ fromAccountId: ada.accountId, toAccountId: bob.accountId, amount: 1, description: text });
      expect(res.status, name).to.equal(400);
      expect(res.body, name).to.deep.equal({
        success: false,
        error: 'description contains characters that are not allowed',
        code: 'validation_error',
        details: [{ field: 'description', rule: 'text' }],
        param: 'description',
        requestId: res.headers['x-request-id'],
      });
      expect(await written(), name).to.equal(before);
    }
    // Tab, line feed, carriage return and any well-formed text (astral characters included) are fine.
    const ok = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .send({ fromAccountId: ada.accountId, toAccountId: bob.accountId, amount: 1, description: 'line\tone\r\nline two 😀 é' });
    expect(ok.status).to.equal(201);
    await projectionsCaughtUp();
    // The service still serves everyone: a new partner, a new user.
    const other = await createPartner(app.http, 'Other');
    expect((await app.http.post('/api/v1/partner/users').set(other.headers).send({ email: uniqueEmail(), countryCode: 'CO' })).status).to.equal(201);
  });

  it('refuses such text in a payout, its source.metadata (values and keys), a profile and a new user', async () => {
    const payout = (body: Record<string, unknown>) =>
      app.http
        .post('/api/v1/user/payout')
        .set(ada.bearer)
        .send({
          transactionId: randomUUID(),
          amount: 1000,
          asset: 'COP',
          provider: 'mock',
          source: { metadata: { fundingId: 'f1' } },
          destination: PAYOUT_DESTINATION,
          ...body,
        });
    const user = await registerUser(app.http, acme);
    const cases: Array<[string, () => Promise<{ status: number; body: { error: string } }>, string]> = [
      ['payout description', () => payout({ description: 'a\u0000b' }), 'description'],
      ['payout metadata value', () => payout({ source: { metadata: { note: { deep: 'x\ud800' } } } }), 'source.metadata.note.deep'],
      ['payout metadata key', () => payout({ source: { metadata: { 'k\u0000': 'v' } } }), 'source.metadata'],
      ['payout destination', () => payout({ destination: { ...PAYOUT_DESTINATION, bankName: 'Banco\u0000' } }), 'destination.bankName'],
      ['partner profile', () => app.http.post('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, firstName: 'A\u0000' }), 'firstName'],
      ['bearer profile', () => app.http.patch('/api/v1/auth/profile').set(ada.bearer).send({ city: 'x\udfff' }), 'city'],
      [
        'new user',
        () => app.http.post('/api/v1/partner/users').set(acme.headers).send({ email: uniqueEmail(), countryCode: 'CO', language: 'e\u0000' }),
        'language',
      ],
      ['query', () => app.http.get('/api/v1/partner/users').query({ q: 'a\u0000' }).set(acme.headers), 'q'],
    ];
    for (const [name, send, field] of cases) {
      const before = await written();
      const res = await send();
      expect(res.status, name).to.equal(400);
      expect(res.body.error, name).to.equal(`${field} contains characters that are not allowed`);
      expect(await written(), name).to.equal(before);
    }
    await projectionsCaughtUp();
  });

  it('refuses a body nested deeper than any field needs (5,000 levels was a 500)', async () => {
    // Written out by hand: JSON.stringify itself runs out of stack on it.
    const metadata = `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`;
    const before = await written();
    const res = await app.http
      .post('/api/v1/user/payout')
      .set(ada.bearer)
      .set('Content-Type', 'application/json')
      .send(
        `{"transactionId":"${randomUUID()}","amount":1000,"asset":"COP","provider":"mock","destination":${JSON.stringify(PAYOUT_DESTINATION)},"source":{"metadata":${metadata}}}`,
      );
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('source is nested too deeply (at most 16 levels)');
    expect(await written()).to.equal(before);
  });

  it('judges a JSON number on its own text: 1.0000000000000001 is not 1', async () => {
    const before = await written();
    const res = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .set('Content-Type', 'application/json')
      .send(`{"fromAccountId": ${ada.accountId}, "toAccountId": ${bob.accountId}, "amount": 1.0000000000000001, "description": "x"}`);
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('amount has more precision than a JSON number can carry; send it as a decimal string');
    const huge = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .set('Content-Type', 'application/json')
      .send(`{"fromAccountId": ${ada.accountId}, "toAccountId": ${bob.accountId}, "amount": 1e400}`);
    expect(huge.status).to.equal(400);
    expect(huge.body.error).to.equal('amount has more precision than a JSON number can carry; send it as a decimal string');
    expect(await written()).to.equal(before);
    // Numbers a double carries exactly go through as before, and so does the decimal string.
    for (const amount of ['0.1', '2.50000000', '"1.0000000000000001"']) {
      const res = await app.http
        .post('/api/v1/transactions/transfer')
        .set(ada.bearer)
        .set('Content-Type', 'application/json')
        .send(`{"fromAccountId": ${ada.accountId}, "toAccountId": ${bob.accountId}, "amount": ${amount}, "description": "[1e400, \\"9.99999999999999999\\"]"}`);
      expect(res.status, amount).to.be.oneOf(amount.startsWith('"') ? [400] : [201]);
    }
  });

  it('judges numbers on the very text parsed: after a byte order mark, never in another charset, and deep down (each was a 500 or a pass)', async () => {
    const before = await written();
    const transfer = (body: Buffer | string, type = 'application/json') =>
      app.http.post('/api/v1/transactions/transfer').set(ada.bearer).set('Content-Type', type).send(body);
    const inexact = `{"fromAccountId": ${ada.accountId}, "toAccountId": ${bob.accountId}, "amount": 1.0000000000000001, "description": "x"}`;
    const bom = await transfer(`\uFEFF${inexact}`);
    expect(bom.status).to.equal(400);
    expect(bom.body.error).to.equal('amount has more precision than a JSON number can carry; send it as a decimal string');
    // UTF-16 would have been read as UTF-8 by the check (and skipped it): JSON comes in UTF-8 only.
    for (const body of [Buffer.from(inexact, 'utf16le'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(inexact, 'utf16le')])]) {
      const utf16 = await transfer(body, 'application/json; charset=utf-16le');
      expect(utf16.status).to.be.oneOf([400, 415]);
    }
    // An inexact number 10,000 levels down: refused for its depth, not a stack overflow.
    const deep = await transfer(
      `{"fromAccountId": ${ada.accountId}, "toAccountId": ${bob.accountId}, "amount": ${'['.repeat(10_000)}1.0000000000000001${']'.repeat(10_000)}}`,
    );
    expect(deep.status).to.equal(400);
    expect(deep.body.error).to.equal('amount is nested too deeply (at most 16 levels)');
    expect(await written()).to.equal(before);
  });

  it('ignores body fields the route does not declare: never stored, never echoed', async () => {
    const user = await registerUser(app.http, acme);
    const junk: Record<string, unknown> = { isAdmin: true, status: 'active' };
    for (let i = 0; i < 3_000; i++) junk[`k${i}`] = i;
    const created = await app.http
      .post('/api/v1/user/profile')
      .set(acme.headers)
      .send({ userId: user.id, ...COMPLETE_PROFILE, ...junk });
    expect(created.status).to.equal(201);
    expect(created.body.data.profile).not.to.have.property('isAdmin');
    expect(Object.keys(created.body.data.profile)).to.have.length.below(30);
    const events = await app.tally.store.readStream(`profile-${user.id}`);
    const stored = JSON.stringify(events.map((e) => e.data));
    expect(stored).not.to.contain('isAdmin');
    expect(stored).not.to.contain('k2999');
    const read = await app.http.get('/api/v1/user/profile').query({ userId: user.id }).set(acme.headers);
    expect(read.body.data.profile).not.to.have.property('isAdmin');
  });

  it('answers a path parameter that is not valid percent-encoding with a 400, not a 500 (found by the fuzz test)', async () => {
    for (const path of ['/api/v1/transactions/%zz', '/admin/v1/users/%/suspend', '/api/pay/%E0%A4%A', '/api/v1/partner/users/%FF']) {
      const res = await app.http.get(path).set(acme.headers);
      // GET on the operator's POST-only path: 405 (the method is refused before the parameter is read).
      expect(res.status, path).to.be.oneOf(path.includes('suspend') ? [400, 404, 405] : [400]);
      if (res.status === 400) expect(res.body).to.include({ success: false, error: 'Path parameter is not valid percent-encoding' });
    }
  });

  it('takes JSON only on JSON routes (415), and forms only where the hosted pages post them', async () => {
    const before = await written();
    const form = await app.http
      .post('/api/v1/partner/users')
      .set(acme.headers)
      .type('form')
      .send(`email=${encodeURIComponent(uniqueEmail())}&countryCode=CO`);
    expect(form.status).to.equal(415);
    expect(form.body).to.include({ success: false, error: 'Content-Type must be application/json' });
    const text = await app.http.post('/api/v1/partner/users').set(acme.headers).set('Content-Type', 'text/plain').send('{"email":"a@b.co"}');
    expect(text.status).to.equal(415);
    expect(await written()).to.equal(before);
  });

  it('sends nosniff and no-store on every answer, and keeps hosted pages out of frames', async () => {
    for (const res of [
      await app.http.get('/healthz'),
      await app.http.get('/api/v1/nowhere'),
      await app.http.post('/api/v1/partner/auth/send').set(acme.headers).send({ email: ada.email }),
    ]) {
      expect(res.headers['x-content-type-options']).to.equal('nosniff');
      expect(res.headers['cache-control']).to.equal('no-store');
    }
    const deposit = await app.http
      .post('/api/v1/transactions/deposit')
      .set(ada.bearer)
      .send({
        toAccountId: ada.accountId,
        amount: '5',
        currency: 'USDC',
        provider: 'mock',
        description: 'd',
        metadata: { payer: { documentType: 'CC', documentNumber: '1' } },
      });
    expect(deposit.status).to.equal(201);
    const page = await app.http.get(deposit.body.paymentLink);
    expect(page.status).to.equal(200);
    expect(page.headers['content-security-policy']).to.equal("frame-ancestors 'none'");
  });

  it('the store itself refuses to append what it could not hold (a bug, not a 4xx), and nothing is written', async () => {
    const before = await written();
    const stream = `hardening-${randomUUID()}`;
    for (const data of [{ note: 'a\u0000b' }, { 'k\ud800': 1 }, { list: ['ok', '\u0085'] }] as JsonObject[]) {
      let thrown: unknown;
      try {
        await app.tally.store.append(stream, [{ id: randomUUID(), type: 'Planted', data }], 'any');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).to.be.instanceOf(UnstorableEventError);
    }
    let thrown: unknown;
    try {
      await app.tally.store.append(stream, [{ id: randomUUID(), type: 'Planted', data: {}, metadata: { correlationId: '\u0000' } }], 'any');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.instanceOf(UnstorableEventError);
    expect(await written()).to.equal(before);
    expect(await app.tally.store.readStream(stream)).to.have.length(0);
  });
});
