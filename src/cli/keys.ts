import type { Command } from 'commander';
import type { Config } from '../config';
import { type KeyEncryptionKey, loadKeys, newKek, type ServiceKeys, writeKeysFile } from '../platform/keys';
import { DataKeys } from '../platform/sealing/data-keys';
import { Keks } from '../platform/sealing/keks';
import { CliError, type CliIo, withTally } from './context';

/** Data keys re-wrapped per transaction: a short lock on each row, a bounded statement. */
const DEFAULT_BATCH = 500;

export interface RewrapReport {
  current: string;
  rewrapped: number;
  /** KEK ids of the keys that no data key is wrapped under any more (the current one never). */
  removable: string[];
}

export function addKeyCommands(program: Command, config: () => Config, io: CliIo): void {
  const keys = program.command('keys').description('the key-encryption keys that wrap the data keys (see docs/operations.md)');
  keys
    .command('rotate')
    .description(
      'add a key-encryption key, wrap new data keys with it and re-wrap the others under it (with TALLY_KEYS: print the new TALLY_KEYS, then run `keys rewrap`)',
    )
    .option('--batch <n>', `data keys re-wrapped per transaction (default ${DEFAULT_BATCH})`)
    .action(async (opts: { batch?: string }) => {
      await rotateKeks(config(), { batch: batchSize(opts.batch) }, io);
    });
  keys
    .command('rewrap')
    .description('re-wrap every data key under the newest key-encryption key; print the older keys nothing names any more')
    .option('--batch <n>', `data keys re-wrapped per transaction (default ${DEFAULT_BATCH})`)
    .action(async (opts: { batch?: string }) => {
      await rewrapDataKeys(config(), { batch: batchSize(opts.batch) }, io);
    });
}

/**
 * `tally keys rotate`. With DATA_DIR/keys.json: adds a KEK to the file (once the store is ours: the
 * embedded one is refused while the server holds it), then re-wraps every data key under it. With
 * TALLY_KEYS, which no command can change: prints the new TALLY_KEYS and touches nothing; once every
 * node runs with it, `tally keys rewrap` does the rest.
 */
export async function rotateKeks(config: Config, options: { batch?: number }, io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<RewrapReport | null> {
  const added = newKek();
  if (env.TALLY_KEYS) {
    const keys = loadKeys({ dataDir: config.dataDir, env });
    io.out(JSON.stringify(withKek(keys, added)));
    io.err?.(
      `Added key-encryption key ${added.kid} to the TALLY_KEYS printed above (it holds every secret of the service: paste it where TALLY_KEYS is kept, nowhere else).\n` +
        'Restart every node with it, then run `tally keys rewrap` with it to re-wrap the data keys under the new key.\n',
    );
    return null;
  }
  return withTally(config, io, async (tally) => {
    const keys = withKek(loadKeys({ dataDir: config.dataDir, env }), added);
    writeKeysFile(config.dataDir, keys);
    io.out(`added: ${added.kid}`);
    return rewrapAndReport(new DataKeys(tally.sql, new Keks(keys.keks)), keys.keks, options, io);
  });
}

/** `tally keys rewrap`: every data key under the newest KEK; idempotent, and what finishes a rotation cut short. */
export async function rewrapDataKeys(config: Config, options: { batch?: number }, io: CliIo): Promise<RewrapReport> {
  return withTally(config, io, (tally) => rewrapAndReport(tally.sealer.keys, tally.keys.keks, options, io));
}

async function rewrapAndReport(dataKeys: DataKeys, keks: readonly KeyEncryptionKey[], options: { batch?: number }, io: CliIo): Promise<RewrapReport> {
  const current = keks[keks.length - 1]?.kid ?? '';
  const rewrapped = await dataKeys.rewrap(options.batch ?? DEFAULT_BATCH);
  const older = keks.slice(0, -1).map((k) => k.kid);
  const named = new Set(await dataKeys.kekIdsNamed(older));
  const removable = older.filter((kid) => !named.has(kid));
  io.out(`current: ${current}`);
  io.out(`rewrapped: ${rewrapped}`);
  io.out(`removable: ${removable.length > 0 ? removable.join(' ') : '(none)'}`);
  if (named.size > 0)
    io.err?.(`Still named by some data key: ${[...named].join(' ')} (a node running with older keys wrapped one since): run \`tally keys rewrap\` again.\n`);
  if (removable.length > 0)
    io.err?.('A removable key may be deleted from keys.json or TALLY_KEYS once every node runs with the newest key (no node wraps new data keys with it).\n');
  return { current, rewrapped, removable };
}

const withKek = (keys: ServiceKeys, kek: KeyEncryptionKey): ServiceKeys => ({ ...keys, keks: [...keys.keks, kek] });

function batchSize(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new CliError(`--batch must be a whole number from 1 to 10000, not ${text}`);
  return n;
}
