import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { allRoutes } from '../../src/http/app';
import { type Customer, startWithCustomers } from '../support/ledger';

describe('reads after the caller’s writes (RouteSpec.readsAfterWrites)', () => {
  describe('the route table', () => {
    /** What a handler calls to read the ledger read model (rm_accounts, rm_transactions). */
    const READS_LEDGER_MODEL = /\bledger\.(reads\.|accounts\.(accountsOf|ownAccount)\b)/;

    it('has every GET route that reads the ledger read model declare it', () => {
      const readers = allRoutes().filter((r) => r.method === 'get' && READS_LEDGER_MODEL.test(String(r.handler)));
      expect(readers.map((r) => r.path)).to.include.members([
        '/api/v1/user/accounts',
        '/api/v1/user/balance',
        '/api/v1/transactions',
        '/api/v1/transactions/{id}',
      ]);
      for (const r of readers) expect([r.readsAfterWrites].flat(), `GET ${r.path}`).to.include('ledger');
    });

    it('declares it only where the caller’s partner is known (the scope of the writes waited for)', () => {
      for (const r of allRoutes().filter((x) => x.readsAfterWrites)) expect(['bearer', 'partner'], `${r.method} ${r.path}`).to.include(r.auth);
    });
  });

  describe('over HTTP, with the ledger read model lagging each write', () => {
    let env: Awaited<ReturnType<typeof startWithCustomers>>;
    let restore: (() => void) | undefined;
    /** Ada's debits so far (each case sends one more unit to Bob). */
    let sent = 0;
    const LAG_MS = 400;

    before(async () => {
      // The projections on this thread: the ledger's is slowed below by wrapping its apply.
      env = await startWithCustomers({ projectionsThread: 'main' });
      restore = delayLedgerProjection(LAG_MS);
    });
    after(async () => {
      restore?.();
      await env.app.close();
    });

    /** Every batch the ledger projection applies waits `lagMs` first: a transfer's answer comes well before its read model has it. */
    function delayLedgerProjection(lagMs: number): () => void {
      const ledger = env.app.tally.engine.get('ledger');
      const { apply } = ledger;
      ledger.apply = async (...args) => {
        await sleep(lagMs);
        return apply.apply(ledger, args);
      };
      return () => {
        ledger.apply = apply;
      };
    }

    /** A transfer of one unit from Ada to Bob, answered before the ledger read model has it (checked). */
    async function transferNotYetProjected(): Promise<string> {
      const res = await env.app.http
        .post('/api/v1/transactions/transfer')
        .set(env.ada.bearer)
        .send({ toAccountId: env.bob.accountId, amount: '1', description: 'one' });
      expect(res.status).to.equal(201);
      sent += 1;
      const [row] = await env.app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_transactions WHERE uuid = $1', [res.body.uuid]);
      expect(row?.n, 'the read model lags the transfer').to.equal('0');
      return res.body.uuid;
    }

    const get = (path: string, who: Customer) => env.app.http.get(path).set(who.bearer);
    const debits = (n: number) => `${n}.00000000`;

    it('GET /api/v1/user/balance shows the transfer sent just before', async () => {
      await transferNotYetProjected();
      const res = await get('/api/v1/user/balance', env.ada);
      expect([res.status, res.body.items[0].debits]).to.deep.equal([200, debits(sent)]);
    });

    it('GET /api/v1/user/accounts shows it, to the receiver too (the wait is for the partner’s writes)', async () => {
      await transferNotYetProjected();
      const res = await get('/api/v1/user/accounts', env.bob);
      expect([res.status, res.body.items[0].credits]).to.deep.equal([200, debits(sent)]);
    });

    it('GET /api/v1/transactions lists it first', async () => {
      const uuid = await transferNotYetProjected();
      const res = await get(`/api/v1/transactions?accountId=${env.ada.accountId}`, env.ada);
      expect([res.status, res.body[0]?.uuid]).to.deep.equal([200, uuid]);
    });

    it('GET /api/v1/transactions/{id} finds it, COMPLETED', async () => {
      const uuid = await transferNotYetProjected();
      const res = await get(`/api/v1/transactions/${uuid}`, env.ada);
      expect([res.status, res.body.status]).to.deep.equal([200, 'COMPLETED']);
    });
  });
});
