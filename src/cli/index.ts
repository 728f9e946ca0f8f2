import { resolve } from 'node:path';
import { Command } from 'commander';
import { type Config, loadConfig } from '../config';
import { auditVerify } from './audit';
import { type OfflineOptions, verifyOffline } from './audit-offline';
import { CliError, type CliIo, EXIT } from './context';
import { exportEvents, readEvents, tailEvents } from './events';
import { addKeyCommands } from './keys';
import { createPartner, createPartnerKey, listPartners, revokePartnerKey } from './partners';
import { listProjections, rebuildProjection } from './projections';
import { addUserCommands } from './users';
import { listDeliveries } from './webhooks';
import { addSealCommand } from './seal';

/** The `tally` operator CLI: wiring only; each command lives in its group's file. */

const HELP_FOOTER = `
Configuration (environment): DATABASE_URL (Postgres server; otherwise the embedded store in DATA_DIR),
KURRENTDB_URL (event log in KurrentDB), DATA_DIR (default ./data).
Exit codes: 0 ok, 1 error, 2 the embedded store is in use by the server, 3 the audit found differences.`;

export interface ProgramDeps {
  /** Read when a command runs, so `--help` works without a valid environment. */
  config?: () => Config;
  io?: CliIo;
}

export function processIo(): CliIo {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (text) => process.stderr.write(text),
    errIsTTY: process.stderr.isTTY === true,
  };
}

/** Long-running commands get a signal aborted by Ctrl-C (unless the caller brought its own). */
async function interruptible<T>(io: CliIo, fn: (io: CliIo) => Promise<T>): Promise<T> {
  if (io.signal) return fn(io);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  try {
    return await fn({ ...io, signal: controller.signal });
  } finally {
    process.off('SIGINT', stop);
  }
}

export function buildProgram(deps: ProgramDeps = {}): Command {
  const config = deps.config ?? (() => loadConfig());
  const io = deps.io ?? processIo();
  const program = new Command('tally').description('Tally operator CLI').showHelpAfterError().addHelpText('after', HELP_FOOTER);
  for (const add of [addEventCommands, addProjectionCommands, addAuditCommands, addPartnerCommands, addWebhookCommands, addKeyCommands, addUserCommands])
    add(program, config, io);
  return program;
}

function addEventCommands(program: Command, config: () => Config, io: CliIo): void {
  const events = program.command('events').description('read the event log');
  events
    .command('read <stream>')
    .description("print a stream's events and its aggregate state, as of an instant with --at")
    .option('--at <iso>', 'only events recorded at or before this instant (ISO 8601 with a time zone)')
    .option('--json', 'one JSON document instead of text')
    .action(async (stream: string, opts: { at?: string; json?: boolean }) => {
      await readEvents(config(), stream, opts, io);
    });
  events
    .command('tail')
    .description('print the log in order as NDJSON')
    .option('--from <position>', 'start after this position (exclusive)')
    .option('--follow', 'keep printing new events until Ctrl-C')
    .action(async (opts: { from?: string; follow?: boolean }) => {
      await interruptible(io, (io) => tailEvents(config(), opts, io));
    });
  events
    .command('export')
    .description('NDJSON of the events recorded in [--from, --to)')
    .requiredOption('--from <iso>', 'first instant (inclusive)')
    .requiredOption('--to <iso>', 'last instant (exclusive)')
    .option('--out <file>', 'write to this file instead of stdout')
    .action(async (opts: { from: string; to: string; out?: string }) => {
      await interruptible(io, (io) => exportEvents(config(), opts, io));
    });
  addSealCommand(events, config, io, interruptible);
}

function addProjectionCommands(program: Command, config: () => Config, io: CliIo): void {
  const projections = program.command('projections').description('inspect and rebuild read models');
  projections
    .command('list')
    .description('each projection with its checkpoint and lag (events of its types beyond it)')
    .action(async () => {
      await listProjections(config(), io);
    });
  projections
    .command('rebuild <name>')
    .description('rebuild a read model from the log into new tables, then swap them in')
    .action(async (name: string) => {
      await rebuildProjection(config(), name, io);
    });
}

function addAuditCommands(program: Command, config: () => Config, io: CliIo): void {
  program
    .command('audit')
    .description('verify the log and the read models')
    .command('verify')
    .description(
      "check every stream's hash chain and that every read model equals the fold of the log; with --checkpoint and --events, offline and without a database, that an export extends a signed checkpoint",
    )
    .option('--checkpoint <file>', 'a checkpoint as GET /audit/v1/checkpoints/{id} answered it (offline verification)')
    .option('--events <ndjson>', 'an export of the log from its start, as tally events export or GET /audit/v1/events write it')
    .option('--key <jwk file>', 'the public key (a JWK, or GET /audit/v1/keys saved); default: keys.json beside the checkpoint')
    .action(async (opts: Partial<OfflineOptions>) => {
      if (opts.checkpoint || opts.events || opts.key) {
        if (!opts.checkpoint || !opts.events) throw new CliError('Offline verification needs both --checkpoint and --events');
        await interruptible(io, (io) => verifyOffline(opts as OfflineOptions, io));
        return;
      }
      const report = await auditVerify(config(), io);
      // The report is already printed: only the exit code is left to say.
      if (!report.ok) throw new CliError('', EXIT.auditFailed);
    });
}

function addPartnerCommands(program: Command, config: () => Config, io: CliIo): void {
  const partners = program.command('partners').description('manage partners and their API keys');
  partners
    .command('create <name>')
    .description('create a partner with its first key pair (the secret is shown once)')
    .option('--sandbox', 'a sandbox partner (default: SANDBOX from the environment)')
    .option('--no-sandbox', 'a live partner')
    .action(async (name: string, opts: { sandbox?: boolean }) => {
      await createPartner(config(), name, opts, io);
    });
  partners
    .command('list')
    .description('every partner with its id, whether it is a sandbox partner, and its active keys')
    .action(async () => {
      await listPartners(config(), io);
    });
  const keys = partners.command('keys').description("manage a partner's API keys");
  keys
    .command('create <partnerId>')
    .description('create another key pair (the secret is shown once)')
    .action(async (partnerId: string) => {
      await createPartnerKey(config(), partnerId, io);
    });
  keys
    .command('revoke <partnerId> <apiKey>')
    .description('revoke a key pair at once')
    .action(async (partnerId: string, apiKey: string) => {
      await revokePartnerKey(config(), partnerId, apiKey, io);
    });
}

function addWebhookCommands(program: Command, config: () => Config, io: CliIo): void {
  program
    .command('webhooks')
    .description('partner notifications')
    .command('deliveries')
    .description("a partner's notifications, newest first, with their status and last attempt")
    .requiredOption('--partner <id>', 'the partner id')
    .option('--status <status>', 'pending, succeeded or failed')
    .option('--limit <n>', 'how many (1-100, default 20)')
    .action(async (opts: { partner: string; status?: string; limit?: string }) => {
      await listDeliveries(config(), opts, io);
    });
}

/** Runs the CLI and resolves to the exit code; failures become one line on stderr, not a stack. */
export async function main(argv: string[] = process.argv): Promise<number> {
  // A closed pipe (`tally events tail | head`) is a normal way to stop reading.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
  });
  try {
    await buildProgram().parseAsync(argv);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CliError) {
      if (error.message) process.stderr.write(`${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(`${describe(error)}\n`);
    return EXIT.error;
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // StoreUnavailableError and friends say what failed; their cause says why.
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}

// bin/tally.js requires this file, so it is not require.main there.
if (require.main === module || require.main?.filename === resolve(__dirname, '../../bin/tally.js')) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
