import { randomUUID } from 'node:crypto';
import type { JsonObject } from '../../src/eventstore/port';
import { expect } from 'chai';
import { userDecider, userStream } from '../../src/domain/identity';
import { CHECKPOINT_STREAM } from '../../src/platform/audit/checkpoint';
import { ADMIN_TOKEN, createPartner, lastWritten, lastWrittenPosition, type PartnerCredentials, startTestApp, writtenSince } from '../support/app';
import { issuedCard } from '../support/cards';
import { COMPLETE_PROFILE, kycStartedUser, latestCode, login } from '../support/identity';
import { balanceOf, type Customer, customer, fund, PAYER, payoutRequest } from '../support/ledger';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

/**
 * Erasure (docs/decisions.md, "Personal data"): refused while money is on, or on its way to or from,
 * the user's accounts; otherwise the user's data key is destroyed, its sessions end, its card is
 * canceled, its email is free again, the reads show it as not found and the read models keep its
 * personal columns null; the ledger stays as it was.
 */
describe('erasing a user (partner and operator API)', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
  });
  after(() => app.close());

  const erase = (userId: string, partner = acme) => app.http.post(`/api/v1/partner/users/${userId}/erase`).set(partner.headers).send();
  const sql = <Row>(text: string, params: unknown[]) => app.tally.sql.query<Row>(text, params);
  /** The messages the sandbox mailbox keeps for an address (its route answers only for the partner's users). */
  const mailsTo = async (email: string) =>
    Number((await sql<{ n: string }>('SELECT count(*)::text AS n FROM sandbox_emails WHERE to_address = $1', [email]))[0]?.n);

  /** The events written since `head` (a lastWritten answer), but the audit checkpoints the service signs by itself every minute the log grew. */
  const appendedSince = async (last: string) => (await writtenSince(app, last)).filter((e) => !e.startsWith(`${CHECKPOINT_STREAM} `));

  /** Refused with this status, message and code, and nothing appended to the log. */
  async function refused(userId: string, expected: { status: number; error: string; code: string }) {
    const head = await lastWritten(app);
    const res = await erase(userId);
    expect(res.status, res.text).to.equal(expected.status);
    expect(res.body).to.include({ success: false, error: expected.error, code: expected.code });
    expect(await appendedSince(head)).to.deep.equal([]);
    expect((await app.http.get(`/api/v1/partner/users/${userId}`).set(acme.headers)).status).to.equal(200);
  }

  describe('refusals, writing nothing', () => {
    it('is 409 `User has a non-zero balance` while an account holds money', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '5');
      await refused(who.id, { status: 409, error: 'User has a non-zero balance', code: 'user_has_balance' });
    });

    it('is 409 `User has pending transactions` while a payout is held', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '10');
      // 40,000 COP at 4,000 COP per USDC: the whole 10 USDC held, so credits equal debits and only the hold refuses.
      const payout = await app.http.post('/api/v1/user/payout').set(who.bearer).send(payoutRequest());
      expect(payout.status, payout.text).to.equal(200);
      await refused(who.id, { status: 409, error: 'User has pending transactions', code: 'user_has_pending_transactions' });
    });

    it('is 409 `User has pending transactions` while a card hold is pending', async () => {
      const who = await customer(app.http, acme);
      const card = await issuedCard(app.http, acme, who.bearer);
      await fund(app.http, acme, who, '5');
      const held = await app.http
        .post(`/sandbox/v1/cards/${card.id}/authorizations`)
        .set(acme.headers)
        .send({ amount: 5, currency: 'USD', merchantName: 'Corner Shop', merchantCategoryCode: '5411' });
      expect(held.status, held.text).to.equal(201);
      await refused(who.id, { status: 409, error: 'User has pending transactions', code: 'user_has_pending_transactions' });
    });

    it('is 409 `User has pending transactions` while a deposit awaits its provider', async () => {
      const who = await customer(app.http, acme);
      const deposit = await app.http
        .post('/api/v1/transactions/deposit')
        .set(who.bearer)
        .send({ toAccountId: who.accountId, amount: '3', currency: 'USDC', provider: 'mock', description: 'top up', metadata: PAYER });
      expect(deposit.status, deposit.text).to.equal(201);
      await refused(who.id, { status: 409, error: 'User has pending transactions', code: 'user_has_pending_transactions' });
    });

    it('is 404 `User not found` for another partner’s user, an unknown id and a malformed one', async () => {
      const who = await customer(app.http, acme);
      const head = await lastWritten(app);
      for (const [userId, partner] of [
        [who.id, globex],
        [randomUUID(), acme],
        ['not-a-uuid', acme],
      ] as const) {
        const res = await erase(userId, partner);
        expect(res.status, userId).to.equal(404);
        expect(res.body).to.include({ success: false, error: 'User not found', code: 'user_not_found' });
      }
      expect(await appendedSince(head)).to.deep.equal([]);
    });
  });

  describe('a user with a profile, KYC, a card, a settled history and a live session', () => {
    let ada: Customer;
    let bob: Customer;
    let cardId: string;
    let refreshToken: string;
    let erasedAt: string;
    let bobBefore: { credits: string; debits: string };

    before(async () => {
      ada = await customer(app.http, acme);
      bob = await customer(app.http, acme);
      cardId = (await issuedCard(app.http, acme, ada.bearer)).id;
      await fund(app.http, acme, ada, '20');
      const sent = await app.http
        .post('/api/v1/transactions/transfer')
        .set(ada.bearer)
        .send({ fromAccountId: ada.accountId, toAccountId: bob.accountId, amount: '20', description: 'everything to Bob' });
      expect(sent.status, sent.text).to.equal(201);
      refreshToken = (await login(app.http, acme, ada.email)).refreshToken;
      bobBefore = await balanceOf(app.http, bob);
      const res = await erase(ada.id);
      expect(res.status, res.text).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['success', 'data']);
      expect(res.body.data).to.deep.equal({ userId: ada.id, erasedAt: res.body.data.erasedAt });
      erasedAt = res.body.data.erasedAt;
      expect(Number.isNaN(Date.parse(erasedAt))).to.equal(false);
    });

    it('answers 404 `User not found` on every read and write naming the user, and on a second erasure', async () => {
      const q = `userId=${ada.id}`;
      const answers = await Promise.all([
        app.http.get(`/api/v1/partner/users/${ada.id}`).set(acme.headers),
        app.http.get(`/api/v1/partner/users/${ada.id}/export`).set(acme.headers),
        app.http.get(`/api/v1/user/profile?${q}`).set(acme.headers),
        app.http.get(`/api/v1/user/kyc/status?${q}`).set(acme.headers),
        app.http.patch('/api/v1/user/profile').set(acme.headers).send({ userId: ada.id, city: 'Medellín' }),
        erase(ada.id),
      ]);
      for (const res of answers) expect([res.status, res.body.error, res.body.code], res.text).to.deep.equal([404, 'User not found', 'user_not_found']);
      const listed = await app.http.get(`/api/v1/partner/users?email=${encodeURIComponent(ada.email)}`).set(acme.headers);
      expect(listed.body.data.items).to.deep.equal([]);
    });

    it('ends every session: the access token is 401, the refresh token refused, and no login code is sent', async () => {
      const res = await app.http.get('/api/v1/user/accounts').set(ada.bearer);
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('token_invalid');
      const refreshed = await app.http.post('/api/v1/partner/auth/refresh').set(acme.headers).send({ refreshToken });
      expect(refreshed.status).to.equal(401);
      await app.http.post('/api/v1/partner/auth/send').set(acme.headers).send({ email: ada.email });
      expect(await mailsTo(ada.email)).to.equal(0);
    });

    it('canceled the card, and the sandbox issuer no longer keeps its number, CVC or PIN', async () => {
      const cancel = await app.http.post(`/admin/v1/cards/${cardId}/cancel`).set(admin).send();
      expect([cancel.status, cancel.body.error]).to.deep.equal([409, 'Cannot cancel a card in status canceled']);
      const [row] = await sql<{ status: string; pan_sealed: string | null; cvc_sealed: string | null }>(
        'SELECT status, pan_sealed, cvc_sealed FROM sandbox_cards WHERE card_id = $1',
        [cardId],
      );
      expect(row).to.deep.equal({ status: 'canceled', pan_sealed: null, cvc_sealed: null });
    });

    it('leaves the ledger as it was: the counterparty’s balance and its list of the transfer', async () => {
      expect(await balanceOf(app.http, bob)).to.deep.equal(bobBefore);
      const list = await app.http.get(`/api/v1/transactions?accountId=${bob.accountId}&limit=10`).set(bob.bearer);
      const transfer = list.body.find((t: { description: string }) => t.description === 'everything to Bob');
      expect(transfer).to.include({ amount: '20.00000000', debitAccountId: ada.accountId, creditAccountId: bob.accountId, status: 'COMPLETED' });
    });

    it('keeps the read models’ personal columns null, also after a rebuild', async () => {
      const check = async () => {
        const [user] = await sql<{ email: string | null; phone_number: string | null; erased: boolean }>(
          'SELECT email, phone_number, erased_at IS NOT NULL AS erased FROM rm_users WHERE user_id = $1',
          [ada.id],
        );
        expect(user).to.deep.equal({ email: null, phone_number: null, erased: true });
        const [profile] = await sql<{ fields: unknown }>('SELECT fields FROM rm_profiles WHERE user_id = $1', [ada.id]);
        expect(profile).to.deep.equal({ fields: null });
        const documents = await sql<{ document: unknown }>('SELECT document FROM rm_kyc_verifications WHERE user_id = $1', [ada.id]);
        expect(documents.length).to.be.at.least(1);
        for (const d of documents) expect(d.document).to.equal(null);
      };
      await check();
      for (const name of ['users', 'profiles', 'kyc']) {
        const rebuilt = await app.http.post(`/admin/v1/projections/${name}/rebuild`).set(admin).send();
        expect(rebuilt.status, rebuilt.text).to.equal(200);
      }
      await check();
    });

    it('keeps the notifications about the user with their personal fields null', async () => {
      const events = await app.http.get('/api/v1/partner/events?type=user.status.updated&limit=100').set(acme.headers);
      expect(events.status, events.text).to.equal(200);
      const about = events.body.data.items.filter((n: { data: { user: { id: string } } }) => n.data.user.id === ada.id);
      expect(about.length).to.be.at.least(1);
      for (const n of about) expect(n.data.user).to.include({ id: ada.id, email: null, phoneNumber: null });
      const [stored] = await sql<{ n: string }>('SELECT count(*)::text AS n FROM notification_events WHERE strpos(body, $1) > 0', [ada.email]);
      expect(stored?.n).to.equal('0');
    });

    it('lets the email register again, once: of two registrations at once one wins, the other is 409', async () => {
      const register = (partner: PartnerCredentials) =>
        app.http.post('/api/v1/partner/users').set(partner.headers).send({ email: ada.email.toUpperCase(), countryCode: 'CO' });
      const answers = await Promise.all([register(acme), register(globex)]);
      expect(answers.map((r) => r.status).sort()).to.deep.equal([201, 409]);
      const lost = answers.find((r) => r.status === 409);
      expect(lost?.body).to.include({ error: 'User with this email already exists', code: 'email_taken' });
      const won = answers.find((r) => r.status === 201);
      expect(won?.body.data.user.id).to.not.equal(ada.id);
      expect(won?.body.data.user.email).to.equal(ada.email);
    });
  });

  it('is the operator’s too (any partner’s user), and 404 for an unknown one', async () => {
    const who = await customer(app.http, globex);
    const res = await app.http.post(`/admin/v1/users/${who.id}/erase`).set(admin).send();
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.userId).to.equal(who.id);
    expect((await app.http.get(`/api/v1/partner/users/${who.id}`).set(globex.headers)).status).to.equal(404);
    const again = await app.http.post(`/admin/v1/users/${who.id}/erase`).set(admin).send();
    expect([again.status, again.body.code]).to.deep.equal([404, 'user_not_found']);
    const unknown = await app.http.post(`/admin/v1/users/${randomUUID()}/erase`).set(admin).send();
    expect([unknown.status, unknown.body.error]).to.deep.equal([404, 'User not found']);
  });

  it('finishes an erasure cut short after its append (a crash): erasing again cancels the card, destroys the key, and is 404', async () => {
    const who = await customer(app.http, acme);
    const card = await issuedCard(app.http, acme, who.bearer);
    // The crash: UserErased is in the log, nothing after it was done.
    const ctx = { commandId: randomUUID(), metadata: { correlationId: randomUUID(), actor: { kind: 'operator' as const, id: 'test' } } };
    const money = { unsettled: false, pending: false };
    await app.tally.commands.decide(ctx, userStream(who.id), userDecider, { type: 'Erase', erasedAt: new Date().toISOString(), money });
    const keyOf = async () =>
      (await sql<{ destroyed: boolean }>('SELECT destroyed_at IS NOT NULL AS destroyed FROM data_keys WHERE owner = $1', [`user:${who.id}`]))[0];
    expect(await keyOf()).to.deep.equal({ destroyed: false });
    expect(await mailsTo(who.email)).to.be.at.least(1);
    const again = await erase(who.id);
    expect([again.status, again.body.code]).to.deep.equal([404, 'user_not_found']);
    expect(await keyOf()).to.deep.equal({ destroyed: true });
    expect(await mailsTo(who.email)).to.equal(0);
    const cancel = await app.http.post(`/admin/v1/cards/${card.id}/cancel`).set(admin).send();
    expect([cancel.status, cancel.body.error]).to.deep.equal([409, 'Cannot cancel a card in status canceled']);
  });

  it('keeps nothing the identity provider says after the erasure (its decision and document of the user’s inquiry)', async () => {
    const started = await kycStartedUser(app.http, acme);
    expect((await erase(started.id)).status).to.equal(200);
    const head = await lastWritten(app);
    const done = await app.http.post(`/sandbox/v1/kyc/${started.inquiryId}/complete`).set(acme.headers).send({ outcome: 'approved' });
    expect(done.status, done.text).to.equal(202);
    expect(await appendedSince(head)).to.deep.equal([]);
    const rows = await sql<{ status: string; document: unknown }>('SELECT status, document FROM rm_kyc_verifications WHERE user_id = $1', [started.id]);
    expect(rows).to.have.length(1);
    expect(rows[0]?.document).to.equal(null);
    expect(rows[0]?.status).to.not.equal('approved');
  });

  it('erases a user who never logged in (no account, no card)', async () => {
    const registered = await app.http
      .post('/api/v1/partner/users')
      .set(acme.headers)
      .send({ email: `never.${randomUUID()}@example.com`, countryCode: 'CO' });
    const id = registered.body.data.user.id;
    const profile = await app.http
      .post('/api/v1/user/profile')
      .set(acme.headers)
      .send({ userId: id, ...COMPLETE_PROFILE });
    expect(profile.status).to.equal(201);
    const res = await erase(id);
    expect(res.status, res.text).to.equal(200);
    expect((await app.http.get(`/api/v1/user/profile?userId=${id}`).set(acme.headers)).status).to.equal(404);
  });

  it('the login code a user was sent is gone from the sandbox outbox', async () => {
    const who = await customer(app.http, acme);
    expect(await latestCode(app.http, acme, who.email)).to.be.a('string');
    expect(await mailsTo(who.email)).to.be.at.least(1);
    expect((await erase(who.id)).status).to.equal(200);
    expect(await mailsTo(who.email)).to.equal(0);
    // The sandbox mailbox is read for the partner's own users only: the address names none any more.
    const mails = await app.http.get(`/sandbox/v1/emails?to=${encodeURIComponent(who.email)}`).set(acme.headers);
    expect([mails.status, mails.body.code]).to.deep.equal([404, 'user_not_found']);
  });
});

/** Appends, as a new stream, an event the projection cannot apply, and waits until it is stopped on it (at most 15 s). */
async function stopProjection(app: Awaited<ReturnType<typeof startTestApp>>, projection: string, stream: string, type: string, data: JsonObject) {
  await app.tally.store.append(stream, [{ id: randomUUID(), type, data, metadata: { actor: { kind: 'system', id: 'test' } } }], 'no_stream');
  for (let i = 0; i < 300 && !app.tally.engine.isStopped(projection); i++) await new Promise((r) => setTimeout(r, 50));
  expect(app.tally.engine.isStopped(projection)).to.equal(true);
}

/** The users read model stopped on an event it cannot apply (so it lags for good): erasure still holds, from the user's stream. */
describe('erasing a user while the users read model lags', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
  });
  after(() => app.close());

  it('refuses the erased user’s token and a login code sent before, though the read model still shows the user', async () => {
    const ada = await customer(app.http, acme);
    await app.http.post('/api/v1/partner/auth/send').set(acme.headers).send({ email: ada.email });
    const code = await latestCode(app.http, acme, ada.email);
    // Stop the users projection: a UserRegistered it cannot apply (no partner).
    const id = randomUUID();
    const data = { userId: id, email: `${id}@example.com`, countryCode: 'CO', language: 'en' };
    await stopProjection(app, 'users', `user-${id}`, 'UserRegistered', data);

    expect((await app.http.post(`/api/v1/partner/users/${ada.id}/erase`).set(acme.headers).send()).status).to.equal(200);
    // The read model missed the erasure: it still lists the user with its email.
    const [row] = await app.tally.sql.query<{ email: string | null }>('SELECT email FROM rm_users WHERE user_id = $1', [ada.id]);
    expect(row?.email).to.equal(ada.email);
    const verified = await app.http.post('/api/v1/partner/auth/verify').set(acme.headers).send({ email: ada.email, code });
    expect([verified.status, verified.body.code]).to.deep.equal([401, 'invalid_login_code']);
    const res = await app.http.get('/api/v1/user/accounts').set(ada.bearer);
    expect([res.status, res.body.code]).to.deep.equal([401, 'token_invalid']);
  });
});

/** The ledger read model stopped (it cannot reach the log's head): whether a deposit is pending is unknown, so nothing is erased. */
describe('erasing a user while the ledger read model cannot catch up', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
  });
  after(() => app.close());

  it('answers 503 and erases nothing, rather than trust a read model that may miss a pending deposit', async () => {
    const who = await customer(app.http, acme);
    // Stop the ledger projection: an AccountOpened it cannot apply (no account id).
    const data = { userId: who.id, partnerId: acme.id, asset: 'USDC', type: 'LIABILITY', at: new Date().toISOString() };
    await stopProjection(app, 'ledger', `account-${randomUUID()}`, 'AccountOpened', data);
    const res = await app.http.post(`/api/v1/partner/users/${who.id}/erase`).set(acme.headers).send();
    expect([res.status, res.body.error, res.body.code]).to.deep.equal([503, 'Service unavailable', 'service_unavailable']);
    expect((await app.http.get(`/api/v1/partner/users/${who.id}`).set(acme.headers)).status).to.equal(200);
  });
});

/**
 * A notification the outbox built from the read models before they had the erasure (the user's email
 * in it) and writes after the erasure's scrub ran would keep the email: the erasure waits for the
 * outbox to pass the log's head before it scrubs. Forced here by holding the outbox's batch between
 * its build and its commit.
 */
describe('erasing a user while the outbox holds a notification about them', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
  });
  after(() => app.close());

  it('scrubs it once the outbox has written it: no notification keeps the email', async () => {
    const ada = await customer(app.http, acme);
    const outbox = app.tally.notifications.outbox;
    const handle = outbox.handle.bind(outbox);
    let built: () => void = () => {};
    const wasBuilt = new Promise<void>((resolve) => {
      built = resolve;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    outbox.handle = async (events) => {
      const writes = await handle(events);
      if (events.some((e) => e.type === 'UserStatusChanged' && e.stream === userStream(ada.id))) {
        built();
        await released;
      }
      return writes;
    };
    try {
      const suspended = await app.http.post(`/admin/v1/users/${ada.id}/suspend`).set(admin).send({ reason: 'erasure test' });
      expect(suspended.status, suspended.text).to.equal(200);
      await wasBuilt;
      // Sent now (a supertest request starts when awaited or then'd).
      const erasing = app.http
        .post(`/api/v1/partner/users/${ada.id}/erase`)
        .set(acme.headers)
        .send()
        .then((res) => res);
      // The erasure has appended and is waiting for the outbox; the held batch (the email in it) goes on.
      await new Promise((resolve) => setTimeout(resolve, 300));
      release();
      const erased = await erasing;
      expect(erased.status, erased.text).to.equal(200);
    } finally {
      release();
      outbox.handle = handle;
    }
    // Whatever the outbox held is written by now.
    expect(await app.tally.reactors.passed('outbox', await lastWrittenPosition(app), 5_000)).to.equal(true);
    const [stored] = await app.tally.sql.query<{ n: string; about: string }>(
      `SELECT count(*) FILTER (WHERE strpos(body, $1) > 0)::text AS n, count(*) FILTER (WHERE strpos(body, $2) > 0)::text AS about FROM notification_events`,
      [ada.email, ada.id],
    );
    expect(Number(stored?.about), 'notifications about the user, the suspension’s among them').to.be.at.least(4);
    expect(stored?.n, 'notifications keeping the email').to.equal('0');
  });
});
