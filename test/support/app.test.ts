import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { lastWritten, startTestApp, type TestApp } from './app';

describe('lastWritten, the tests\' "nothing was written" measure', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app?.close());

  it("moves with an append the readers' head cannot show yet, while an older transaction is open", async () => {
    const other = new pg.Client({ connectionString: app.config.databaseUrl });
    await other.connect();
    try {
      // An open transaction with an id, as a projection's batch holds one: the readers' head stops below it.
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      const head = await app.tally.store.headPosition();
      const written = await lastWritten(app);
      await app.tally.store.append(`probe-${randomUUID()}`, [{ id: randomUUID(), type: 'Probed', data: {} }], 'no_stream');
      expect(await app.tally.store.headPosition()).to.equal(head);
      expect(Number(await lastWritten(app))).to.equal(Number(written) + 1);
      await other.query('COMMIT');
      // Once it ends, the head shows the append (the app's own short transactions may hold it a moment).
      const deadline = Date.now() + 5_000;
      while ((await app.tally.store.headPosition()) === head && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(await app.tally.store.headPosition()).not.to.equal(head);
    } finally {
      await other.end();
    }
  });
});
