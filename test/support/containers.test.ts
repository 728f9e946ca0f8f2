import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { getContainerRuntimeClient } from 'testcontainers';
import { detectDocker, KURRENTDB_IMAGE, POSTGRES_IMAGE } from './containers';

const REPO = join(__dirname, '..', '..');

/** Runs a node process in the repo without DATABASE_URL/KURRENTDB_URL, so the harness decides by itself. */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.KURRENTDB_URL;
  const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('Docker for the tests (testcontainers)', function () {
  this.timeout(300_000); // where Docker runs, the first start pulls the images

  it('starts the images that docker-compose.yml runs', () => {
    const compose = readFileSync(join(REPO, 'docker-compose.yml'), 'utf8');
    const images = [...compose.matchAll(/^\s+image:\s*(\S+)\s*$/gm)].map((match) => match[1]);
    expect(images).to.include.members([POSTGRES_IMAGE, KURRENTDB_IMAGE]);
  });

  it("answers from testcontainers' own detection, with its reason when there is no engine", async () => {
    const own = await getContainerRuntimeClient().then(
      () => null,
      (error: Error) => error.message,
    );
    const answer = await detectDocker();
    if (own === null) expect(answer).to.deep.equal({ reachable: true });
    else expect(answer).to.deep.equal({ reachable: false, reason: `testcontainers: ${own}` });
  });

  it('gives the tests a Postgres in Docker where an engine runs, else a local cluster, saying which', async () => {
    const script = "require('./test/support/postgres').sharedCluster().then((c) => c.freshDatabase()).then((url) => console.log(url))";
    const child = await run(['--import', 'tsx', '-e', `${script}.finally(() => require('./test/support/postgres').stopSharedCluster())`]);
    expect(child.code, child.stderr).to.equal(0);
    expect(new URL(child.stdout.trim()).pathname).to.match(/^\/tally_test_/);
    if ((await detectDocker()).reachable) expect(child.stderr).to.include(`Tests' PostgreSQL: ${POSTGRES_IMAGE} in Docker`);
    else expect(child.stderr).to.match(/No Docker engine reachable \(testcontainers: .+\): the tests' PostgreSQL is a local throwaway cluster/);
  });

  it('registers the KurrentDB conformance suite where an engine runs, else says plainly that it skipped it', async () => {
    // The grep leaves out the conformance tests themselves: only what the file registers is looked at.
    const child = await run([join(REPO, 'node_modules', 'mocha', 'bin', 'mocha.js'), 'test/eventstore/kurrentdb.test.ts', '--grep', 'no server needed']);
    expect(child.code, child.stdout + child.stderr).to.equal(0);
    const skipped = 'KurrentDB conformance suite skipped: KURRENTDB_URL is not set and no Docker engine is reachable (testcontainers: ';
    if ((await detectDocker()).reachable) expect(child.stdout).not.to.include('KurrentDB conformance suite skipped');
    else expect(child.stdout).to.include(skipped);
  });
});
