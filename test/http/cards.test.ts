import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { isLuhnValid } from '../../src/providers/cards/port';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

describe('cards over HTTP (real Postgres)', function () {
  this.timeout(120_000);
  let app: App;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  /** Every line the service logs, at its most talkative level. */
  const logLines: string[] = [];
  const logged = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  const key = () => ({ 'x-idempotency-key': randomUUID() });

  /** A customer of `partner` whose application the sandbox issuer approved. */
  async function approved(partner = acme, cardType: 'virtual' | 'physical' = 'virtual'): Promise<Customer & { applicationId: string }> {
    const who = await customer(app.http, partner);
    const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType, isTermsOfServiceAccepted: true });
    expect(applied.status, JSON.stringify(applied.body)).to.equal(201);
    const decided = await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
    expect(decided.status).to.equal(202);
    return { ...who, applicationId: applied.body.data.application.id };
  }

  /** A customer with an issued card. */
  async function withCard(cardType: 'virtual' | 'physical' = 'virtual') {
    const who = await approved(acme, cardType);
    const issued = await app.http.post('/api/v1/cards').set(who.bearer).set(key()).send({});
    expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
    return { who, card: issued.body.data };
  }

  before(async () => {
    app = await startTestApp({}, pino({ level: 'trace' }, logged));
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
  });

  after(async () => {
    await app.close();
  });

  describe('application status and applications', () => {
    it('answers 401 "x-user-id header required" without a valid token', async () => {
      for (const headers of [{}, { Authorization: 'Bearer nope' }, acme.headers]) {
        const res = await app.http.get('/api/v1/cards/application/status').set(headers);
        expect(res.status).to.equal(401);
        expect(res.body).to.include({ success: false, error: 'x-user-id header required' });
      }
    });

    it('shows no application, then the pending one with every 2.9 field, then approved with canCreateCard', async () => {
      const ada = await customer(app.http, acme);
      const none = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(none.body).to.deep.equal({
        success: true,
        data: {
          application: null,
          card: null,
          hasApplication: false,
          canCreateCard: false,
          statusSummary: { local: 'not_started', external: 'not_started', synced: true },
        },
      });
      const applied = await app.http
        .post('/api/v1/cards/application')
        .set(ada.bearer)
        .send({ cardType: 'virtual', isTermsOfServiceAccepted: true, walletAddress: '0xabc' });
      expect(applied.status).to.equal(201);
      const application = applied.body.data.application;
      expect(Object.keys(application).sort()).to.deep.equal(
        [
          'id',
          'accountId',
          'userId',
          'issuerApplicationId',
          'identityShareToken',
          'walletAddress',
          'solanaAddress',
          'tronAddress',
          'chainId',
          'contractAddress',
          'sourceKey',
          'ipAddress',
          'occupation',
          'annualSalary',
          'accountPurpose',
          'expectedMonthlyVolume',
          'isTermsOfServiceAccepted',
          'hasExistingDocuments',
          'cardType',
          'isActive',
          'applicationStatus',
          'applicationReason',
          'createdAt',
          'updatedAt',
        ].sort(),
      );
      expect(application).to.include({
        accountId: ada.accountId,
        userId: ada.id,
        walletAddress: '0xabc',
        applicationStatus: 'pending',
        isActive: true,
        annualSalary: '85000.5',
      });
      const pending = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(pending.body.data).to.deep.include({
        hasApplication: true,
        canCreateCard: false,
        statusSummary: { local: 'pending', external: 'pending', synced: true },
      });
      await app.http.post(`/sandbox/v1/cards/applications/${application.id}/approve`).set(acme.headers).send({});
      const done = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(done.body.data.application.applicationStatus).to.equal('approved');
      expect(done.body.data).to.deep.include({ card: null, canCreateCard: true, statusSummary: { local: 'approved', external: 'approved', synced: true } });
    });

    it('declines with the reason; a decided application cannot be decided otherwise (409)', async () => {
      const ada = await customer(app.http, acme);
      const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'physical', isTermsOfServiceAccepted: true });
      const id = applied.body.data.application.id;
      expect((await app.http.post(`/sandbox/v1/cards/applications/${id}/decline`).set(acme.headers).send({ reason: 'risk' })).status).to.equal(202);
      const status = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(status.body.data.application).to.include({ applicationStatus: 'declined', applicationReason: 'risk', isActive: false });
      const otherwise = await app.http.post(`/sandbox/v1/cards/applications/${id}/approve`).set(acme.headers).send({});
      expect([otherwise.status, otherwise.body.code]).to.deep.equal([409, 'card_application_already_decided']);
      expect(otherwise.body.error).to.equal(`Card application ${id} is already denied`);
    });

    it('refuses terms not accepted (400), a second application (409), and names bad input', async () => {
      const ada = await customer(app.http, acme);
      const terms = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: false });
      expect(terms.status).to.equal(400);
      expect(terms.body).to.include({
        success: false,
        error: 'isTermsOfServiceAccepted must be true',
        code: 'terms_not_accepted',
        param: 'isTermsOfServiceAccepted',
      });
      const bad = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'plastic', isTermsOfServiceAccepted: true });
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.contain('cardType');
      await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      const again = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      expect([again.status, again.body.error, again.body.code]).to.deep.equal([
        409,
        'Card application already exists with status: pending',
        'card_application_exists',
      ]);
    });

    it("lets a partner decide only its own users' applications (another partner's: 404)", async () => {
      const ada = await customer(app.http, acme);
      const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
      const id = applied.body.data.application.id;
      const foreign = await app.http.post(`/sandbox/v1/cards/applications/${id}/approve`).set(globex.headers).send({});
      expect([foreign.status, foreign.body.error, foreign.body.code]).to.deep.equal([404, 'Card application not found', 'card_application_not_found']);
      expect((await app.http.post(`/sandbox/v1/cards/applications/${randomUUID()}/approve`).set(acme.headers).send({})).status).to.equal(404);
      const status = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(status.body.data.application.applicationStatus).to.equal('pending');
    });
  });

  describe('the card', () => {
    it('is 404 "Card not found" on every card read and change while the user has none', async () => {
      const ada = await customer(app.http, acme);
      const calls = [
        app.http.get('/api/v1/cards/status'),
        app.http.get('/api/v1/cards/details'),
        app.http.get('/api/v1/cards/details/full'),
        app.http.get('/api/v1/cards/secrets'),
        app.http.get('/api/v1/cards/pin'),
        app.http.post('/api/v1/cards/activate'),
      ];
      for (const call of calls) {
        const res = await call.set(ada.bearer).send();
        expect(res.status).to.equal(404);
        expect(res.body).to.include({ success: false, error: 'Card not found', code: 'card_not_found' });
      }
      const lock = await app.http.post('/api/v1/cards/lock').set(ada.bearer).set(key()).send();
      expect([lock.status, lock.body.error]).to.deep.equal([404, 'Card not found']);
      expect((await app.http.get('/api/v1/cards/me').set(ada.bearer)).body).to.deep.equal([]);
    });

    it('issues a virtual card active with last4, two-digit expiry and the default limit; a keyed retry replays it', async () => {
      const ada = await approved();
      const headers = key();
      const issued = await app.http.post('/api/v1/cards').set(ada.bearer).set(headers).send({});
      expect(issued.status).to.equal(201);
      expect(issued.headers['cache-control']).to.equal('no-store');
      const card = issued.body.data;
      expect(card).to.include({ type: 'virtual', status: 'active' });
      expect(card.limit).to.deep.equal({ amount: 1000, frequency: 'per24HourPeriod' });
      expect(card.last4).to.match(/^\d{4}$/);
      expect(card.expirationMonth).to.match(/^\d{2}$/);
      expect(card.expirationYear).to.match(/^\d{2}$/);
      const replay = await app.http.post('/api/v1/cards').set(ada.bearer).set(headers).send({});
      expect([replay.status, replay.headers['idempotent-replayed'], replay.body]).to.deep.equal([201, 'true', issued.body]);
      const second = await app.http.post('/api/v1/cards').set(ada.bearer).set(key()).send({});
      expect([second.status, second.body.error, second.body.code]).to.deep.equal([409, 'Card already issued', 'card_already_issued']);
      const status = await app.http.get('/api/v1/cards/application/status').set(ada.bearer);
      expect(status.body.data.card).to.deep.equal({
        id: card.id,
        type: 'virtual',
        status: 'active',
        last4: card.last4,
        expirationMonth: card.expirationMonth,
        expirationYear: card.expirationYear,
        limit: card.limit,
      });
      expect(status.body.data.canCreateCard).to.equal(false);
    });

    it('shows the secrets (full number, Luhn-valid, and CVC) and the masked number in full details only when asked', async () => {
      const { who, card } = await withCard();
      const secrets = await app.http.get('/api/v1/cards/secrets').set(who.bearer);
      expect(secrets.status).to.equal(200);
      const { cardNumber, cvc } = secrets.body.data;
      expect(isLuhnValid(cardNumber) && cardNumber.endsWith(card.last4)).to.equal(true);
      expect(secrets.body.data).to.include({ expirationMonth: card.expirationMonth, expirationYear: card.expirationYear });
      const plain = await app.http.get('/api/v1/cards/details/full?includeSecrets=false').set(who.bearer);
      expect(plain.body).to.include({ id: card.id });
      expect(plain.body.tokenWallets).to.deep.equal([]);
      expect(plain.body).not.to.have.any.keys('cardNumber', 'cvc');
      const full = await app.http.get('/api/v1/cards/details/full?includeSecrets=true').set(who.bearer);
      expect(full.body).to.include({ cardNumber: `${cardNumber.slice(0, 6)}******${card.last4}`, cvc });
      const details = await app.http.get('/api/v1/cards/details').set(who.bearer);
      expect(JSON.stringify(details.body)).not.to.contain(cardNumber);
    });

    it('activates a physical card, then 409 on a second activation', async () => {
      const { who, card } = await withCard('physical');
      expect(card.status).to.equal('notActivated');
      const activated = await app.http.post('/api/v1/cards/activate').set(who.bearer).send();
      expect(activated.body).to.deep.equal({ success: true, data: { id: card.id, status: 'active' } });
      const again = await app.http.post('/api/v1/cards/activate').set(who.bearer).send();
      expect([again.status, again.body.error, again.body.code]).to.deep.equal([409, 'Cannot activate a card in status active', 'card_status_forbids']);
    });
  });

  describe('lock, unlock, limit and PIN with x-idempotency-key', () => {
    it('requires the key as a UUID (400), replays the first answer, and 422 for another request under the key', async () => {
      const { who, card } = await withCard();
      const missing = await app.http.post('/api/v1/cards/lock').set(who.bearer).send();
      expect([missing.status, missing.body.error]).to.deep.equal([400, 'x-idempotency-key header is required']);
      const notUuid = await app.http.post('/api/v1/cards/lock').set(who.bearer).set('x-idempotency-key', 'abc').send();
      expect([notUuid.status, notUuid.body.error]).to.deep.equal([400, 'x-idempotency-key must be a UUID']);
      const headers = key();
      const locked = await app.http.post('/api/v1/cards/lock').set(who.bearer).set(headers).send();
      expect(locked.body).to.deep.equal({ success: true, data: { id: card.id, status: 'locked' } });
      expect((await app.http.get('/api/v1/cards/status').set(who.bearer)).body.data.status).to.equal('locked');
      const replay = await app.http.post('/api/v1/cards/lock').set(who.bearer).set(headers).send();
      expect([replay.status, replay.headers['idempotent-replayed'], replay.body]).to.deep.equal([200, 'true', locked.body]);
      const reused = await app.http.post('/api/v1/cards/unlock').set(who.bearer).set(headers).send();
      expect([reused.status, reused.body.error, reused.body.code]).to.deep.equal([
        422,
        'Idempotency key reused with different parameters',
        'idempotency_key_reused',
      ]);
      const twice = await app.http.post('/api/v1/cards/lock').set(who.bearer).set(key()).send();
      expect([twice.status, twice.body.error, twice.body.code]).to.deep.equal([409, 'Cannot lock a card in status locked', 'card_status_forbids']);
      const unlocked = await app.http.post('/api/v1/cards/unlock').set(who.bearer).set(key()).send();
      expect(unlocked.body.data.status).to.equal('active');
    });

    it('takes the required key under either name: Idempotency-Key alone is the key (docs/decisions.md)', async () => {
      const { who, card } = await withCard();
      const ietf = randomUUID();
      const locked = await app.http.post('/api/v1/cards/lock').set(who.bearer).set('Idempotency-Key', ietf).send();
      expect(locked.body).to.deep.equal({ success: true, data: { id: card.id, status: 'locked' } });
      const replay = await app.http.post('/api/v1/cards/lock').set(who.bearer).set('x-idempotency-key', ietf).send();
      expect([replay.status, replay.headers['idempotent-replayed']]).to.deep.equal([200, 'true']);
    });

    it('hides the number, CVC and PIN while the card is locked', async () => {
      const { who } = await withCard();
      await app.http.post('/api/v1/cards/lock').set(who.bearer).set(key()).send();
      const secrets = await app.http.get('/api/v1/cards/secrets').set(who.bearer);
      expect([secrets.status, secrets.body.error, secrets.body.code]).to.deep.equal([
        409,
        'Cannot reveal the secrets of a card in status locked',
        'card_status_forbids',
      ]);
      const full = await app.http.get('/api/v1/cards/details/full?includeSecrets=true').set(who.bearer);
      expect(full.status).to.equal(200);
      expect(full.body).not.to.have.any.keys('cardNumber', 'cvc');
      // The PIN as the secrets: never while the card is locked.
      const pin = await app.http.get('/api/v1/cards/pin').set(who.bearer);
      expect(pin.status).to.equal(409);
      expect(pin.body).to.include({ success: false, error: 'Cannot reveal the PIN of a card in status locked', code: 'card_status_forbids' });
      await app.http.post('/api/v1/cards/unlock').set(who.bearer).set(key()).send();
      expect((await app.http.get('/api/v1/cards/pin').set(who.bearer)).body).to.deep.equal({ success: true, data: { pin: null } });
    });

    it('answers 400 to a copy sent while the first is in flight, and changes the limit once', async () => {
      const { who, card } = await withCard();
      const headers = key();
      const send = () => app.http.patch('/api/v1/cards/limit').set(who.bearer).set(headers).send({ amount: '300.25', frequency: 'per30DayPeriod' });
      const answers = await Promise.all([send(), send(), send()]);
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200).length).to.be.at.least(1);
      for (const r of answers.filter((a) => a.status !== 200)) expect([r.status, r.body.error]).to.deep.equal([400, 'Duplicate request in progress']);
      for (const r of answers.filter((a) => a.status === 200))
        expect(r.body).to.deep.equal({ id: card.id, limit: { amount: 300.25, frequency: 'per30DayPeriod' } });
      const [row] = await app.tally.sql.query<{ n: string }>(`SELECT count(*)::text AS n FROM es_events WHERE stream_id = $1 AND type = 'CardLimitChanged'`, [
        `card-${card.id}`,
      ]);
      expect(row?.n).to.equal('1');
    });

    it('refuses a limit that is not positive, a frequency not of the six, and a PIN that is not 4 digits', async () => {
      const { who } = await withCard();
      const zero = await app.http.patch('/api/v1/cards/limit').set(who.bearer).set(key()).send({ amount: 0, frequency: 'allTime' });
      expect([zero.status, zero.body.error]).to.deep.equal([400, 'Amount must be greater than 0']);
      const monthly = await app.http.patch('/api/v1/cards/limit').set(who.bearer).set(key()).send({ amount: 10, frequency: 'perMonth' });
      expect(monthly.status).to.equal(400);
      expect(monthly.body.error).to.contain('frequency');
      for (const pin of ['123', '12345', 'abcd']) {
        const res = await app.http.put('/api/v1/cards/pin').set(who.bearer).set(key()).send({ pin });
        expect([res.status, res.body.error], pin).to.deep.equal([400, 'pin must be exactly 4 digits']);
        expect(res.body, pin).to.include({ code: 'invalid_pin', param: 'pin' });
      }
    });

    it('sets the PIN and reads it back; the card number is in no event, read-model table or log line, and no event or log has a PIN field', async () => {
      const { who, card } = await withCard();
      expect((await app.http.get('/api/v1/cards/pin').set(who.bearer)).body).to.deep.equal({ success: true, data: { pin: null } });
      const set = await app.http.put('/api/v1/cards/pin').set(who.bearer).set(key()).send({ pin: '7395' });
      expect(set.body).to.deep.equal({ success: true, data: { id: card.id } });
      expect((await app.http.get('/api/v1/cards/pin').set(who.bearer)).body).to.deep.equal({ success: true, data: { pin: '7395' } });
      const { cardNumber } = (await app.http.get('/api/v1/cards/secrets').set(who.bearer)).body.data;
      const events = await app.tally.sql.query<{ type: string; data: Record<string, unknown> }>(
        `SELECT type, data FROM es_events WHERE stream_id LIKE 'card%'`,
      );
      expect(JSON.stringify(events)).not.to.contain(cardNumber);
      for (const e of events) expect(Object.keys(e.data), e.type).not.to.include.members(['pin', 'cvc', 'cardNumber', 'pan']);
      const tables = await app.tally.sql.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE 'rm_%'`,
      );
      for (const { table_name } of tables) {
        const rows = await app.tally.sql.query<Record<string, unknown>>(`SELECT * FROM ${table_name}`);
        expect(JSON.stringify(rows), table_name).not.to.contain(cardNumber);
      }
      expect(logLines.length, 'the service logged its requests').to.be.greaterThan(0);
      for (const line of logLines)
        expect(line)
          .not.to.contain(cardNumber)
          .and.not.to.match(/"pin"\s*:/);
    });
  });

  describe("the operator's cancel", () => {
    it('cancels for good (every action 409), needs the operator token, and lets a new card be issued', async () => {
      const { who, card } = await withCard();
      expect((await app.http.post(`/admin/v1/cards/${card.id}/cancel`).set(acme.headers).send()).status).to.equal(401);
      const canceled = await app.http.post(`/admin/v1/cards/${card.id}/cancel`).set(admin).send();
      expect(canceled.body).to.deep.equal({ id: card.id, status: 'canceled' });
      const again = await app.http.post(`/admin/v1/cards/${card.id}/cancel`).set(admin).send();
      expect([again.status, again.body.error, again.body.code]).to.deep.equal([409, 'Cannot cancel a card in status canceled', 'card_status_forbids']);
      for (const action of ['lock', 'unlock', 'activate']) {
        const res = await app.http.post(`/api/v1/cards/${action}`).set(who.bearer).set(key()).send();
        expect([res.status, res.body.error], action).to.deep.equal([409, `Cannot ${action} a card in status canceled`]);
      }
      const limit = await app.http.patch('/api/v1/cards/limit').set(who.bearer).set(key()).send({ amount: 5, frequency: 'allTime' });
      expect([limit.status, limit.body.error]).to.deep.equal([409, 'Cannot update the limit of a card in status canceled']);
      const pin = await app.http.put('/api/v1/cards/pin').set(who.bearer).set(key()).send({ pin: '1234' });
      expect([pin.status, pin.body.error, pin.body.code]).to.deep.equal([409, 'Cannot set the PIN of a card in status canceled', 'card_status_forbids']);
      const reveal = await app.http.get('/api/v1/cards/pin').set(who.bearer);
      expect([reveal.status, reveal.body.error, reveal.body.code]).to.deep.equal([
        409,
        'Cannot reveal the PIN of a card in status canceled',
        'card_status_forbids',
      ]);
      expect((await app.http.get('/api/v1/cards/application/status').set(who.bearer)).body.data.canCreateCard).to.equal(true);
      const next = await app.http.post('/api/v1/cards').set(who.bearer).set(key()).send({});
      expect(next.status).to.equal(201);
      const mine = await app.http.get('/api/v1/cards/me').set(who.bearer);
      expect(mine.body.map((c: { id: string; status: string }) => [c.id, c.status])).to.deep.equal([
        [next.body.data.id, 'active'],
        [card.id, 'canceled'],
      ]);
      const onlyCanceled = await app.http.get('/api/v1/cards/me?status=canceled').set(who.bearer);
      expect(onlyCanceled.body.map((c: { id: string }) => c.id)).to.deep.equal([card.id]);
      const byLast4 = await app.http.get(`/api/v1/cards/me?q=${card.last4}`).set(who.bearer);
      expect(byLast4.body.map((c: { id: string }) => c.id)).to.include(card.id);
      expect((await app.http.post(`/admin/v1/cards/${randomUUID()}/cancel`).set(admin).send()).status).to.equal(404);
    });
  });

  describe('across users and partners', () => {
    it("acts only on the token user's own card: another user's token sees its own (none), never ada's", async () => {
      const { who: ada, card } = await withCard();
      const bob = await customer(app.http, acme);
      const eve = await customer(app.http, globex);
      for (const other of [bob, eve]) {
        expect((await app.http.get('/api/v1/cards/status').set(other.bearer)).status).to.equal(404);
        expect((await app.http.get('/api/v1/cards/secrets').set(other.bearer)).status).to.equal(404);
        expect((await app.http.post('/api/v1/cards/lock').set(other.bearer).set(key()).send()).status).to.equal(404);
        expect((await app.http.get('/api/v1/cards/me').set(other.bearer)).body).to.deep.equal([]);
      }
      expect((await app.http.get('/api/v1/cards/status').set(ada.bearer)).body.data).to.deep.equal({ id: card.id, status: 'active' });
    });

    it("scopes idempotency keys per partner: another user of the same partner gets 422, another partner's user its own answer", async () => {
      const { who: ada } = await withCard();
      const { who: bob } = await withCard();
      const eve = await approved(globex);
      const headers = key();
      expect((await app.http.post('/api/v1/cards/lock').set(ada.bearer).set(headers).send()).status).to.equal(200);
      const sameKeyOtherUser = await app.http.post('/api/v1/cards/lock').set(bob.bearer).set(headers).send();
      expect([sameKeyOtherUser.status, sameKeyOtherUser.body.error]).to.deep.equal([422, 'Idempotency key reused with different parameters']);
      expect((await app.http.get('/api/v1/cards/status').set(bob.bearer)).body.data.status).to.equal('active');
      const issued = await app.http.post('/api/v1/cards').set(eve.bearer).set(headers).send({});
      expect(issued.status).to.equal(201);
      const locked = await app.http.post('/api/v1/cards/lock').set(eve.bearer).set(key()).send();
      expect(locked.body.data).to.deep.equal({ id: issued.body.data.id, status: 'locked' });
    });

    it('needs a bearer token on every card route (a partner key is not one)', async () => {
      for (const [method, path] of [
        ['get', '/api/v1/cards/me'],
        ['post', '/api/v1/cards'],
        ['post', '/api/v1/cards/application'],
        ['get', '/api/v1/cards/secrets'],
        ['patch', '/api/v1/cards/limit'],
      ] as const) {
        const res = await app.http[method](path).set(acme.headers).send({});
        expect([res.status, res.body.error], path).to.deep.equal([401, 'Invalid or expired token']);
      }
    });
  });
});
