import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { expect } from 'chai';
import { ACCOUNT_ASSET, ACCOUNT_TYPE, accountStream } from '../../src/domain/ledger/account';
import type { StreamAppend } from '../../src/eventstore/port';
import { startTestApp } from '../support/app';
import { tempDir } from '../support/temp';

/** Long, so that every bound below leaves a loaded machine seconds of slack. */
const PACE_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Account openings of made-up users (the ledger projection's own event type), each in its stream. */
function openings(count: number, firstId: number): StreamAppend[] {
  return Array.from({ length: count }, (_, i) => ({
    stream: accountStream(firstId + i),
    expectedRevision: 'no_stream' as const,
    events: [
      {
        id: randomUUID(),
        type: 'AccountOpened',
        data: { accountId: firstId + i, userId: randomUUID(), partnerId: randomUUID(), asset: ACCOUNT_ASSET, type: ACCOUNT_TYPE, at: new Date().toISOString() },
      },
    ],
  }));
}

type App = Awaited<ReturnType<typeof startTestApp>>;

async function paced(overrides: Parameters<typeof startTestApp>[0] = {}): Promise<App> {
  const app = await startTestApp({ projectionsPaceMs: PACE_MS, ...overrides });
  const until = Date.now() + 10_000;
  while (!app.tally.engine.owns('ledger') && Date.now() < until) await sleep(20);
  expect(app.tally.engine.owns('ledger')).to.equal(true);
  return app;
}

/** Polls without waitFor (which would cut a pause short). */
async function passedWithin(app: App, position: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (app.tally.engine.passed(position, ['ledger'])) return true;
    await sleep(10);
  }
  return app.tally.engine.passed(position, ['ledger']);
}

/** A reader of its own writes does not wait for the pause to end. */
async function waitForCutsThePause(app: App, position: string): Promise<void> {
  const started = Date.now();
  expect(await app.tally.engine.waitFor(position, { names: ['ledger'], timeoutMs: PACE_MS * 2 })).to.equal(true);
  // Before the pause would have ended (a loaded machine may take a few seconds to apply).
  expect(Date.now() - started).to.be.below(PACE_MS);
}

for (const store of ['server', 'embedded'] as const) {
  describe(`projection runner pacing (${store} store)`, () => {
    let app: App;
    const dataDir = store === 'embedded' ? tempDir('tally-pacing-') : undefined;
    before(async () => {
      app = await paced(store === 'embedded' ? { databaseUrl: undefined, dataDir } : {});
    });
    after(async () => {
      await app.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('applies an append after a quiet spell at once, then gathers the next appends (a trickle or a burst) until the pace has passed, unless a reader waits', async () => {
      const base = store === 'embedded' ? 930_000 : 900_000;
      const [first] = await app.tally.store.appendMany(openings(1, base));
      expect(await passedWithin(app, first?.position as string, 5_000)).to.equal(true);
      const [single] = await app.tally.store.appendMany(openings(1, base + 1));
      const burst = await app.tally.store.appendMany(openings(40, base + 10));
      const position = burst[39]?.position as string;
      expect(await passedWithin(app, single?.position as string, 500)).to.equal(false);
      await waitForCutsThePause(app, position);
      const [row] = await app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_accounts WHERE account_id >= $1 AND account_id < $2', [
        base,
        base + 100,
      ]);
      expect(row?.n).to.equal('42');
    });
  });
}
