import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { userDecider, userStream } from '../../src/domain/identity';
import { accountCreditStream, accountStream } from '../../src/domain/ledger';
import type { StreamAppend } from '../../src/eventstore/port';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { balanceOf, type Customer, customer, fund, PAYER } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

const ZERO_BALANCE = { credits: '0.00000000', debits: '0.00000000' };
const NOT_THERE = { status: 400, error: 'One or both accounts do not exist', code: 'accounts_not_found' };

/**
 * An erased user's account is closed (docs/privacy.md, "The erased user's account"): erasure appends
 * AccountClosed to both of the account's streams in its own append, at the revisions it decided on,
 * and no money lands on it afterwards. A transfer to it is refused as to an unknown account; a
 * deposit and an erasure racing each other: one of the two wins, the other is refused, and there is
 * never money on the erased account. The write side (the account's streams) says so, and
 * the ledger read model, also rebuilt.
 */
describe('erasure closes the user’s account', () => {
  let app: App;
  let acme: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Acme');
    ada = await customer(app.http, acme);
    bob = await customer(app.http, acme);
    await fund(app.http, acme, ada, '1000');
  });
  after(() => app.close());

  const erase = (userId: string) => app.http.post(`/api/v1/partner/users/${userId}/erase`).set(acme.headers).send();
  const transfer = (from: Customer, to: number, amount: string, headers: Record<string, string> = {}) =>
    app.http
      .post('/api/v1/transactions/transfer')
      .set({ ...from.bearer, ...headers })
      .send({ fromAccountId: from.accountId, toAccountId: to, amount, description: 'to an erased user?' });
  const deposit = (who: Customer, amount: string) =>
    app.http
      .post('/api/v1/transactions/deposit')
      .set(who.bearer)
      .send({ toAccountId: who.accountId, amount, currency: 'USDC', provider: 'mock', description: 'top up', metadata: PAYER });
  /** The account's balance folded from its streams (the write side), now. */
  const inLog = (accountId: number) => app.tally.ledger.accounts.balanceAt(accountId, new Date());
  /** The account's balance in the ledger read model. */
  const inReadModel = async (accountId: number) => {
    const [row] = await app.tally.sql.query<{ credits: string; debits: string; pending: string }>(
      'SELECT credits::text AS credits, debits::text AS debits, pending_debits::text AS pending FROM rm_accounts WHERE account_id = $1',
      [accountId],
    );
    return row ? { credits: Number(row.credits), debits: Number(row.debits) + Number(row.pending) } : null;
  };
  const lastEventOf = async (stream: string) => (await app.tally.store.readStream(stream)).at(-1)?.type;

  it('appends AccountClosed to both of the account’s streams, and refuses a transfer to it, keyed or not, alone or batched with others', async () => {
    const gone = await customer(app.http, acme);
    expect((await erase(gone.id)).status).to.equal(200);
    expect(await lastEventOf(accountStream(gone.accountId))).to.equal('AccountClosed');
    expect(await lastEventOf(accountCreditStream(gone.accountId))).to.equal('AccountClosed');
    const adaBefore = await balanceOf(app.http, ada);
    const bobBefore = await balanceOf(app.http, bob);

    const alone = await transfer(ada, gone.accountId, '1');
    expect([alone.status, alone.body.error, alone.body.code], alone.text).to.deep.equal([NOT_THERE.status, NOT_THERE.error, NOT_THERE.code]);
    const keyed = await transfer(ada, gone.accountId, '1', { 'Idempotency-Key': randomUUID() });
    expect(keyed.body).to.include({ success: false, error: NOT_THERE.error, code: 'accounts_not_found' });
    // Five at once out of one account (one batch, or a few): the two to the closed account are refused alone.
    const batch = await Promise.all([gone.accountId, bob.accountId, gone.accountId, bob.accountId, bob.accountId].map((to) => transfer(ada, to, '2')));
    expect(batch.map((r) => r.status)).to.deep.equal([400, 201, 400, 201, 201]);

    const adaAfter = await balanceOf(app.http, ada);
    expect(Number(adaAfter.debits) - Number(adaBefore.debits)).to.equal(6);
    expect(Number((await balanceOf(app.http, bob)).credits) - Number(bobBefore.credits)).to.equal(6);
    expect(await inLog(gone.accountId)).to.deep.equal(ZERO_BALANCE);
    expect(await inReadModel(gone.accountId)).to.deep.equal({ credits: 0, debits: 0 });
  });

  it('keeps the closed account’s balance and history readable: the transfers it made before stay as they were', async () => {
    const gone = await customer(app.http, acme);
    expect((await transfer(ada, gone.accountId, '7')).status).to.equal(201);
    expect((await transfer(gone, bob.accountId, '7')).status).to.equal(201);
    expect((await erase(gone.id)).status).to.equal(200);
    expect(await inLog(gone.accountId)).to.deep.equal({ credits: '7.00000000', debits: '7.00000000' });
    const list = await app.http.get(`/api/v1/transactions?accountId=${bob.accountId}&limit=100`).set(bob.bearer);
    expect(list.body.some((t: { debitAccountId: number }) => t.debitAccountId === gone.accountId)).to.equal(true);
  });

  describe('a user erased by an earlier build (UserErased alone, the account left open)', () => {
    /** What an earlier build's erasure appended: UserErased, and nothing on the account. */
    const erasedAsBefore = (userId: string) => {
      const ctx = { commandId: randomUUID(), metadata: { correlationId: randomUUID(), actor: { kind: 'operator' as const, id: 'test' } } };
      const money = { unsettled: false, pending: false };
      return app.tally.commands.decide(ctx, userStream(userId), userDecider, { type: 'Erase', erasedAt: new Date().toISOString(), money });
    };

    it('erasing again (404) closes its account, when nothing is on it', async () => {
      const who = await customer(app.http, acme);
      await erasedAsBefore(who.id);
      expect(await lastEventOf(accountStream(who.accountId))).to.not.equal('AccountClosed');
      const again = await erase(who.id);
      expect([again.status, again.body.code]).to.deep.equal([404, 'user_not_found']);
      expect(await lastEventOf(accountStream(who.accountId))).to.equal('AccountClosed');
      expect(await lastEventOf(accountCreditStream(who.accountId))).to.equal('AccountClosed');
      expect((await transfer(ada, who.accountId, '1')).body.code).to.equal('accounts_not_found');
    });

    it('erasing again leaves it open, with the money a transfer put there since (for the operator to return)', async () => {
      const who = await customer(app.http, acme);
      await erasedAsBefore(who.id);
      expect((await transfer(ada, who.accountId, '2')).status).to.equal(201);
      const again = await erase(who.id);
      expect([again.status, again.body.code]).to.deep.equal([404, 'user_not_found']);
      expect(await lastEventOf(accountCreditStream(who.accountId))).to.equal('FundsCredited');
      expect(await inLog(who.accountId)).to.deep.equal({ credits: '2.00000000', debits: '0.00000000' });
    });
  });

  describe('a credit and the erasure in one another’s way (each appended while the other was being decided)', () => {
    /**
     * Runs `meanwhile` once, just before the first append for which `when` holds reaches the store:
     * that append was decided before `meanwhile` wrote anything.
     */
    function beforeAppend(when: (appends: StreamAppend[]) => boolean, meanwhile: () => Promise<void>): () => void {
      const store = app.tally.store;
      const original = store.appendMany;
      let done = false;
      store.appendMany = async (appends) => {
        if (!done && when(appends)) {
          done = true;
          await meanwhile();
        }
        return original.call(store, appends);
      };
      return () => {
        store.appendMany = original;
      };
    }
    const erasing = (userId: string) => (appends: StreamAppend[]) => appends.some((a) => a.stream === `user-${userId}`);

    it('a transfer appended between the erasure’s decision and its append: the erasure is decided again, and refused for the balance', async () => {
      const who = await customer(app.http, acme);
      let sent: { status: number } | undefined;
      const restore = beforeAppend(erasing(who.id), async () => {
        sent = await transfer(ada, who.accountId, '3');
      });
      try {
        const res = await erase(who.id);
        expect([res.status, res.body.code], res.text).to.deep.equal([409, 'user_has_balance']);
      } finally {
        restore();
      }
      expect(sent?.status).to.equal(201);
      expect(await inLog(who.accountId)).to.deep.equal({ credits: '3.00000000', debits: '0.00000000' });
      expect((await app.http.get(`/api/v1/partner/users/${who.id}`).set(acme.headers)).status).to.equal(200);
    });

    it('a deposit made between the erasure’s decision and its append: the account expects it, so the erasure is refused as pending', async () => {
      const who = await customer(app.http, acme);
      let made: { status: number; body: { transactionId: string } } | undefined;
      const restore = beforeAppend(erasing(who.id), async () => {
        made = await deposit(who, '4');
      });
      try {
        const res = await erase(who.id);
        expect([res.status, res.body.code], res.text).to.deep.equal([409, 'user_has_pending_transactions']);
      } finally {
        restore();
      }
      expect(made?.status).to.equal(201);
      const confirmed = await app.http.post(`/sandbox/v1/deposits/${made?.body.transactionId}/confirm`).set(acme.headers).send();
      expect(confirmed.status, confirmed.text).to.equal(202);
      expect(await inLog(who.accountId)).to.deep.equal({ credits: '4.00000000', debits: '0.00000000' });
    });

    it('a deposit the ledger read model did not list yet when erasure asked it: the account expects it, so the erasure is refused', async () => {
      const who = await customer(app.http, acme);
      const reads = app.tally.ledger.reads;
      const hasPending = reads.hasPending;
      let made: { status: number } | undefined;
      // The read model's answer is given as it was before the deposit was made.
      reads.hasPending = async (accountId) => {
        const answer = await hasPending.call(reads, accountId);
        made = await deposit(who, '4');
        return answer;
      };
      try {
        const res = await erase(who.id);
        expect([res.status, res.body.code], res.text).to.deep.equal([409, 'user_has_pending_transactions']);
      } finally {
        reads.hasPending = hasPending;
      }
      expect(made?.status).to.equal(201);
    });

    it('a failed deposit is no longer expected: the erasure then goes through', async () => {
      const who = await customer(app.http, acme);
      const made = await deposit(who, '4');
      expect((await erase(who.id)).body.code).to.equal('user_has_pending_transactions');
      const failed = await app.http.post(`/sandbox/v1/deposits/${made.body.transactionId}/fail`).set(acme.headers).send();
      expect(failed.status, failed.text).to.equal(202);
      expect((await erase(who.id)).status).to.equal(200);
      expect(await inLog(who.accountId)).to.deep.equal(ZERO_BALANCE);
    });
  });

  describe('erasure and a deposit sent at once, 20 rounds', () => {
    const later = async <T>(ms: number, send: () => Promise<T>): Promise<T> => {
      await new Promise((r) => setTimeout(r, ms));
      return send();
    };

    it('a deposit, then its confirmation: either the erasure is refused as pending, or the deposit never credits the closed account', async () => {
      const outcomes: string[] = [];
      for (let round = 0; round < 20; round++) {
        const who = await customer(app.http, acme);
        const [erased, made] = await Promise.all([erase(who.id), later(round * 2, () => deposit(who, '5'))]);
        if (made.status === 201) {
          const confirmed = await app.http.post(`/sandbox/v1/deposits/${made.body.transactionId}/confirm`).set(acme.headers).send();
          expect(confirmed.status, confirmed.text).to.equal(202);
        }
        const balance = await inLog(who.accountId);
        if (erased.status === 200) {
          expect(balance, `round ${round}: ${made.status} ${made.text}`).to.deep.equal(ZERO_BALANCE);
          // Its session ended, or the account was closed when the deposit was decided.
          expect([401, 404], made.text).to.include(made.status);
        } else {
          expect([erased.status, erased.body.code, made.status], `round ${round}`).to.deep.equal([409, 'user_has_pending_transactions', 201]);
          expect(balance).to.deep.equal({ credits: '5.00000000', debits: '0.00000000' });
        }
        outcomes.push(erased.status === 200 ? 'erasure' : 'deposit');
      }
      console.log(`      deposit first: ${outcomes.filter((o) => o === 'deposit').length}, erasure first: ${outcomes.filter((o) => o === 'erasure').length}`);
    });
  });

  // Last: the accounts of every test above are in it.
  describe('the ledger read model', () => {
    it('a rebuilt ledger read model shows the same balances of the closed accounts (and of the others)', async () => {
      const rows = () =>
        app.tally.sql.query<{ account_id: string; credits: string; debits: string; pending_debits: string }>(
          'SELECT account_id::text, credits::text, debits::text, pending_debits::text FROM rm_accounts ORDER BY account_id',
          [],
        );
      const before = await rows();
      const rebuilt = await app.http
        .post('/admin/v1/projections/ledger/rebuild')
        .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
        .send();
      expect(rebuilt.status, rebuilt.text).to.equal(200);
      expect(await rows()).to.deep.equal(before);
      expect(before.length).to.be.at.least(25);
    });
  });
});
