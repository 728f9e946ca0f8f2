import { type ChildProcess, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { firstStart, stopFirstStart, untilBanner } from './support/first-start';
import { freePort } from './ledger/support/server-process';
import { sharedCluster } from './support/postgres';
import { tempDir } from './support/temp';

const REPO = join(__dirname, '..');

/** The fenced block between `<!-- <name>:start -->` and `<!-- <name>:end -->` in the README, verbatim. */
function readmeBlock(name: string): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const marked = new RegExp(`<!-- ${name}:start -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(readme);
  if (!marked?.[1]) throw new Error(`README.md has no block marked <!-- ${name}:start --> ... <!-- ${name}:end -->`);
  return marked[1];
}

/** Runs a script with bash, in an environment without the caller's TALLY_URL, API_KEY, API_SECRET. */
function bash(script: string): { status: number | null; stdout: string; stderr: string } {
  const { TALLY_URL: _url, API_KEY: _key, API_SECRET: _secret, ...env } = process.env;
  const run = spawnSync('bash', ['-c', script], { cwd: tempDir('tally-first-session-'), env, encoding: 'utf8', timeout: 120_000 });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** An expected line of the README as a pattern: `…` stands for anything. */
const linePattern = (line: string) =>
  new RegExp(
    `^${line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.+')}$`,
  );

describe("the README's first session, run as written against a first start", function () {
  this.timeout(180_000);
  let child: ChildProcess | undefined;

  afterEach(() => stopFirstStart(child));

  it('the banner’s lines set what the block reads, and the block runs through, printing what the README shows', async () => {
    const port = await freePort();
    const databaseUrl = await (await sharedCluster()).freshDatabase();
    child = firstStart(tempDir('tally-first-session-data-'), port, databaseUrl);
    const banner = await untilBanner(child);

    // The banner's commands, as a newcomer copies them: the export line and the curl that tries the key pair.
    const commands = banner
      .split('\n')
      .filter((line) => /^ {2}(export|curl) /.test(line))
      .map((line) => line.trim());
    expect(commands.map((line) => line.split(' ')[0])).to.deep.equal(['export', 'curl']);
    const [exportLine] = commands;
    expect(exportLine).to.match(new RegExp(`^export TALLY_URL=http://localhost:${port} API_KEY=tk_sandbox_\\S+ API_SECRET=ts_\\S+$`));
    const tried = bash(`set -euo pipefail\n${commands.join('\n')}`);
    expect(tried.status, tried.stderr).to.equal(0);
    expect(JSON.parse(tried.stdout)).to.have.property('success', true);

    const session = bash(`${exportLine}\n${readmeBlock('first-session')}`);
    expect(session.status, `${session.stdout}\n${session.stderr}`).to.equal(0);
    const printed = session.stdout.trimEnd().split('\n');
    const shown = readmeBlock('first-session-output')
      .trimEnd()
      .split('\n')
      .map((line) => line.replaceAll('http://localhost:3000', `http://localhost:${port}`));
    expect(printed.length, session.stdout).to.equal(shown.length);
    for (const [i, line] of shown.entries()) expect(printed[i], `line ${i + 1}: ${line}`).to.match(linePattern(line));

    // Run again against the same server: new emails, so it does not stand in its own way.
    const again = bash(`${exportLine}\n${readmeBlock('first-session')}`);
    expect(again.status, `${again.stdout}\n${again.stderr}`).to.equal(0);
    expect(again.stdout).to.include('first session: done');
  });

  it('stops at the first error, saying what the server answered and where', () => {
    const session = bash(`export TALLY_URL=http://localhost:1 API_KEY=tk_sandbox_x API_SECRET=ts_x\n${readmeBlock('first-session')}`);
    expect(session.status).to.not.equal(0);
    expect(session.stdout).to.equal('');
    expect(session.stderr).to.include('first session: stopped at line');
    const unset = bash(`unset TALLY_URL API_KEY API_SECRET\n${readmeBlock('first-session')}`);
    expect(unset.status).to.not.equal(0);
    expect(unset.stderr).to.include('export API_KEY and API_SECRET');
  });
});
