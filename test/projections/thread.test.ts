import type { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import { loadConfig } from '../../src/config';
import { ProjectionEngine } from '../../src/platform/consumers/projections';
import { ProjectionThread } from '../../src/platform/consumers/thread';
import { lastWrittenPosition, startTestApp } from '../support/app';
import { balanceOf, startWithCustomers } from '../support/ledger';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

describe('the projections in a worker thread of their own (Postgres)', function () {
  this.timeout(60_000);

  it('run there by default, and beside the requests with PROJECTIONS_THREAD=main', async () => {
    expect(loadConfig({}).projectionsThread).to.equal('worker');
    expect(loadConfig({ PROJECTIONS_THREAD: 'main' }).projectionsThread).to.equal('main');
    const threaded = await startTestApp();
    const local = await startTestApp({ projectionsThread: 'main' });
    try {
      expect(threaded.tally.engine).to.be.instanceOf(ProjectionThread);
      expect(local.tally.engine).to.be.instanceOf(ProjectionEngine);
    } finally {
      await threaded.close();
      await local.close();
    }
  });

  it('serve reads after writes, status, rebuild and verification as in process, and hand their leases over at stop', async () => {
    const { app, ada, bob } = await startWithCustomers();
    let other: Awaited<ReturnType<typeof startTestApp>> | undefined;
    let closed = false;
    try {
      const sent = await app.http
        .post('/api/v1/transactions/transfer')
        .set(ada.bearer)
        .send({ toAccountId: bob.accountId, amount: '5', description: 'thread' });
      expect(sent.status).to.equal(201);
      // Read after the write: the route waits for the worker's ledger projection to pass it.
      expect((await balanceOf(app.http, bob)).credits).to.equal('5.00000000');

      const head = await lastWrittenPosition(app);
      expect(await app.tally.engine.waitFor(head, { timeoutMs: 5_000 })).to.equal(true);
      expect(app.tally.engine.passed(head, ['ledger', 'users'])).to.equal(true);
      const status = await app.tally.engine.status();
      expect(status.map((s) => s.name)).to.deep.equal(app.tally.engine.projections.map((p) => p.name));
      for (const s of status) {
        expect(s.ownedHere, s.name).to.equal(true);
        expect(s.lag, s.name).to.equal(0);
        expect(app.tally.engine.owns(s.name), s.name).to.equal(true);
      }

      const rebuilt = await app.tally.engine.rebuild('ledger');
      expect(rebuilt.events).to.be.greaterThan(0);
      expect(await app.tally.engine.verify('ledger')).to.deep.equal([]);
      expect((await balanceOf(app.http, bob)).credits).to.equal('5.00000000');
      await expectRejection(app.tally.engine.rebuild('nope'), /Unknown projection nope/);

      // Stopped, the worker releases its leases: another node takes the projections at once.
      other = await startTestApp({ databaseUrl: app.config.databaseUrl, projectionsThread: 'main' });
      expect(other.tally.engine.owns('ledger')).to.equal(false);
      await app.close();
      closed = true;
      await until('the other node owns the ledger projection', () => other?.tally.engine.owns('ledger') === true, 5_000);
      expect(app.tally.engine.owns('ledger')).to.equal(false);
    } finally {
      await other?.close();
      if (!closed) await app.close();
    }
  });

  it('pause between batches once past the position a reader waited for, though the reader has not woken yet', async () => {
    for (const projectionsThread of ['worker', 'main'] as const) {
      const { app, ada, bob } = await startWithCustomers({ projectionsThread, projectionsPaceMs: 5_000 });
      try {
        // The outbox waits for the read models too: stopped, it cuts no pause short here.
        await app.tally.reactors.stop();
        const transfer = async (description: string) => {
          const sent = await app.http.post('/api/v1/transactions/transfer').set(ada.bearer).send({ toAccountId: bob.accountId, amount: '1', description });
          expect(sent.status, projectionsThread).to.equal(201);
          return lastWrittenPosition(app);
        };
        const first = await transfer('waited for');
        expect(await app.tally.engine.waitFor(first, { timeoutMs: 2_000 }), projectionsThread).to.equal(true);
        // Nobody waits for this one: the loop keeps its pause after the batch that passed `first`.
        const second = await transfer('not waited for');
        await sleep(600);
        expect(app.tally.engine.passed(second, ['ledger']), projectionsThread).to.equal(false);
        // A reader waiting for it cuts the pause short.
        const asked = Date.now();
        expect(await app.tally.engine.waitFor(second, { timeoutMs: 4_000 }), projectionsThread).to.equal(true);
        expect(Date.now() - asked, projectionsThread).to.be.below(2_000);
      } finally {
        await app.close();
      }
    }
  });

  it('start a new worker when theirs ends while they should run, which goes on from the checkpoints', async () => {
    const { app, ada, bob } = await startWithCustomers();
    try {
      const engine = app.tally.engine as ProjectionThread;
      // A fault that ends the worker (its own code failing outside a batch, memory): here, ended from outside.
      await (engine as unknown as { worker: Worker }).worker.terminate();
      const sent = await app.http.post('/api/v1/transactions/transfer').set(ada.bearer).send({ toAccountId: bob.accountId, amount: '3', description: 'after' });
      expect(sent.status).to.equal(201);
      expect((await balanceOf(app.http, bob)).credits).to.equal('3.00000000');
      await until('the new worker owns the ledger projection', () => engine.owns('ledger'));
    } finally {
      await app.close();
    }
  });
});

async function expectRejection(promise: Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect((error as Error).message).to.match(message);
    return;
  }
  expect.fail('expected a rejection');
}
