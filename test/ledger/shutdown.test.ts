import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import supertest from 'supertest';
import { createPartner } from '../support/app';
import { type Customer, customer, fund } from '../support/ledger';
import { sharedCluster } from '../support/postgres';
import { tempDir } from '../support/temp';
import { freePort, testServerEnv } from './support/server-process';

/**
 * Graceful shutdown, the way an operator gets it: `npm start` (as a developer or a process manager
 * runs it) on a test database, then SIGTERM to npm's pid while transfers are in flight (their bodies
 * half sent, so they are surely in flight when the signal lands). Every one of them gets its full
 * answer, new connections are refused meanwhile, the server process exits 0 soon after the last
 * answer (keep-alive connections do not hold it up) and leaves no process behind, and the
 * projections' leases are released.
 */
const REPO = join(__dirname, '..', '..');
const IN_FLIGHT = 6;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves true once a new TCP connection to the port is refused, false if one is accepted. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

interface Answer {
  status: number;
  body: string;
  at: number;
}

/** A POST whose body is sent in two parts: `finish` sends the rest; `answer` is the full response. */
function halfSentPost(port: number, agent: Agent, path: string, headers: Record<string, string>, body: unknown) {
  const bytes = Buffer.from(JSON.stringify(body));
  const req = request({
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    agent,
    headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': String(bytes.length) },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('error', reject);
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }));
    });
  });
  req.flushHeaders();
  req.write(bytes.subarray(0, 10));
  return { answer, finish: () => req.end(bytes.subarray(10)) };
}

describe('graceful shutdown (npm start, SIGTERM)', function () {
  this.timeout(120_000);
  let npm: ChildProcess | undefined;
  let npmExit: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  let serverPid: number | undefined;
  let output = '';
  let databaseUrl: string;
  let port: number;
  let dataDir: string;
  const customers: Customer[] = [];

  before(async function () {
    this.timeout(180_000);
    databaseUrl = await (await sharedCluster()).freshDatabase();
    dataDir = tempDir('tally-shutdown-');
    port = await freePort();
    const child = spawn('npm', ['start'], {
      cwd: REPO,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        TMPDIR: process.env.TMPDIR ?? '/tmp',
        ...testServerEnv(databaseUrl, dataDir, { LOG_LEVEL: 'info' }),
        PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm = child;
    npmExit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
    let partial = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.includes('"listening"')) continue;
        serverPid = (JSON.parse(line) as { pid: number }).pid;
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
    });
    const started = Date.now();
    while (
      serverPid === undefined ||
      !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`npm start exited during start:\n${output}`);
      if (Date.now() - started > 90_000) throw new Error(`server did not start:\n${output}`);
      await sleep(100);
    }
    const http = supertest.agent(`http://127.0.0.1:${port}`);
    const partner = await createPartner(http, 'Shutdown Acme');
    customers.push(await customer(http, partner), await customer(http, partner));
    await fund(http, partner, customers[0] as Customer, '1000');
  });

  after(() => {
    // Whatever happened, nothing started here outlives the test.
    for (const pid of [serverPid, npm?.pid]) if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers the requests in flight, refuses new connections, releases the leases and exits 0', async () => {
    const [from, to] = customers as [Customer, Customer];
    const agent = new Agent({ keepAlive: true });
    // A warm keep-alive connection left idle: it must not hold the shutdown up either.
    const warm = await new Promise<number>((resolve, reject) =>
      request({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => res.resume().once('end', () => resolve(res.statusCode ?? 0)))
        .once('error', reject)
        .end(),
    );
    expect(warm).to.equal(200);

    const posts = Array.from({ length: IN_FLIGHT }, (_, i) =>
      halfSentPost(
        port,
        agent,
        '/api/v1/transactions/transfer',
        { ...from.bearer, 'x-idempotency-key': randomUUID() },
        { toAccountId: to.accountId, amount: '1.5', description: `in flight at shutdown ${i}` },
      ),
    );
    await sleep(500); // the server has every request's headers: they are in flight
    const signalled = Date.now();
    process.kill(npm?.pid as number, 'SIGTERM');

    const refusedEarly = await (async () => {
      for (let i = 0; i < 50; i++) {
        if (await refused(port)) return true;
        await sleep(50);
      }
      return false;
    })();
    expect(refusedEarly, `new connections still accepted 2.5 s after SIGTERM:\n${output}`).to.equal(true);
    expect(alive(serverPid as number), 'the server must wait for the requests in flight').to.equal(true);

    for (const post of posts) post.finish();
    const answers = await Promise.all(posts.map((p) => p.answer));
    for (const answer of answers) {
      expect(answer.status, answer.body).to.equal(201);
      expect(JSON.parse(answer.body)).to.include({ status: 'COMPLETED' });
    }
    const lastAnswer = Math.max(...answers.map((a) => a.at));

    const exit = await Promise.race([npmExit, sleep(20_000).then(() => null)]);
    agent.destroy();
    expect(exit, `npm start still running 20 s after SIGTERM:\n${output}`).to.not.equal(null);
    expect(exit, output).to.deep.include({ code: 0, signal: null });
    // Well within the 5 s keep-alive timeout: the connections that carried the answers were closed.
    expect((exit?.at ?? 0) - lastAnswer, `exited ${(exit?.at ?? 0) - lastAnswer} ms after the last answer`).to.be.lessThan(4_000);
    expect((exit?.at ?? 0) - signalled).to.be.lessThan(15_000);
    await sleep(200);
    expect(alive(serverPid as number), `server process ${serverPid} still running after npm exited`).to.equal(false);
    expect(await refused(port)).to.equal(true);
    expect(output).to.match(/"signal":"SIGTERM"/);

    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string; owner: string | null }>('SELECT name, owner FROM projection_checkpoints ORDER BY name');
      expect(rows.length).to.be.greaterThan(0);
      expect(rows.filter((r) => r.owner !== null)).to.deep.equal([]);
    } finally {
      await client.end();
    }
  });
});
