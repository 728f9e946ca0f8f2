import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { balanceOf, type Customer, customer, fund } from '../support/ledger';

/**
 * A projection that cannot apply an event stops only itself (decisions, "Input and hardening"): the
 * others commit and stay live, it retries with backoff, the operator sees where and why, and fixing
 * the cause (or a rebuild) lets it catch up. Before, every projection committed in one transaction,
 * so one such event stopped them all, for every partner, across restarts.
 */
describe('projections: a failure on one event is contained to its projection', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  let bob: Customer;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  before(async () => {
    app = await startTestApp({ readYourWritesTimeoutMs: 1_000 });
    app.tally.engine.unreadyAfterFailureMs = 300;
    acme = await createPartner(app.http);
    ada = await customer(app.http, acme);
    bob = await customer(app.http, acme);
    await fund(app.http, acme, ada, '50');
  });
  after(() => app?.close());

  type Status = { name: string; position: string; failure: null | { event: { id: string; type: string; position: string }; error: string; attempts: number } };
  const projections = async (): Promise<Status[]> => {
    const res = await app.http.get('/admin/v1/projections').set(admin);
    expect(res.status).to.equal(200);
    return res.body.data;
  };
  const users = async () => (await projections()).find((p) => p.name === 'users') as Status;

  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** An event of the users projection's types, written to the log directly, that it cannot apply (no country code; an email may be null: an erased one). */
  async function plantUnappliableEvent(): Promise<string> {
    const id = randomUUID();
    const userId = randomUUID();
    await app.tally.store.append(
      `user-${userId}`,
      [
        {
          id,
          type: 'UserRegistered',
          data: { userId, partnerId: acme.id, email: uniqueEmail(), language: 'en' },
          metadata: { actor: { kind: 'system', id: 'test' } },
        },
      ],
      'no_stream',
    );
    return id;
  }

  it('stops only that projection, shows the event and the error, and the API and other projections go on; fixing the cause lets it catch up', async () => {
    const planted = await plantUnappliableEvent();
    await until('the users projection reports the failure', async () => (await users()).failure !== null);
    const failing = await users();
    expect(failing.failure?.event.id).to.equal(planted);
    expect(failing.failure?.event.type).to.equal('UserRegistered');
    expect(failing.failure?.error).to.match(/country_code/);

    // Every other projection and the API keep working: a transfer and its ledger reads, a new
    // partner whose key works at once, a login.
    const transfer = await app.http
      .post('/api/v1/transactions/transfer')
      .set(ada.bearer)
      .send({ fromAccountId: ada.accountId, toAccountId: bob.accountId, amount: '7', description: 'after the planted event' });
    expect(transfer.status).to.equal(201);
    expect((await balanceOf(app.http, bob)).credits).to.equal('7.00000000');
    const fresh = await createPartner(app.http, 'Fresh');
    expect((await app.http.get('/api/v1/partner/users').set(fresh.headers)).status).to.equal(200);
    expect((await app.http.post('/api/v1/partner/auth/send').set(acme.headers).send({ email: ada.email })).status).to.equal(200);
    const head = await lastWrittenPosition(app);
    const others = app.tally.engine.projections.map((p) => p.name).filter((n) => n !== 'users');
    expect(await app.tally.engine.waitFor(head, { names: others, timeoutMs: 5_000 })).to.equal(true);
    for (const p of await projections()) if (p.name !== 'users') expect(p.failure, p.name).to.equal(null);

    // Stopped for longer than the bound: the node says it is not ready.
    await until('/readyz answers 503', async () => (await app.http.get('/readyz')).status === 503);

    const metrics = await app.http.get('/metrics').set(admin);
    const seconds = Number(/^tally_projection_stopped_seconds\{projection="users"\} (\S+)$/m.exec(metrics.text)?.[1]);
    expect(seconds).to.be.greaterThan(0);
    expect(metrics.text).to.match(/^tally_projection_stopped_seconds\{projection="ledger"\} 0$/m);

    // It keeps retrying (with backoff) meanwhile.
    await until('a second attempt', async () => ((await users()).failure?.attempts ?? 0) >= 2);

    // The cause is fixed (here: the read model takes a user without a country code): it catches up.
    await app.tally.sql.query('ALTER TABLE rm_users ALTER COLUMN country_code DROP NOT NULL');
    await until('the users projection is live again', async () => (await users()).failure === null);
    expect(await app.tally.engine.waitFor(await lastWrittenPosition(app), { timeoutMs: 5_000 })).to.equal(true);
    expect((await app.http.get('/readyz')).status).to.equal(200);
    // And a user created now is served as usual.
    const created = await app.http.post('/api/v1/partner/users').set(acme.headers).send({ email: uniqueEmail(), countryCode: 'CO' });
    expect(created.status).to.equal(201);
    expect((await app.http.get(`/api/v1/partner/users/${created.body.data.user.id}`).set(acme.headers)).status).to.equal(200);
  });

  it('a rebuild clears a failure whose cause was the read model itself', async () => {
    // A log of its own: the event planted above stays in this one's log for good.
    await app.close();
    app = await startTestApp({ readYourWritesTimeoutMs: 1_000 });
    acme = await createPartner(app.http);
    // The live table refuses every new row (as a hand-made change to a read model might): the next
    // user's event cannot be applied.
    await app.tally.sql.query('ALTER TABLE rm_users ADD CONSTRAINT refuse_new_rows CHECK (false) NOT VALID');
    const created = await app.http.post('/api/v1/partner/users').set(acme.headers).send({ email: uniqueEmail(), countryCode: 'CO' });
    expect(created.status).to.equal(201);
    await until('the users projection reports the failure', async () => (await users()).failure !== null);
    expect((await users()).failure?.error).to.match(/refuse_new_rows/);

    const rebuilt = await app.http.post('/admin/v1/projections/users/rebuild').set(admin);
    expect(rebuilt.status).to.equal(200);
    await until('the users projection is live again', async () => (await users()).failure === null);
    expect(await app.tally.engine.waitFor(await lastWrittenPosition(app), { timeoutMs: 5_000 })).to.equal(true);
    const read = await app.http.get(`/api/v1/partner/users/${created.body.data.user.id}`).set(acme.headers);
    expect(read.status).to.equal(200);
    expect(read.body.data.user.email).to.equal(created.body.data.user.email);
  });
});
