import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { auditVerify } from '../../src/cli/audit';
import { makeLogger } from '../../src/server';
import { capture, cliConfig } from '../cli/support';
import { ADMIN_TOKEN, createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { issuedCard } from '../support/cards';
import { COMPLETE_PROFILE, login } from '../support/identity';
import { type Customer, customer, fund, PAYOUT_DESTINATION, payoutRequest } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

/** The person's data, each value distinctive enough that finding it anywhere can only mean it is there. */
const PERSON = {
  phoneNumber: '+573019990011',
  firstName: 'Philippa',
  lastName: 'Wexworthy',
  dateOfBirth: '1979-11-02',
  governmentIdNumber: 'WV7770456',
  addressLine1: 'Calle Escondida 4417',
  annualSalary: '86420.13',
};

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

/**
 * Issue 31's walk (docs/personal-data.md, docs/privacy.md): a user registered, profiled, verified,
 * logged in, funded, paying, paid out to their own bank account and spending with a card; then every
 * byte the service wrote is searched for their personal data: the log as stored, the auditor's NDJSON
 * export, the log lines, and every table of the service's database (read models, notifications, data
 * keys, snapshots). The sandbox providers' own tables stand in for other companies' systems and are
 * left out. Before erasure the data may be only where reads show it from (the read models, the
 * notifications partners read back); after it, nowhere; the ledger and
 * the balances stay as they were, `tally audit verify` passes, and a rebuild of every projection
 * gives the same.
 */
describe('personal data, everywhere the service writes', function () {
  this.timeout(240_000);
  let app: App;
  let partner: PartnerCredentials;
  const logLines: string[] = [];

  before(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    app = await startTestApp({}, makeLogger('trace', sink));
    partner = await createPartner(app.http, 'Everywhere');
  });
  after(() => app?.close());

  /** The walk; returns the user, what identifies them, and the counterparty of their transfer. */
  async function walk(): Promise<{ userId: string; values: Record<string, string>; bob: Customer }> {
    const email = uniqueEmail('philippa');
    const registered = await app.http.post('/api/v1/partner/users').set(partner.headers).send({ email, countryCode: 'CO', phoneNumber: PERSON.phoneNumber });
    expect(registered.status, registered.text).to.equal(201);
    const userId = registered.body.data.user.id as string;
    const { phoneNumber: _, ...fields } = PERSON;
    expect(
      (
        await app.http
          .post('/api/v1/user/profile')
          .set(partner.headers)
          .send({ userId, ...COMPLETE_PROFILE, ...fields })
      ).status,
    ).to.equal(201);
    const kyc = await app.http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId });
    expect(kyc.status, kyc.text).to.equal(200);
    expect((await app.http.post(`/sandbox/v1/kyc/${kyc.body.inquiryId}/complete`).set(partner.headers).send({ outcome: 'approved' })).status).to.equal(202);
    const bearer = { Authorization: `Bearer ${(await login(app.http, partner, email)).accessToken}` };
    const documentNumber = (await app.http.get('/api/v1/user/kyc/document/me').set(bearer)).body.data.document.idNumber as string;
    const accountId = (await app.http.get('/api/v1/user/accounts').set(bearer)).body.items[0].id as number;
    const me: Customer = { id: userId, email, token: '', bearer, accountId };
    const bob = await customer(app.http, partner);

    await fund(app.http, partner, me, '100');
    const sent = await app.http.post('/api/v1/transactions/transfer').set(bearer).send({ toAccountId: bob.accountId, amount: '10', description: 'rent' });
    expect(sent.status, sent.text).to.equal(201);
    const payout = await app.http
      .post('/api/v1/user/payout')
      .set(bearer)
      .send(
        payoutRequest({
          destination: { ...PAYOUT_DESTINATION, ownerName: `${PERSON.firstName} ${PERSON.lastName}`, ownerDocumentNumber: PERSON.governmentIdNumber },
        }),
      );
    expect(payout.status, payout.text).to.equal(200);
    expect((await app.http.post(`/sandbox/v1/payouts/${payout.body.paymentId}/settle`).set(partner.headers).send()).status).to.equal(202);
    const card = await issuedCard(app.http, partner, bearer, { 'x-idempotency-key': randomUUID() });
    const spent = await app.http
      .post(`/sandbox/v1/cards/${card.id}/authorizations`)
      .set(partner.headers)
      .send({ amount: '2', currency: 'USD', merchantName: 'Bakery', merchantCategoryCode: '5411' });
    expect(spent.status, spent.text).to.equal(201);
    expect((await app.http.post(`/sandbox/v1/card-transactions/${spent.body.data.id}/clear`).set(partner.headers).send()).status).to.equal(200);

    // What is left goes to Bob: erasure needs every account at zero.
    const account = (await app.http.get('/api/v1/user/accounts').set(bearer)).body.items[0];
    const left = (Number(account.credits) - Number(account.debits)).toFixed(8);
    const rest = await app.http.post('/api/v1/transactions/transfer').set(bearer).send({ toAccountId: bob.accountId, amount: left, description: 'the rest' });
    expect(rest.status, rest.text).to.equal(201);

    const values = { ...PERSON, email, emailLocalPart: email.split('@')[0] as string, documentNumber };
    return { userId, values, bob };
  }

  /** Every table of the service's database, each as text: the sandbox providers' own tables left out. */
  async function tables(): Promise<Map<string, string>> {
    const names = await app.tally.sql.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'sandbox\\_%' ORDER BY 1`,
    );
    const out = new Map<string, string>();
    for (const { name } of names) {
      const rows = await app.tally.sql.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
      out.set(name, rows.map((r) => r.row).join('\n'));
    }
    return out;
  }

  /** The whole log as the auditor's NDJSON export streams it. */
  async function exported(): Promise<string> {
    const made = await app.http
      .post('/admin/v1/auditors')
      .set(admin)
      .send({ name: 'Everywhere', expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    expect(made.status, made.text).to.equal(201);
    const res = await fetch(`${app.url}/audit/v1/events?from=2000-01-01`, { headers: { Authorization: `Bearer ${made.body.data.token}` } });
    expect(res.status).to.equal(200);
    return res.text();
  }

  const found = (text: string, values: Record<string, string>) =>
    Object.entries(values)
      .filter(([, value]) => text.includes(value))
      .map(([name]) => name);

  /** Where each value is, table by table. */
  async function whereIn(values: Record<string, string>): Promise<Record<string, string[]>> {
    const where: Record<string, string[]> = {};
    for (const [table, text] of await tables()) {
      const names = found(text, values);
      if (names.length > 0) where[table] = names;
    }
    return where;
  }

  /** Every projection has passed every event written so far. */
  const caughtUp = async () =>
    expect(await app.tally.engine.waitFor(await lastWrittenPosition(app), { timeoutMs: 20_000 }), JSON.stringify(await app.tally.engine.status())).to.equal(
      true,
    );

  /** The ledger as its read model holds it (balances and transactions), which erasure must leave as it was. */
  const ledger = async () => ({
    accounts: await app.tally.sql.query('SELECT account_id, credits::text, debits::text FROM rm_accounts ORDER BY account_id'),
    transactions: await app.tally.sql.query('SELECT uuid, kind, status, amount::text, debit_account_id, credit_account_id FROM rm_transactions ORDER BY uuid'),
  });

  it('is in read models only before erasure, nowhere after it; the ledger, the audit and a rebuild hold', async () => {
    const { userId, values, bob } = await walk();
    await caughtUp();

    const before = await whereIn(values);
    expect(Object.keys(before), 'somewhere before erasure: the read models').to.include('rm_users');
    // Only where a read shows it from: the read models, and the notifications a partner reads back (the events API, deliveries).
    for (const table of Object.keys(before)) expect(table, `${table} holds ${before[table]?.join(', ')}`).to.match(/^(rm_|notification_events$|webhook_)/);
    expect(found(await exported(), values), 'the NDJSON export').to.deep.equal([]);
    const books = await ledger();
    const bobBefore = (await app.http.get('/api/v1/user/accounts').set(bob.bearer)).body.items[0];

    const erased = await app.http.post(`/api/v1/partner/users/${userId}/erase`).set(partner.headers).send();
    expect(erased.status, erased.text).to.equal(200);
    await caughtUp();

    expect(await whereIn(values), 'after erasure, in the tables').to.deep.equal({});
    expect(found(await exported(), values), 'after erasure, in the export').to.deep.equal([]);
    expect(await ledger()).to.deep.equal(books);
    expect((await app.http.get('/api/v1/user/accounts').set(bob.bearer)).body.items[0]).to.deep.equal(bobBefore);
    const io = capture();
    const report = await auditVerify(cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir }), io);
    expect(report.ok, io.text()).to.equal(true);

    for (const p of app.tally.engine.projections) {
      const rebuilt = await app.http.post(`/admin/v1/projections/${p.name}/rebuild`).set(admin).send();
      expect(rebuilt.status, `${p.name}: ${rebuilt.text}`).to.equal(200);
    }
    expect(await whereIn(values), 'after erasure and a rebuild of every projection').to.deep.equal({});
    expect(await ledger()).to.deep.equal(books);

    expect(found(logLines.join(''), values), 'the log lines, all along').to.deep.equal([]);
  });
});
