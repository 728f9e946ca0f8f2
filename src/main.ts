import { randomUUID } from 'node:crypto';
import { loadConfig } from './config';
import { makeLogger, startServer } from './server';

/** How long a shutdown waits for the requests in flight before cutting their connections. */
const DRAIN_MS = 10_000;

/** `npm start`: serve the API; on an empty store, create a sandbox partner and say how to begin. */
async function main() {
  const config = loadConfig();
  const log = makeLogger(config.logLevel);
  const running = await startServer({ ...config }, log);
  const { tally } = running;
  const base = config.publicBaseUrl;
  if ((await tally.partners.count()) === 0 && config.sandbox) {
    const partner = await tally.partners.create('Sandbox partner', {
      sandbox: true,
      ctx: { commandId: randomUUID(), metadata: { actor: { kind: 'system', id: 'first-start' } } },
    });
    // The one time this secret is shown: only its scrypt hash is stored.
    process.stdout.write(
      [
        '',
        'Tally is running. A sandbox partner was created on this first start:',
        `  Partner id:   ${partner.id}   (for the CLI: npx tally partners keys create ${partner.id})`,
        `  X-Api-Key:    ${partner.apiKey}`,
        `  X-Api-Secret: ${partner.apiSecret}`,
        // The README's first session reads these three variables; the curl only reads, so nothing it does stands in that session's way.
        "The secret is shown only now; keep it. For the README's first session, in another terminal:",
        `  export TALLY_URL=${base} API_KEY=${partner.apiKey} API_SECRET=${partner.apiSecret}`,
        "and try the key pair (the partner's users: none yet):",
        `  curl -sS --fail-with-body "$TALLY_URL/api/v1/partner/users" -H "X-Api-Key: $API_KEY" -H "X-Api-Secret: $API_SECRET"`,
        '',
      ].join('\n'),
    );
  } else {
    process.stdout.write(`\nTally is running at ${base} (API reference: ${base}/docs).\n`);
  }
  process.stdout.write(`API reference: ${base}/docs  OpenAPI: ${base}/api/v1/openapi.json\n\n`);
  // SIGTERM (docker stop, a process manager) or SIGINT (Ctrl-C): drain, stop the projections, exit 0.
  // A repeated signal changes nothing (Ctrl-C under `npm start` reaches node twice: from the terminal and from npm).
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal, drainMs: DRAIN_MS }, 'shutting down: draining requests in flight');
    // Should closing the stores hang, the process still ends (with 1: the shutdown was not clean).
    setTimeout(() => {
      log.error('shutdown did not finish in time: exiting');
      process.exit(1);
    }, DRAIN_MS + 15_000).unref();
    try {
      await running.close({ drainMs: DRAIN_MS });
    } catch (error) {
      log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
    log.info('shut down');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error) => {
  process.stderr.write(`Tally failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
