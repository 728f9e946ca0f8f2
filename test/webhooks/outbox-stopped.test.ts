import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund } from '../support/ledger';

/**
 * The notifications' outbox is a consumer of the log like the projections: when it is stopped on an
 * event, the operator sees it where the projections are seen (/readyz, the operator API, /metrics),
 * and it goes on once the cause is fixed.
 */
describe('the outbox stopped on an event: shown in readiness, the operator API and metrics', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  before(async () => {
    app = await startTestApp();
    app.tally.engine.unreadyAfterFailureMs = 300;
    acme = await createPartner(app.http);
    ada = await customer(app.http, acme);
  });
  after(() => app?.close());

  type Status = { name: string; failure: null | { event: { type: string }; error: string } };
  const outbox = async (): Promise<Status | undefined> => {
    const res = await app.http.get('/admin/v1/projections').set(admin);
    expect(res.status).to.equal(200);
    return (res.body.data as Status[]).find((s) => s.name === 'outbox');
  };
  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('lists the outbox beside the projections, says where it stopped, makes the node unready, and recovers once fixed', async () => {
    expect((await outbox())?.failure).to.equal(null);
    // The cause: the table the outbox writes each notification to is gone.
    await app.tally.sql.query('ALTER TABLE notification_events RENAME TO notification_events_away');
    await fund(app.http, acme, ada, '5');
    await until('the outbox reports its failure', async () => (await outbox())?.failure != null);
    expect((await outbox())?.failure?.error).to.match(/notification_events/);

    await until('/readyz answers 503', async () => (await app.http.get('/readyz')).status === 503);
    const ready = await app.http.get('/readyz');
    expect(ready.body.projections.find((p: { name: string }) => p.name === 'outbox')).to.have.property('stoppedSince');
    const metrics = await app.http.get('/metrics').set(admin);
    expect(Number(/^tally_projection_stopped_seconds\{projection="outbox"\} (\S+)$/m.exec(metrics.text)?.[1])).to.be.greaterThan(0);

    await app.tally.sql.query('ALTER TABLE notification_events_away RENAME TO notification_events');
    await until('the outbox runs again', async () => (await outbox())?.failure === null, 30_000);
    await until('/readyz answers 200', async () => (await app.http.get('/readyz')).status === 200);
  });
});
