import type { Logger } from 'pino';
import type { Config } from '../config';
import { buildProviders } from '../providers';
import { openBackend } from '../platform/backend';
import { loadKeys } from '../platform/keys';
import { DataKeys } from '../platform/sealing/data-keys';
import { Keks } from '../platform/sealing/keks';
import { Sealer } from '../platform/sealing/sealer';
import { Tally } from './tally';

/** Opens the stores, keys and providers the configuration names; `start` is the caller's. */
export async function openTally(config: Config, log: Logger): Promise<{ tally: Tally; describe: string }> {
  const backend = await openBackend(config);
  const keys = loadKeys({ dataDir: config.dataDir });
  const urls = { publicBaseUrl: config.publicBaseUrl, selfUrl: config.publicBaseUrl };
  // A data key wrapped under a KEK this process lacks: keys.json may have gained it (`tally keys rotate`).
  const keks = new Keks(keys.keks, () => loadKeys({ dataDir: config.dataDir }).keks);
  const sealer = new Sealer(new DataKeys(backend.sql, keks), keys.pepper);
  const providers = buildProviders(config, backend.sql, keys, urls, sealer);
  return { tally: new Tally(config, backend.store, backend.sql, log, keys, providers, urls, sealer), describe: backend.describe };
}
