import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { expect } from 'chai';
import { ACCOUNT_ASSET, ACCOUNT_TYPE, accountStream } from '../../src/domain/accounts/account';
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

describe('projection runner pacing', () => {
  let app: App;
  before(async () => {
    app = await paced();
  });
  after(async () => {
    await app.close();
  });

  it('applies a trickle at once', async () => {
    const results = await app.tally.store.appendMany(openings(3, 900_000));
    expect(await passedWithin(app, results[2]?.position as string, 5_000)).to.equal(true);
  });

  it('after a large batch, gathers the next appends until the pace has passed, unless a reader waits', async () => {
    // 40 events in one transaction: the runner applies them in one batch, then pauses.
    const burst = await app.tally.store.appendMany(openings(40, 910_000));
    expect(await passedWithin(app, burst[39]?.position as string, 5_000)).to.equal(true);
    const [next] = await app.tally.store.appendMany(openings(1, 920_000));
    const position = next?.position as string;
    expect(await passedWithin(app, position, 500)).to.equal(false);
    await waitForCutsThePause(app, position);
    const [row] = await app.tally.sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_accounts WHERE account_id >= 900000');
    expect(row?.n).to.equal('44');
  });
});

describe('projection runner pacing on the embedded store', () => {
  let app: App;
  const dataDir = tempDir('tally-pacing-');
  before(async () => {
    app = await paced({ databaseUrl: undefined, dataDir });
  });
  after(async () => {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('paces after a batch of any size (its statements take the thread that serves requests), unless a reader waits', async () => {
    const [first] = await app.tally.store.appendMany(openings(1, 930_000));
    expect(await passedWithin(app, first?.position as string, 5_000)).to.equal(true);
    const [next] = await app.tally.store.appendMany(openings(1, 940_000));
    const position = next?.position as string;
    expect(await passedWithin(app, position, 500)).to.equal(false);
    await waitForCutsThePause(app, position);
  });
});
