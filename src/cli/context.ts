import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import pino, { type Logger } from 'pino';
import { embeddedStoreDir } from '../platform/backend';
import type { CommandContext } from '../platform/commands/commands';
import { loggerOptions } from '../platform/logging';
import { openTally } from '../compose/open';
import type { Tally } from '../compose/tally';
import type { Config } from '../config';
import { embeddedStoreHolder, lockFile } from '../server';

/** Exit codes of the binary; scripts (cron audits) tell "found a difference" from "could not run". */
export const EXIT = { ok: 0, error: 1, storeInUse: 2, auditFailed: 3 } as const;

/** A failure to report as is (message on stderr, no stack) with its exit code. An empty message prints nothing. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.error,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Where a command writes. The binary maps `out` to stdout and `err` to stderr; tests capture them. */
export interface CliIo {
  /** One line of the command's result. */
  out: (line: string) => void;
  /** Notes and progress for the person at the terminal; no newline is added. */
  err?: (text: string) => void;
  /** Whether `err` is a terminal: progress redraws one line in place only then. */
  errIsTTY?: boolean;
  log?: Logger;
  /** Aborted on Ctrl-C: long-running commands (tail --follow, export) stop cleanly. */
  signal?: AbortSignal;
}

/** Warnings and errors only, on stderr, so stdout stays the command's output (NDJSON can be piped). */
export function cliLogger(): Logger {
  return pino(loggerOptions('warn'), pino.destination({ dest: 2, sync: true }));
}

/** Who the events of a CLI command are attributed to. */
export function operatorContext(): CommandContext {
  return { commandId: randomUUID(), metadata: { correlationId: randomUUID(), actor: { kind: 'operator', id: 'cli' } } };
}

/**
 * Opens the configured backend, runs `fn`, and always closes it. Projections are not run: the
 * server (or whoever holds the leases) owns them; write commands use `withProjections`.
 */
export async function withTally<T>(config: Config, io: CliIo, fn: (tally: Tally) => Promise<T>): Promise<T> {
  const releaseLock = claimEmbeddedStore(config);
  try {
    // A command's projections run on its own thread: a worker would be one more pool for one command.
    const { tally } = await openTally({ ...config, projectionsThread: 'main' }, io.log ?? cliLogger());
    try {
      await tally.start({ runProjections: false });
      return await fn(tally);
    } finally {
      await tally.close();
    }
  } finally {
    releaseLock();
  }
}

/**
 * Runs a write with the projection engine started, so the services' read-your-writes waits are met
 * and the read models reflect the change before the CLI exits. It catches up first too: some
 * commands check the read models before writing (a key for an unknown partner). Where a server
 * holds the leases (shared Postgres) the engine here only watches its checkpoints.
 */
export async function withProjections<T>(tally: Tally, io: CliIo, fn: () => Promise<T>): Promise<T> {
  tally.engine.start();
  try {
    await catchUp(tally, io);
    const result = await fn();
    await catchUp(tally, io);
    return result;
  } finally {
    await tally.engine.stop();
  }
}

async function catchUp(tally: Tally, io: CliIo): Promise<void> {
  const head = await tally.store.headPosition();
  if (head && !(await tally.engine.waitFor(head, { timeoutMs: tally.config.readYourWritesTimeoutMs }))) {
    io.err?.('Note: the read models have not caught up with the log yet; they will once their projections run.\n');
  }
}

/**
 * The embedded PGlite store must never be open in two processes. Refuse when the server (or
 * another CLI) holds it, and hold its lock file while we do, so a server started meanwhile refuses
 * too (`tally events tail --follow` can run for hours). Postgres is shared: no lock.
 */
function claimEmbeddedStore(config: Config): () => void {
  if (config.databaseUrl) return () => {};
  // The CLI works on the server's store; an empty one made here would only answer "nothing".
  if (!existsSync(embeddedStoreDir(config)))
    throw new CliError(
      `No embedded store in ${config.dataDir}: run the CLI with the server's DATA_DIR (DATA_DIR=/path/to/data npx tally ...), or set DATABASE_URL to its Postgres`,
    );
  const holder = embeddedStoreHolder(config);
  if (holder) {
    throw new CliError(
      `The embedded store in ${config.dataDir} is in use by the running server (pid ${holder}): stop it first, or point DATABASE_URL at a Postgres server`,
      EXIT.storeInUse,
    );
  }
  const file = lockFile(config);
  mkdirSync(config.dataDir, { recursive: true });
  writeFileSync(file, String(process.pid));
  return () => {
    const stillOurs = (() => {
      try {
        return readFileSync(file, 'utf8').trim() === String(process.pid);
      } catch {
        return false;
      }
    })();
    if (stillOurs) rmSync(file, { force: true });
  };
}
