import type { Logger } from 'pino';
import type { Config } from '../config';
import { buildProviders } from '../providers';
import { openBackend } from '../platform/backend';
import { loadKeys } from '../platform/keys';
import { Tally } from './tally';

/** Opens the stores, keys and providers the configuration names; `start` is the caller's. */
export async function openTally(config: Config, log: Logger): Promise<{ tally: Tally; describe: string }> {
  const backend = await openBackend(config);
  const keys = loadKeys({ dataDir: config.dataDir });
  const urls = { publicBaseUrl: config.publicBaseUrl, selfUrl: config.publicBaseUrl };
  const providers = buildProviders(config, backend.sql, keys, urls);
  return { tally: new Tally(config, backend.store, backend.sql, log, keys, providers, urls), describe: backend.describe };
}
