import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';

/**
 * One build's server for `npm run bench -- compare` (a child process): the build in TALLY_BUILD_DIR
 * (its own src/), on DATABASE_URL, configured as the ledger bench configures its in-process server.
 * Prints `{"url": ...}` on its first line once listening; closes on SIGTERM.
 */
async function main(): Promise<void> {
  const dir = process.env.TALLY_BUILD_DIR as string;
  const databaseUrl = process.env.DATABASE_URL as string;
  const { loadConfig } = (await import(join(dir, 'src/config.ts'))) as { loadConfig: (env: NodeJS.ProcessEnv) => Record<string, unknown> };
  const { startServer } = (await import(join(dir, 'src/server.ts'))) as {
    startServer: (config: unknown, log: unknown) => Promise<{ url: string; close(): Promise<void> }>;
  };
  const tuning = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('APPEND_') || k.startsWith('PROJECTIONS_')));
  const running = await startServer(
    {
      ...loadConfig(tuning),
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), 'tally-bench-compare-')),
      databaseUrl,
      adminToken: process.env.ADMIN_TOKEN,
      sandbox: true,
      logLevel: 'warn',
      rateLimit: { partnerRps: 0, userRps: 0, ipRps: 0 },
      kycLimits: { maxTransactionAmount: 1e12, dailyTransactionLimit: 1e12 },
    },
    pino({ level: 'warn' }),
  );
  process.stdout.write(`${JSON.stringify({ url: running.url })}\n`);
  process.once('SIGTERM', () => {
    running.close().finally(() => process.exit(0));
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
