import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createPartner, lastWritten, type PartnerCredentials, startTestApp } from '../support/app';
import { balanceOf, type Customer, customer, fund, PAYER, PAYOUT_DESTINATION, payoutRequest } from '../support/ledger';
import { type PayoutProvider, PayoutRefused } from '../../src/providers/ledger/payouts/port';

describe('ledger over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let globex: PartnerCredentials;
  let alice: Customer;
  let bob: Customer;
  let mallory: Customer;
  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    globex = await createPartner(app.http, 'Globex');
    alice = await customer(app.http, acme);
    bob = await customer(app.http, acme);
    mallory = await customer(app.http, globex);
  });
  after(async () => {
    await app.close();
  });

  const transfer = (who: Customer, body: Record<string, unknown>) => app.http.post('/api/v1/transactions/transfer').set(who.bearer).send(body);
  const deposit = (who: Customer, body: Record<string, unknown>) =>
    app.http
      .post('/api/v1/transactions/deposit')
      .set(who.bearer)
      .send({ toAccountId: who.accountId, amount: 10, currency: 'USDC', provider: 'mock', description: 'd', metadata: PAYER, ...body });

  describe('accounts', () => {
    it('shows the one USDC LIABILITY account opened at first login, with zero balances', async () => {
      const fresh = await customer(app.http, acme);
      const res = await app.http.get('/api/v1/user/accounts').set(fresh.bearer);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({
        items: [{ id: fresh.accountId, asset: 'USDC', type: 'LIABILITY', credits: '0.00000000', debits: '0.00000000' }],
        meta: { totalItems: 1, currentPage: 1 },
      });
      const balance = await app.http.get('/api/v1/user/balance').set(fresh.bearer);
      expect(balance.body.meta).to.deep.equal({ totalItems: 1, totalPages: 1, currentPage: 1, itemsPerPage: 20 });
      expect(balance.body.items).to.deep.equal(res.body.items);
    });

    it('refuses manual account creation with 410', async () => {
      const res = await app.http.post('/api/v1/user/accounts').set(alice.bearer).send({ description: 'x', asset: 'USDC', type: 'LIABILITY' });
      expect(res.status).to.equal(410);
      expect(res.body).to.include({ success: false, error: 'Accounts are created automatically at first login', code: 'accounts_created_at_login' });
    });

    it('answers 401 on every ledger route without a token', async () => {
      for (const [method, path] of [
        ['get', '/api/v1/user/accounts'],
        ['get', '/api/v1/user/balance'],
        ['post', '/api/v1/transactions/deposit'],
        ['get', '/api/v1/transactions?accountId=1'],
        ['post', '/api/v1/transactions/transfer'],
        ['post', '/api/v1/user/payout'],
      ] as const) {
        const res = await app.http[method](path).send({});
        expect(res.status, path).to.equal(401);
        expect(res.body.error, path).to.equal('Invalid or expired token');
      }
    });
  });

  describe('deposits', () => {
    it('creates a PENDING deposit with a payment link, and credits only on confirmation, once', async () => {
      const res = await deposit(alice, { amount: 100 });
      expect(res.status).to.equal(201);
      expect(res.body).to.include({ status: 'PENDING', inferredTransactionType: 'DEPOSIT' });
      expect(res.body.paymentLink).to.match(new RegExp(`^/api/pay/[^?]+\\?transactionId=${res.body.transactionId}&amount=100(\\.0+)?&currency=USDC$`));
      const before = await balanceOf(app.http, alice);
      const pending = await app.http.get(`/api/v1/transactions/${res.body.transactionId}`).set(alice.bearer);
      expect(pending.body).to.include({ status: 'PENDING', amount: '100.00000000', creditAccountId: alice.accountId, debitAccountId: null });
      const confirm = await app.http.post(`/sandbox/v1/deposits/${res.body.transactionId}/confirm`).set(acme.headers).send();
      expect(confirm.status).to.equal(202);
      const after = await balanceOf(app.http, alice);
      expect(Number(after.credits) - Number(before.credits)).to.equal(100);
      // The provider reports it again (a new event id): nothing moves twice.
      expect((await app.http.post(`/sandbox/v1/deposits/${res.body.transactionId}/confirm`).set(acme.headers).send()).status).to.equal(202);
      expect(await balanceOf(app.http, alice)).to.deep.equal(after);
      const done = await app.http.get(`/api/v1/transactions/${res.body.transactionId}`).set(alice.bearer);
      expect(done.body.status).to.equal('COMPLETED');
      expect(done.body.updated).to.be.a('string');
    });

    it('with x-idempotency-key: the same request again answers the first deposit and its link, and makes no second one', async () => {
      const who = await customer(app.http, acme);
      const key: string = randomUUID();
      const send = (body: Record<string, unknown>, k: string = key, as: Customer = who) => deposit(as, body).set('x-idempotency-key', k);
      const first = await send({ amount: 25 });
      expect(first.status).to.equal(201);
      // Sent again (the key in capitals, the amount written another way): the first answer.
      for (const again of [await send({ amount: 25 }), await send({ amount: '25.00' }, key.toUpperCase())]) {
        expect(again.status).to.equal(201);
        expect(again.body).to.deep.equal(first.body);
      }
      // Copies sent at once: each answers the first deposit, or is told a copy is still running.
      const copies = await Promise.all(Array.from({ length: 4 }, () => send({ amount: 25 })));
      for (const r of copies) {
        if (r.status === 201) expect(r.body).to.deep.equal(first.body);
        else expect([r.status, r.body.error, r.body.code]).to.deep.equal([400, 'Duplicate request in progress', 'duplicate_request_in_progress']);
      }
      const list = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}`).set(who.bearer);
      expect(list.body.map((t: { uuid: string }) => t.uuid)).to.deep.equal([first.body.transactionId]);
      // The key with another request (another amount, another user of the partner, or a transfer): 422.
      const other = await customer(app.http, acme);
      for (const reused of [await send({ amount: 26 }), await send({ amount: 25, toAccountId: other.accountId }, key, other)]) {
        expect(reused.status).to.equal(422);
        expect(reused.body).to.include({ error: 'Idempotency key reused with different parameters', code: 'idempotency_key_reused' });
      }
      await fund(app.http, acme, who, '5');
      const transferKey = randomUUID();
      expect((await transfer(who, { toAccountId: other.accountId, amount: '1', description: 't' }).set('x-idempotency-key', transferKey)).status).to.equal(201);
      const crossed = await send({ amount: 1 }, transferKey);
      expect([crossed.status, crossed.body.error, crossed.body.code]).to.deep.equal([
        422,
        'Idempotency key reused with different parameters',
        'idempotency_key_reused',
      ]);
      // Not a UUID: the decided 400.
      const bad = await send({ amount: 25 }, 'abc');
      expect([bad.status, bad.body.error]).to.deep.equal([400, 'x-idempotency-key must be a UUID']);
      // Both key headers, naming two keys: which one is meant is not known.
      const both = await send({ amount: 25 }).set('Idempotency-Key', randomUUID());
      expect(both.body).to.include({
        error: 'Idempotency-Key and x-idempotency-key must be the same when both are sent',
        code: 'idempotency_keys_differ',
        param: 'Idempotency-Key',
      });
      // Paid once: credited once.
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '5.00000000', debits: '1.00000000' });
      expect((await app.http.post(`/sandbox/v1/deposits/${first.body.transactionId}/confirm`).set(acme.headers).send()).status).to.equal(202);
      expect((await send({ amount: 25 })).body).to.deep.equal(first.body);
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '30.00000000', debits: '1.00000000' });
    });

    it('marks a failed payment FAILED and credits nothing', async () => {
      const res = await deposit(alice, { amount: 5 });
      const before = await balanceOf(app.http, alice);
      expect((await app.http.post(`/sandbox/v1/deposits/${res.body.transactionId}/fail`).set(acme.headers).send()).status).to.equal(202);
      expect((await app.http.get(`/api/v1/transactions/${res.body.transactionId}`).set(alice.bearer)).body.status).to.equal('FAILED');
      expect(await balanceOf(app.http, alice)).to.deep.equal(before);
      const again = await app.http.post(`/sandbox/v1/deposits/${res.body.transactionId}/confirm`).set(acme.headers).send();
      expect(again.status).to.equal(409);
      expect(again.body.code).to.equal('payment_already_decided');
      expect(again.body.error).to.match(/^Mock payment \S+ is already failed$/);
      // The hosted payment page of a payment the mock does not know.
      const unknown = await app.http.get('/api/pay/pay_mock_unknown');
      expect([unknown.status, unknown.body.error, unknown.body.code]).to.deep.equal([404, 'Payment not found', 'payment_not_found']);
      expect(await balanceOf(app.http, alice)).to.deep.equal(before);
    });

    const invalid: Array<[string, Record<string, unknown>, number, string, string?]> = [
      ['no description', { description: undefined }, 400, 'description must be a string'],
      ['a numeric description', { description: 12 }, 400, 'description must be a string'],
      ['no metadata', { metadata: undefined }, 400, 'Payer information is required for deposits'],
      ['no payer', { metadata: {} }, 400, 'Payer information is required for deposits'],
      ['no document type', { metadata: { payer: { documentNumber: '1' } } }, 400, 'Payer document type and number are required for deposits'],
      ['no document number', { metadata: { payer: { documentType: 'CC' } } }, 400, 'Payer document type and number are required for deposits'],
      [
        'a blank document number',
        { metadata: { payer: { documentType: 'CC', documentNumber: ' \u00a0' } } },
        400,
        'Payer document type and number are required for deposits',
      ],
      ['a zero amount', { amount: 0 }, 400, 'Amount must be greater than 0', 'amount_not_positive'],
      ['a negative amount', { amount: -5 }, 400, 'Amount must be greater than 0', 'amount_not_positive'],
      ['nine decimals', { amount: '1.123456789' }, 400, 'amount must have at most 8 decimal places', 'amount_too_precise'],
      ['19 integer digits', { amount: '1234567890123456789' }, 400, 'amount must have at most 18 integer digits', 'amount_too_large'],
      ['another currency', { currency: 'COP' }, 400, 'currency must match the account asset (USDC)', 'currency_mismatch'],
      ['an unknown provider', { provider: 'acmepay' }, 400, 'Unsupported payment provider: acmepay', 'unsupported_payment_provider'],
      ['no toAccountId', { toAccountId: undefined }, 400, 'toAccountId is required'],
    ];
    for (const [name, body, status, message, code = 'validation_error'] of invalid) {
      it(`answers ${status} "${message}" for ${name}, and records nothing`, async () => {
        const before = await app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_transactions');
        const res = await deposit(alice, body);
        expect(res.status).to.equal(status);
        expect(res.body).to.include({ success: false, error: message, code });
        expect(await app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_transactions')).to.deep.equal(before);
      });
    }

    it('keeps deposits to other accounts out: 403 same partner, 404 other partner or unknown', async () => {
      const other = await deposit(alice, { toAccountId: bob.accountId });
      expect(other.status).to.equal(403);
      expect(other.body).to.include({ error: 'Account does not belong to the authenticated user', code: 'account_of_another_user' });
      for (const toAccountId of [mallory.accountId, 99_999_999]) {
        const res = await deposit(alice, { toAccountId });
        expect(res.status).to.equal(404);
        expect(res.body).to.include({ error: 'Account not found', code: 'account_not_found' });
      }
    });
  });

  describe('transfers', () => {
    before(async () => {
      await fund(app.http, acme, alice, '1000');
    });

    it('with x-idempotency-key: the same request again answers the first transfer and moves no money again', async () => {
      const sender = await customer(app.http, acme);
      const receiver = await customer(app.http, acme);
      await fund(app.http, acme, sender, '10');
      const key: string = randomUUID();
      const body = { toAccountId: receiver.accountId, amount: '1.5', description: 'rent' };
      const send = (who: Customer, b: Record<string, unknown>, k: string = key) => transfer(who, b).set('x-idempotency-key', k);
      const first = await send(sender, body);
      expect(first.status).to.equal(201);
      // Sent again (one after the other, the key in capitals, the amount written another way): the first answer.
      for (const again of [await send(sender, body), await send(sender, body, key.toUpperCase()), await send(sender, { ...body, amount: 1.5 })]) {
        expect(again.status).to.equal(201);
        expect(again.body).to.deep.equal(first.body);
      }
      expect(await balanceOf(app.http, receiver)).to.deep.equal({ credits: '1.50000000', debits: '0.00000000' });
      expect(await balanceOf(app.http, sender)).to.deep.equal({ credits: '10.00000000', debits: '1.50000000' });
      // The key with another request (another amount, or another user of the partner): 422, nothing moves.
      const other = await customer(app.http, acme);
      await fund(app.http, acme, other, '10');
      for (const [who, b] of [
        [sender, { ...body, amount: '2' }],
        [other, body],
      ] as Array<[Customer, Record<string, unknown>]>) {
        const reused = await send(who, b);
        expect(reused.status).to.equal(422);
        expect(reused.body).to.include({ error: 'Idempotency key reused with different parameters', code: 'idempotency_key_reused' });
      }
      expect(await balanceOf(app.http, receiver)).to.deep.equal({ credits: '1.50000000', debits: '0.00000000' });
      // Keys are per partner: another partner's user with the same key is not a reuse (its own rules answer).
      expect((await send(mallory, { toAccountId: mallory.accountId, amount: '1', description: 'x' })).body.error).to.equal(
        'Cannot transfer to the same account',
      );
      // Not a UUID: the decided 400, nothing moves.
      const bad = await send(sender, body, 'abc');
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.equal('x-idempotency-key must be a UUID');
      // Copies sent at once: one transfer; each copy answers it, or is told the first is still running.
      const raced = randomUUID();
      const copies = await Promise.all(Array.from({ length: 6 }, () => send(sender, { ...body, amount: '0.25' }, raced)));
      const made = copies.filter((r) => r.status === 201);
      expect(made.length).to.be.at.least(1);
      for (const r of made) expect(r.body).to.deep.equal((made[0] as (typeof made)[number]).body);
      for (const r of copies.filter((c) => c.status !== 201))
        expect([r.status, r.body.error, r.body.code]).to.deep.equal([400, 'Duplicate request in progress', 'duplicate_request_in_progress']);
      expect(await balanceOf(app.http, receiver)).to.deep.equal({ credits: '1.75000000', debits: '0.00000000' });
      // The transfer is an ordinary ledger transaction under its uuid.
      const txn = await app.http.get(`/api/v1/transactions/${first.body.uuid}`).set(sender.bearer);
      expect(txn.body).to.include({ id: first.body.id, uuid: first.body.uuid, status: 'COMPLETED', amount: '1.50000000' });
    });

    it('moves money at once, COMPLETED, exactly to the cent (0.1 + 0.2 = 0.3)', async () => {
      const sender = await customer(app.http, acme);
      const receiver = await customer(app.http, acme);
      await fund(app.http, acme, sender, '1');
      const first = await transfer(sender, { toAccountId: receiver.accountId, amount: 0.1, description: 'a' });
      expect(first.status).to.equal(201);
      expect(first.body).to.include({ status: 'COMPLETED', amount: 0.1, description: 'a' });
      expect(first.body.id).to.be.a('number');
      expect(first.body.uuid).to.match(/^[0-9a-f-]{36}$/);
      await transfer(sender, { toAccountId: receiver.accountId, amount: '0.2', description: 'b' });
      expect(await balanceOf(app.http, receiver)).to.deep.equal({ credits: '0.30000000', debits: '0.00000000' });
      expect(await balanceOf(app.http, sender)).to.deep.equal({ credits: '1.00000000', debits: '0.30000000' });
      await transfer(sender, { toAccountId: receiver.accountId, amount: '0.00000001', description: 'c' });
      expect((await balanceOf(app.http, receiver)).credits).to.equal('0.30000001');
      const list = await app.http.get(`/api/v1/transactions?accountId=${receiver.accountId}`).set(receiver.bearer);
      expect(list.body.map((t: { amount: string }) => t.amount)).to.deep.equal(['0.00000001', '0.20000000', '0.10000000']);
      expect(list.body[0]).to.not.have.property('updated');
    });

    it('takes the smallest unit as a JSON number, 18 integer digits as a string, and refuses numbers a double cannot hold exactly', async () => {
      const sender = await customer(app.http, acme);
      await fund(app.http, acme, sender, '1');
      const tiny = await transfer(sender, { toAccountId: bob.accountId, amount: 0.00000001, description: 'one unit' });
      expect(tiny.status).to.equal(201);
      expect(tiny.body.amount).to.equal(0.00000001);
      expect(await balanceOf(app.http, sender)).to.deep.equal({ credits: '1.00000000', debits: '0.00000001' });
      const big = await deposit(sender, { amount: '999999999999999999.99999999' });
      expect(big.status).to.equal(201);
      expect((await app.http.get(`/api/v1/transactions/${big.body.transactionId}`).set(sender.bearer)).body.amount).to.equal('999999999999999999.99999999');
      const imprecise = await deposit(sender, { amount: 1234567890.1234567 });
      expect(imprecise.status).to.equal(400);
      expect(imprecise.body).to.include({
        error: 'amount has more than 15 significant digits: send it as a decimal string',
        code: 'amount_imprecise_number',
        param: 'amount',
      });
    });

    it('defaults the source to the token user’s account', async () => {
      const res = await transfer(alice, { toAccountId: bob.accountId, amount: 1, description: 'default source' });
      expect(res.status).to.equal(201);
      const txn = await app.http.get(`/api/v1/transactions/${res.body.uuid}`).set(alice.bearer);
      expect(txn.body).to.include({ debitAccountId: alice.accountId, creditAccountId: bob.accountId, status: 'COMPLETED' });
      // The receiver sees it too; a third user of the same partner gets 403.
      expect((await app.http.get(`/api/v1/transactions/${res.body.uuid}`).set(bob.bearer)).status).to.equal(200);
      const third = await customer(app.http, acme);
      const forbidden = await app.http.get(`/api/v1/transactions/${res.body.uuid}`).set(third.bearer);
      expect(forbidden.status).to.equal(403);
      expect(forbidden.body).to.include({ error: 'Transaction does not belong to the authenticated user', code: 'transaction_of_another_user' });
      const otherPartner = await app.http.get(`/api/v1/transactions/${res.body.uuid}`).set(mallory.bearer);
      expect(otherPartner.status).to.equal(404);
      expect(otherPartner.body).to.include({ error: 'Transaction not found', code: 'transaction_not_found' });
    });

    const errors: Array<[string, () => Record<string, unknown>, number, string, string]> = [
      [
        'to the same account',
        () => ({ toAccountId: alice.accountId, amount: 1, description: 'x' }),
        400,
        'Cannot transfer to the same account',
        'same_account_transfer',
      ],
      [
        'from an underfunded account',
        () => ({ toAccountId: bob.accountId, amount: 1_000_000, description: 'x' }),
        400,
        `Amount exceeds maximum transaction amount of 10000`,
        'amount_exceeds_maximum',
      ],
      [
        'to an unknown account',
        () => ({ toAccountId: 99_999_999, amount: 1, description: 'x' }),
        400,
        'One or both accounts do not exist',
        'accounts_not_found',
      ],
      [
        'to another partner’s account',
        () => ({ toAccountId: mallory.accountId, amount: 1, description: 'x' }),
        400,
        'One or both accounts do not exist',
        'accounts_not_found',
      ],
      [
        'from an unknown account',
        () => ({ fromAccountId: 99_999_999, toAccountId: bob.accountId, amount: 1, description: 'x' }),
        400,
        'One or both accounts do not exist',
        'accounts_not_found',
      ],
      [
        'from another user’s account',
        () => ({ fromAccountId: bob.accountId, toAccountId: alice.accountId, amount: 1, description: 'x' }),
        403,
        'Account does not belong to the authenticated user',
        'account_of_another_user',
      ],
      ['of zero', () => ({ toAccountId: bob.accountId, amount: 0, description: 'x' }), 400, 'Amount must be greater than 0', 'amount_not_positive'],
      ['without description', () => ({ toAccountId: bob.accountId, amount: 1 }), 400, 'description must be a string', 'validation_error'],
      [
        'with nine decimals',
        () => ({ toAccountId: bob.accountId, amount: '0.000000001', description: 'x' }),
        400,
        'amount must have at most 8 decimal places',
        'amount_too_precise',
      ],
    ];
    for (const [name, body, status, message, code] of errors) {
      it(`refuses a transfer ${name}: ${status} "${message}", moving nothing`, async () => {
        const before = [await balanceOf(app.http, alice), await balanceOf(app.http, bob)];
        const res = await transfer(alice, body());
        expect(res.status).to.equal(status);
        expect(res.body).to.include({ success: false, error: message, code });
        expect([await balanceOf(app.http, alice), await balanceOf(app.http, bob)]).to.deep.equal(before);
      });
    }

    it('refuses a transfer that would overdraw: 400 "Insufficient balance in account <id>"', async () => {
      const poor = await customer(app.http, acme);
      await fund(app.http, acme, poor, '5');
      const res = await transfer(poor, { toAccountId: bob.accountId, amount: '5.00000001', description: 'x' });
      expect(res.status).to.equal(400);
      expect(res.body).to.include({ error: `Insufficient balance in account ${poor.accountId}`, code: 'insufficient_balance' });
      expect((await transfer(poor, { toAccountId: bob.accountId, amount: '5', description: 'all' })).status).to.equal(201);
      expect(await balanceOf(app.http, poor)).to.deep.equal({ credits: '5.00000000', debits: '5.00000000' });
    });

    it('enforces the daily limit on outgoing money', async () => {
      const rich = await customer(app.http, acme);
      await fund(app.http, acme, rich, '60000');
      for (let i = 0; i < 5; i++) expect((await transfer(rich, { toAccountId: bob.accountId, amount: 10000, description: `d${i}` })).status).to.equal(201);
      const over = await transfer(rich, { toAccountId: bob.accountId, amount: '0.00000001', description: 'one too many' });
      expect(over.status).to.equal(400);
      expect(over.body).to.include({ error: 'Daily transaction limit exceeded', code: 'daily_limit_exceeded' });
    });

    it('lets exactly 1,000 of 2,000 concurrent 1-unit transfers out of an account holding 1,000 succeed', async function () {
      this.timeout(180_000);
      const source = await customer(app.http, acme);
      const sinks = [await customer(app.http, acme), await customer(app.http, acme)];
      await fund(app.http, acme, source, '1000');
      const statuses: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < 2000) {
            const i = next++;
            const sink = sinks[i % 2] as Customer;
            const res = await transfer(source, { toAccountId: sink.accountId, amount: 1, description: `race ${i}` });
            statuses.push(res.status);
          }
        }),
      );
      const counts: Record<number, number> = {};
      for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
      expect(counts).to.deep.equal({ 201: 1000, 400: 1000 });
      expect(statuses.filter((s) => s === 201)).to.have.length(1000);
      expect(statuses.filter((s) => s === 400)).to.have.length(1000);
      expect(await balanceOf(app.http, source)).to.deep.equal({ credits: '1000.00000000', debits: '1000.00000000' });
      const received = await Promise.all(sinks.map((s) => balanceOf(app.http, s)));
      expect(received.reduce((sum, b) => sum + Number(b.credits), 0)).to.equal(1000);
    });
  });

  describe('transaction reads', () => {
    it('lists with accountId required, limits, pages and dates; ownership as decided', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '10');
      for (let i = 0; i < 3; i++) await transfer(who, { toAccountId: bob.accountId, amount: 1, description: `t${i}` });
      const missing = await app.http.get('/api/v1/transactions').set(who.bearer);
      expect(missing.status).to.equal(400);
      expect(missing.body.error).to.equal('accountId is required');
      const all = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}`).set(who.bearer);
      expect(all.body.map((t: { description: string }) => t.description)).to.deep.equal(['t2', 't1', 't0', 'top up']);
      const page = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&limit=2&page=2`).set(who.bearer);
      expect(page.body.map((t: { description: string }) => t.description)).to.deep.equal(['t0', 'top up']);
      expect((await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&limit=101`).set(who.bearer)).status).to.equal(400);
      const future = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&from=2999-01-01`).set(who.bearer);
      expect(future.body).to.deep.equal([]);
      const past = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&to=2000-01-01`).set(who.bearer);
      expect(past.body).to.deep.equal([]);
      // A date alone is its first instant (UTC), for either bound: day D is from=D&to=D+1, and to=D
      // stops before anything made during D.
      const created = all.body[0].created as string;
      const day = created.slice(0, 10);
      const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
      const today = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&from=${day}&to=${next}`).set(who.bearer);
      expect(today.body.map((t: { description: string }) => t.description)).to.deep.equal(['t2', 't1', 't0', 'top up']);
      const toDay = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&from=${day}&to=${day}`).set(who.bearer);
      expect(toDay.body.filter((t: { created: string }) => t.created > `${day}T00:00:00.000Z`)).to.deep.equal([]);
      // A date-time bound is that instant, with its offset (none is UTC), and includes it.
      const upTo = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&to=${encodeURIComponent(created)}`).set(who.bearer);
      expect(upTo.body[0].description).to.equal('t2');
      const shifted = created.replace('Z', '+01:00');
      const before = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&to=${encodeURIComponent(shifted)}`).set(who.bearer);
      expect(before.body.map((t: { description: string }) => t.description)).to.not.include('t2');
      // Dates that do not exist are a 400 with the schema's message, not a database error.
      for (const [name, value] of [
        ['from', '2024-02-30'],
        ['to', '2024-01-01T99:99'],
        ['from', '2023-02-29T10:00:00Z'],
        ['to', '2024-01-01T10:00:00+25:00'],
        ['from', '2024-13-01'],
      ]) {
        const bad = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&${name}=${encodeURIComponent(value as string)}`).set(who.bearer);
        expect(bad.status, `${name}=${value}`).to.equal(400);
        expect(bad.body.error).to.equal(`${name} must be an ISO 8601 date`);
      }
      expect((await app.http.get(`/api/v1/transactions?accountId=${who.accountId}&from=2024-02-29T23:59:59.999999Z`).set(who.bearer)).status).to.equal(200);
      const other = await app.http.get(`/api/v1/transactions?accountId=${bob.accountId}`).set(who.bearer);
      expect(other.status).to.equal(403);
      expect(other.body).to.include({ error: 'Account does not belong to the authenticated user', code: 'account_of_another_user' });
      const foreign = await app.http.get(`/api/v1/transactions?accountId=${mallory.accountId}`).set(who.bearer);
      expect(foreign.status).to.equal(404);
      expect(foreign.body).to.include({ error: 'Account not found', code: 'account_not_found' });
      expect((await app.http.get(`/api/v1/transactions/${randomUUID()}`).set(who.bearer)).body).to.include({
        error: 'Transaction not found',
        code: 'transaction_not_found',
      });
      expect((await app.http.get('/api/v1/transactions/not-a-uuid').set(who.bearer)).body).to.include({ code: 'transaction_not_found' });
    });

    it('computes a balance at an instant from the log', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '10');
      await new Promise((r) => setTimeout(r, 30));
      const between = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 30));
      await fund(app.http, acme, who, '5');
      const then = await app.http.get(`/api/v1/user/balance?at=${encodeURIComponent(between)}`).set(who.bearer);
      expect(then.body.items[0]).to.include({ credits: '10.00000000', debits: '0.00000000' });
      const now = await app.http.get('/api/v1/user/balance').set(who.bearer);
      expect(now.body.items[0].credits).to.equal('15.00000000');
    });
  });

  describe('payouts', () => {
    const payout = (who: Customer, body: Record<string, unknown> = {}) => app.http.post('/api/v1/user/payout').set(who.bearer).send(payoutRequest(body));

    it('holds the converted USDC at acceptance and settles later', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const transactionId = randomUUID();
      const res = await payout(who, { transactionId });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ success: true, status: 'PROCESSING' });
      expect(res.body.paymentId).to.be.a('string');
      // 40,000 COP at 4,000 COP per USDC = 10 USDC, held at once.
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '10.00000000' });
      const txn = await app.http.get(`/api/v1/transactions/${transactionId}`).set(who.bearer);
      expect(txn.body).to.include({ uuid: transactionId, status: 'PROCESSING', amount: '10.00000000', debitAccountId: who.accountId });
      // The single read always says when it last changed (lists leave it out).
      expect(Date.parse(txn.body.updated)).to.be.at.least(Date.parse(txn.body.created));
      expect((await app.http.post(`/sandbox/v1/payouts/${res.body.paymentId}/settle`).set(acme.headers).send()).status).to.equal(202);
      expect((await app.http.get(`/api/v1/transactions/${transactionId}`).set(who.bearer)).body.status).to.equal('COMPLETED');
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '10.00000000' });
    });

    it('keeps held payout funds out of reach until the payout settles or fails', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const res = await payout(who);
      expect(res.status).to.equal(200);
      // 10 USDC held: 90 are available, not 100.
      const over = await transfer(who, { toAccountId: bob.accountId, amount: '90.00000001', description: 'too much' });
      expect(over.status).to.equal(400);
      expect(over.body.error).to.equal(`Insufficient balance in account ${who.accountId}`);
      expect((await transfer(who, { toAccountId: bob.accountId, amount: '90', description: 'all that is left' })).status).to.equal(201);
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '100.00000000' });
    });

    it('returns the funds with a REVERSED credit when the payout fails', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const transactionId = randomUUID();
      const res = await payout(who, { transactionId });
      await app.http.post(`/sandbox/v1/payouts/${res.body.paymentId}/fail`).set(acme.headers).send({ reason: 'account_closed' });
      expect((await app.http.get(`/api/v1/transactions/${transactionId}`).set(who.bearer)).body.status).to.equal('FAILED');
      const list = await app.http.get(`/api/v1/transactions?accountId=${who.accountId}`).set(who.bearer);
      expect(list.body.map((t: { status: string }) => t.status)).to.deep.equal(['REVERSED', 'FAILED', 'COMPLETED']);
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '110.00000000', debits: '10.00000000' });
      // The provider saying it twice changes nothing; it cannot settle it afterwards.
      await app.http.post(`/sandbox/v1/payouts/${res.body.paymentId}/fail`).set(acme.headers).send({ reason: 'account_closed' });
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '110.00000000', debits: '10.00000000' });
      const settle = await app.http.post(`/sandbox/v1/payouts/${res.body.paymentId}/settle`).set(acme.headers).send();
      expect(settle.status).to.equal(409);
      expect(settle.body).to.include({ error: `Mock payout ${res.body.paymentId} is already failed`, code: 'payout_already_decided' });
    });

    it('no longer counts a failed payout to the daily limit once its funds are returned', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '60000');
      for (let i = 0; i < 4; i++) expect((await transfer(who, { toAccountId: bob.accountId, amount: 10000, description: `d${i}` })).status).to.equal(201);
      // 40,000,000 COP at 4,000 COP per USDC = 10,000 USDC: the day's outgoing total reaches the 50,000 limit.
      const res = await payout(who, { amount: 40_000_000 });
      expect(res.status).to.equal(200);
      const over = await transfer(who, { toAccountId: bob.accountId, amount: '0.00000001', description: 'over' });
      expect(over.body.error).to.equal('Daily transaction limit exceeded');
      expect((await app.http.post(`/sandbox/v1/payouts/${res.body.paymentId}/fail`).set(acme.headers).send({ reason: 'account_closed' })).status).to.equal(202);
      // The 10,000 came back, so 10,000 may go out again today, and not a unit more.
      expect((await transfer(who, { toAccountId: bob.accountId, amount: 10000, description: 'again' })).status).to.equal(201);
      const still = await transfer(who, { toAccountId: bob.accountId, amount: '0.00000001', description: 'over again' });
      expect(still.status).to.equal(400);
      expect(still.body.error).to.equal('Daily transaction limit exceeded');
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '70000.00000000', debits: '60000.00000000' });
    });

    it('answers a retry with the same transactionId and body with the first answer, moving no money again', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const body = { transactionId: randomUUID() };
      const first = await payout(who, body);
      const again = await Promise.all([payout(who, body), payout(who, body)]);
      for (const res of again) {
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal(first.body);
      }
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '10.00000000' });
      // Settled since: a retry still gets the first answer (GET and webhooks tell the status).
      expect((await app.http.post(`/sandbox/v1/payouts/${first.body.paymentId}/settle`).set(acme.headers).send()).status).to.equal(202);
      const later = await payout(who, body);
      expect(later.status).to.equal(200);
      expect(later.body).to.deep.equal({ success: true, paymentId: first.body.paymentId, status: 'PROCESSING', message: 'Payout accepted' });
      const upper = await payout(who, { transactionId: body.transactionId.toUpperCase() });
      expect(upper.status).to.equal(200);
      expect(upper.body.paymentId).to.equal(first.body.paymentId);
      const different = await payout(who, { ...body, amount: 40001 });
      expect(different.status).to.equal(409);
      expect(different.body).to.include({
        error: 'transactionId already used with different parameters',
        code: 'transaction_id_reused',
        param: 'transactionId',
      });
    });

    it('keeps a refusal under its key: the same retry is refused even after funding', async () => {
      const who = await customer(app.http, acme);
      const body = { transactionId: randomUUID() };
      const refused = await payout(who, body);
      expect(refused.status).to.equal(400);
      expect(refused.body).to.include({ success: false, error: `Insufficient balance in account ${who.accountId}`, code: 'insufficient_balance' });
      await fund(app.http, acme, who, '100');
      // The kept refusal, in the error envelope as the first was (its code, a requestId of its own), marked as given again.
      const retry = await payout(who, body);
      expect(retry.status).to.equal(400);
      expect(retry.body).to.include({ success: false, error: `Insufficient balance in account ${who.accountId}`, code: 'insufficient_balance' });
      expect(retry.body.requestId).to.be.a('string').and.not.equal(refused.body.requestId);
      expect(retry.headers['idempotent-replayed']).to.equal('true');
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '0.00000000' });
    });

    /** A funded customer, a payout key, and the mock payout provider out of reach (the caller brings it back). */
    const fundedWhileProviderDown = async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const sandbox = app.tally.providers.sandbox;
      if (!sandbox) throw new Error('sandbox off');
      sandbox.payouts.setAvailability(false);
      return { who, sandbox, body: { transactionId: randomUUID() } };
    };

    it('keeps the funds held when the provider is out of reach (503), and hands the payout over on retry', async () => {
      const { who, sandbox, body } = await fundedWhileProviderDown();
      try {
        // Whether an unreachable provider took the payout is not known: returning the funds could
        // pay twice, so they stay held and the payout stays PENDING.
        const res = await payout(who, body);
        expect(res.status).to.equal(503);
        expect(res.body).to.include({ success: false, error: 'Service unavailable' });
        expect(res.headers['retry-after']).to.equal('1');
        expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '10.00000000' });
        // Held, not taken by the provider: PENDING.
        expect((await app.http.get(`/api/v1/transactions/${body.transactionId}`).set(who.bearer)).body.status).to.equal('PENDING');
        expect((await payout(who, body)).status).to.equal(503);
      } finally {
        sandbox.payouts.setAvailability(true);
      }
      const retry = await payout(who, body);
      expect(retry.status).to.equal(200);
      expect(retry.body).to.include({ success: true, status: 'PROCESSING', message: 'Payout accepted' });
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '10.00000000' });
      expect((await payout(who, body)).body).to.deep.equal(retry.body);
    });

    it('hands a held payout nobody asked about again to its provider once the provider is back (the sweep)', async () => {
      const { who, sandbox, body } = await fundedWhileProviderDown();
      try {
        expect((await payout(who, body)).status).to.equal(503);
        // Still out of reach: the sweep leaves it held for the next one.
        await app.tally.ledger.payouts.resubmitStale(0);
        expect((await app.http.get(`/api/v1/transactions/${body.transactionId}`).set(who.bearer)).body.status).to.equal('PENDING');
      } finally {
        sandbox.payouts.setAvailability(true);
      }
      // Not yet stale: left alone.
      expect(await app.tally.ledger.payouts.resubmitStale(3_600)).to.equal(0);
      expect(await app.tally.ledger.payouts.resubmitStale(0)).to.be.at.least(1);
      expect((await app.http.get(`/api/v1/transactions/${body.transactionId}`).set(who.bearer)).body.status).to.equal('PROCESSING');
      expect(await sandbox.payouts.findByTransaction(body.transactionId)).to.include({ status: 'processing' });
      // The partner's retry then gets the acceptance the sweep recorded; no money moved twice.
      const retry = await payout(who, body);
      expect(retry.status).to.equal(200);
      expect(retry.body).to.include({ success: true, status: 'PROCESSING', message: 'Payout accepted' });
      expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '100.00000000', debits: '10.00000000' });
      expect(await app.tally.ledger.payouts.resubmitStale(0)).to.equal(0);
    });

    it('answers PROCESSING once the provider took the payout, even when the provider calls it PENDING', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const sandbox = app.tally.providers.sandbox;
      if (!sandbox) throw new Error('sandbox off');
      const mock = sandbox.payouts;
      const slow: PayoutProvider = {
        name: 'slow',
        submitPayout: async (request) => ({ ...(await mock.submitPayout(request)), status: 'PENDING' }),
        parseWebhook: (raw, headers) => mock.parseWebhook(raw, headers),
      };
      app.tally.providers.payouts.set('slow', slow);
      try {
        const body = { transactionId: randomUUID(), provider: 'slow' };
        const res = await payout(who, body);
        expect(res.status).to.equal(200);
        expect(res.body).to.include({ success: true, status: 'PROCESSING', message: 'Payout accepted' });
        expect((await app.http.get(`/api/v1/transactions/${body.transactionId}`).set(who.bearer)).body.status).to.equal('PROCESSING');
        expect((await payout(who, body)).body).to.deep.equal(res.body);
      } finally {
        app.tally.providers.payouts.delete('slow');
      }
    });

    it('returns the held funds when the provider refuses the payout (502), and keeps that answer', async () => {
      const who = await customer(app.http, acme);
      await fund(app.http, acme, who, '100');
      const refusing: PayoutProvider = {
        name: 'refusing',
        submitPayout: async () => {
          throw new PayoutRefused('destination account closed', 'refusing');
        },
        parseWebhook: () => {
          throw new Error('no webhooks');
        },
      };
      app.tally.providers.payouts.set('refusing', refusing);
      try {
        const body = { transactionId: randomUUID(), provider: 'refusing' };
        const res = await payout(who, body);
        expect(res.status).to.equal(502);
        expect(res.body).to.include({ success: false, error: 'Payout refused by the provider; the funds were returned', code: 'payout_refused_by_provider' });
        expect(res.body.requestId).to.be.a('string');
        expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '110.00000000', debits: '10.00000000' });
        expect((await app.http.get(`/api/v1/transactions/${body.transactionId}`).set(who.bearer)).body.status).to.equal('FAILED');
        const again = await payout(who, body);
        expect(again.status).to.equal(502);
        expect({ ...again.body, requestId: undefined }).to.deep.equal({ ...res.body, requestId: undefined });
        expect(again.headers['idempotent-replayed']).to.equal('true');
        expect(await balanceOf(app.http, who)).to.deep.equal({ credits: '110.00000000', debits: '10.00000000' });
      } finally {
        app.tally.providers.payouts.delete('refusing');
      }
    });

    const invalid: Array<[string, Record<string, unknown>, string, string?]> = [
      ['an unknown asset', { asset: 'XYZ' }, 'Unsupported asset: XYZ', 'unsupported_asset'],
      ['a zero amount', { amount: 0 }, 'Amount must be greater than 0', 'amount_not_positive'],
      ['more decimals than the asset has', { amount: '40000.001' }, 'amount must have at most 2 decimal places for COP', 'amount_too_precise_for_asset'],
      ['a bad transactionId', { transactionId: 'abc' }, 'transactionId must be a UUID'],
      ['no destination owner', { destination: { ...PAYOUT_DESTINATION, ownerName: undefined } }, 'destination.ownerName is required'],
      ['a bad account type', { destination: { ...PAYOUT_DESTINATION, accountType: 'X' } }, 'destination.accountType must be one of H, C'],
      [
        'a blank account number',
        { destination: { ...PAYOUT_DESTINATION, accountNumber: ' \t' } },
        'destination.accountNumber must be a non-empty string of at most 50 characters',
      ],
      [
        'an owner name of only whitespace',
        { destination: { ...PAYOUT_DESTINATION, ownerName: '\u2028\u3000' } },
        'destination.ownerName must be a non-empty string of at most 200 characters',
      ],
      [
        'a blank owner document number',
        { destination: { ...PAYOUT_DESTINATION, ownerDocumentNumber: '\ufeff' } },
        'destination.ownerDocumentNumber must be a non-empty string of at most 50 characters',
      ],
      [
        'a bad owner document type',
        { destination: { ...PAYOUT_DESTINATION, ownerDocumentType: 'DNI' } },
        'destination.ownerDocumentType must be one of CC, CE, NIT, PA, PPT',
      ],
      ['no source', { source: undefined }, 'source is required'],
      ['no source metadata', { source: {} }, 'source.metadata is required'],
      ['an unknown provider', { provider: 'bankco' }, 'Unsupported payout provider: bankco', 'unsupported_payout_provider'],
    ];
    for (const [name, body, message, code = 'validation_error'] of invalid) {
      it(`answers 400 "${message}" for ${name}, and writes nothing`, async () => {
        const head = await lastWritten(app);
        const res = await payout(alice, body);
        expect(res.status).to.equal(400);
        expect(res.body).to.include({ error: message, code });
        expect(await lastWritten(app)).to.equal(head);
      });
    }

    it('enforces the maximum transaction amount on the USDC debited', async () => {
      const res = await payout(alice, { amount: 40_000_004 });
      expect(res.status).to.equal(400);
      expect(res.body).to.include({ error: 'Amount exceeds maximum transaction amount of 10000', code: 'amount_exceeds_maximum', param: 'amount' });
    });
  });
});
