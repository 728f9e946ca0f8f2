import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server, type ServerResponse } from 'node:http';
import pino, { type DestinationStream, type Logger } from 'pino';
import { loggerOptions } from './platform/logging';
import { openTally } from './compose/open';
import type { Tally } from './compose/tally';
import type { Config } from './config';
import { createApp, expressServerOptions } from './http/app';
import { LIMITS } from './platform/limits';

export interface RunningServer {
  tally: Tally;
  server: Server;
  url: string;
  /**
   * Stops taking connections, lets the requests in flight finish (up to `drainMs`, 10 s by default;
   * then the connections still open are cut), then stops the projections (their leases released)
   * and closes the stores.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/** The service's logger: personal data and secrets never reach it (platform/logging.ts); `destination` is stdout unless given (tests). */
export function makeLogger(level: string, destination?: DestinationStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}

/** The embedded store is one process's at a time: the server and the CLI check this file. */
export const lockFile = (config: Config) => join(config.dataDir, 'tally.pid');

export function embeddedStoreHolder(config: Config): number | null {
  const file = lockFile(config);
  if (config.databaseUrl || !existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

export async function startServer(config: Config, log: Logger = makeLogger(config.logLevel)): Promise<RunningServer> {
  const holder = embeddedStoreHolder(config);
  if (holder) throw new Error(`The embedded store in ${config.dataDir} is in use by process ${holder}; stop it or set DATA_DIR`);
  const { tally, describe } = await openTally(config, log);
  if (!config.databaseUrl) writeFileSync(lockFile(config), String(process.pid));
  await tally.start({ runProjections: true });
  const app = createApp(tally);
  // Answers in flight, so a drain can tell their keep-alive connections to close once answered.
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const server = createServer(expressServerOptions(app), (req, res) => {
    if (draining) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
    app(req, res);
  });
  server.keepAliveTimeout = LIMITS.http.keepAliveMs;
  // A connection kept alive must not time out on the headers of its next request before then.
  server.headersTimeout = LIMITS.http.keepAliveMs + 1_000;
  server.listen({ port: config.port, backlog: LIMITS.http.listenBacklog });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  tally.urls.selfUrl = `http://127.0.0.1:${port}`;
  // With an ephemeral port (tests) and no PUBLIC_BASE_URL, links point at where we really listen.
  if (config.port === 0 && !process.env.PUBLIC_BASE_URL) tally.urls.publicBaseUrl = tally.urls.selfUrl;
  log.info({ port, backend: describe }, 'listening');
  return {
    tally,
    server,
    url: `http://127.0.0.1:${port}`,
    async close({ drainMs = 10_000 } = {}) {
      // No new connections from here on; idle keep-alive connections are closed now, and those
      // answering a request are closed once answered (not held open until their keep-alive timeout).
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      const deadline = setTimeout(() => {
        log.warn({ drainMs, inFlight: inFlight.size }, 'requests still in flight after the drain period: closing their connections');
        server.closeAllConnections();
      }, drainMs);
      try {
        await closed;
      } finally {
        clearInterval(sweep);
        clearTimeout(deadline);
      }
      // The projections ran during the drain (an answer may wait for them); now they stop and release their leases.
      await tally.close();
      if (!config.databaseUrl) rmSync(lockFile(config), { force: true });
    },
  };
}
