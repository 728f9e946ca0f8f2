import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { firstStart, stopFirstStart, untilBanner } from '../support/first-start';
import { createPartnerKey, listPartners } from '../../src/cli/partners';
import { capture, cliConfig } from '../cli/support';
import { freePort } from '../ledger/support/server-process';
import { tempDir } from '../support/temp';

const bannerField = (banner: string, name: string) => new RegExp(`^  ${name}:\\s+(\\S+)`, 'm').exec(banner)?.[1] ?? '';

describe('first start (npm start on an empty store)', function () {
  this.timeout(120_000);
  let child: ChildProcess | undefined;

  afterEach(() => stopFirstStart(child));

  it('prints the sandbox partner id the CLI takes, with a key pair that authenticates', async () => {
    const dataDir = tempDir('tally-first-start-');
    const port = await freePort();
    child = firstStart(dataDir, port);
    const banner = await untilBanner(child);
    const partnerId = bannerField(banner, 'Partner id');
    const apiKey = bannerField(banner, 'X-Api-Key');
    const apiSecret = bannerField(banner, 'X-Api-Secret');
    expect(banner).to.include(`npx tally partners keys create ${partnerId}`);
    expect(apiKey).to.match(/^tk_sandbox_/);
    expect(apiSecret).to.match(/^ts_/);
    const users = await fetch(`http://127.0.0.1:${port}/api/v1/partner/users`, { headers: { 'X-Api-Key': apiKey, 'X-Api-Secret': apiSecret } });
    expect(users.status).to.equal(200);

    // The embedded store is the server's while it runs: stop it, then give the printed id to the CLI.
    const exited = new Promise<number | null>((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).to.equal(0);
    const config = cliConfig({ dataDir });
    const partners = await listPartners(config, capture());
    expect(partners.map((p) => ({ id: p.id, name: p.name }))).to.deep.equal([{ id: partnerId, name: 'Sandbox partner' }]);
    const io = capture();
    const created = await createPartnerKey(config, partnerId, io);
    expect(created.apiKey).to.match(/^tk_sandbox_/);
    expect(io.lines).to.include(`apiKey: ${created.apiKey}`);
  });
});
