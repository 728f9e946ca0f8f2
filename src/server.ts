import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { openBackend } from './app/backend';
import { Tally } from './app/tally';
import type { Config } from './config';
import { createApp } from './http/app';

export interface RunningServer {
  tally: Tally;
  server: Server;
  url: string;
  close(): Promise<void>;
}

export function makeLogger(level: string): Logger {
  return pino({
    level,
    // Belt and braces: these never go to logs, even if someone logs a whole request.
    redact: {
      paths: ['*.apiSecret', '*.secret', '*.code', '*.password', '*.accessToken', '*.refreshToken', 'req.headers.authorization', 'req.headers["x-api-secret"]'],
      censor: '[redacted]',
    },
  });
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
  const backend = await openBackend(config);
  if (!config.databaseUrl) writeFileSync(lockFile(config), String(process.pid));
  const tally = new Tally(config, backend.store, backend.sql, log);
  await tally.start({ runProjections: true });
  const app = createApp(tally);
  const server = app.listen(config.port);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  log.info({ port, backend: backend.describe }, 'listening');
  return {
    tally,
    server,
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await tally.close();
      if (!config.databaseUrl) rmSync(lockFile(config), { force: true });
    },
  };
}
