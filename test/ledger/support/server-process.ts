import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { generateKeys } from '../../../src/platform/keys';
import { ADMIN_TOKEN } from '../../support/app';

const REPO = join(__dirname, '..', '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * The environment of a test server on a test database: the operator token, fixed keys (access tokens
 * and webhook signatures stay valid across restarts), no rate limits, sandbox on; `extra` on top.
 */
export function testServerEnv(databaseUrl: string, dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    ADMIN_TOKEN,
    TALLY_KEYS: JSON.stringify(generateKeys()),
    DATA_DIR: dataDir,
    RATE_LIMIT_PARTNER_RPS: '0',
    RATE_LIMIT_USER_RPS: '0',
    RATE_LIMIT_IP_RPS: '0',
    SANDBOX: 'on',
    ...extra,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every child started by this module, so a process exit (even mocha's forced one) never leaves one running. */
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * The real server (`src/main.ts`) as a child process on a fixed port, so it can be SIGKILLed and
 * started again on the same database and port. Keeps the tail of its output for failure messages.
 */
export class ServerProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private output = '';
  readonly url: string;

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
    /** Called with every line the server prints (stdout and stderr), e.g. to count its log lines. */
    private readonly onLine?: (line: string) => void,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last few kilobytes the server printed. */
  tail(): string {
    return this.output.slice(-6_000);
  }

  /** Starts the server and resolves once /healthz answers 200. */
  async start(timeoutMs = 60_000): Promise<number> {
    if (this.running) throw new Error('server already running');
    const started = Date.now();
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', 'src/main.ts'], {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TMPDIR: process.env.TMPDIR ?? '/tmp', ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    live.add(child);
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-20_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    if (this.onLine) {
      const onLine = this.onLine;
      for (const stream of [child.stdout, child.stderr]) {
        let partial = '';
        stream?.on('data', (chunk: Buffer) => {
          const lines = (partial + chunk.toString('utf8')).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) onLine(line);
        });
      }
    }
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(child);
        this.output += `\n[server pid ${child.pid} exited: code ${code} signal ${signal}]\n`;
        resolve();
      }),
    );
    while (Date.now() - started < timeoutMs) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited during start:\n${this.tail()}`);
      try {
        const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2_000) });
        await res.arrayBuffer();
        if (res.ok) return Date.now() - started;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    await this.kill();
    throw new Error(`server did not answer /healthz within ${timeoutMs} ms:\n${this.tail()}`);
  }

  /** SIGTERM: the server drains, stops its projections and closes its stores; resolves once it exited. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await this.exited;
    this.child = undefined;
  }

  /** SIGKILL: no shutdown hook runs, in-flight requests and transactions are cut where they are. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await this.exited;
    this.child = undefined;
  }
}
