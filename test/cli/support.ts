import { execFile } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type supertest from 'supertest';
import type { CliIo } from '../../src/cli/context';
import { type Config, loadConfig } from '../../src/config';
import { ADMIN_TOKEN, type PartnerCredentials, uniqueEmail } from '../support/app';
import { tempDir } from '../support/temp';

/** What a command printed: `out` lines (stdout) and `err` text (stderr). */
export interface Captured extends CliIo {
  lines: string[];
  errText: () => string;
  text: () => string;
}

export function capture(signal?: AbortSignal): Captured {
  const lines: string[] = [];
  const errs: string[] = [];
  return {
    lines,
    out: (line) => lines.push(line),
    err: (text) => errs.push(text),
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    signal,
    errText: () => errs.join(''),
    text: () => lines.join('\n'),
  };
}

/**
 * The CLI's configuration for a Postgres database (what DATABASE_URL gives it); its own DATA_DIR, for
 * the keys file, unless given one. A CLI that reads personal data (events read, rebuilds, audit
 * verify) runs with the server's keys, as an operator's does: give it the app's `dataDir`.
 */
export function cliConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), dataDir: tempDir('tally-cli-'), sandbox: true, ...overrides };
}

/** One statement straight on the database, the way someone tampering with it would. */
export async function rawSql<Row extends pg.QueryResultRow = Record<string, unknown>>(
  databaseUrl: string,
  text: string,
  params: unknown[] = [],
): Promise<Row[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<Row>(text, params)).rows;
  } finally {
    await client.end();
  }
}

export async function registerUser(http: supertest.Agent, partner: PartnerCredentials): Promise<string> {
  const res = await http
    .post('/api/v1/partner/users')
    .set(partner.headers)
    .send({ email: uniqueEmail('cli'), countryCode: 'CO' });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.user.id;
}

export async function suspendUser(http: supertest.Agent, userId: string): Promise<void> {
  const res = await http.post(`/admin/v1/users/${userId}/suspend`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ reason: 'fraud_review' });
  if (res.status !== 200) throw new Error(`suspension failed: ${res.status} ${JSON.stringify(res.body)}`);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition` holds, polling (for output that arrives asynchronously). */
export async function eventually(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(25);
  }
}

/** Runs the real binary (bin/tally.js) with the given environment; resolves with its exit code and output. */
export function runBinary(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = join(__dirname, '..', '..', 'bin', 'tally.js');
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
