import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const REPO = join(__dirname, '..', '..');

/**
 * What `npm start` runs (package.json), on an empty DATA_DIR and nothing else set but the port (and
 * the database, when given: else the embedded store): a newcomer's first start.
 */
export function firstStart(dataDir: string, port: number, databaseUrl?: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      DATA_DIR: dataDir,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with stdout once it holds the line after the banner (the reference's address), or rejects if the server ends first. */
export function untilBanner(child: ChildProcess): Promise<string> {
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('OpenAPI: ')) resolve(stdout);
    });
    child.once('exit', (code, signal) => reject(new Error(`the server ended (${code ?? signal}) before its banner:\n${stdout}${stderr}`)));
  });
}

/** Stops a first start still running (SIGTERM) and waits for it to exit: for a test's afterEach. */
export async function stopFirstStart(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
