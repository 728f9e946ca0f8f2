import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDataDir } from './data-dir';

/**
 * The service's own secrets: JWT signing keys (rotating, each with a `kid`), the pepper that keys
 * login-code hashes, and the sandbox providers' webhook secrets. From `TALLY_KEYS` (JSON, production)
 * or generated once into `DATA_DIR/keys.json` (mode 0600). Never printed or logged.
 */
export interface SigningKey {
  kid: string;
  secret: string;
  createdAt: string;
}

export interface ServiceKeys {
  signing: SigningKey[];
  pepper: string;
  webhooks: Record<string, string>;
}

/** A new signing key every 30 days; the previous one keeps verifying for a day (> token lifetime). */
export const KEY_ROTATION_DAYS = 30;
const RETIRED_KEY_GRACE_MS = 24 * 3600 * 1000;

const newSigningKey = (at: Date): SigningKey => ({ kid: randomUUID(), secret: randomBytes(32).toString('base64url'), createdAt: at.toISOString() });

export function generateKeys(at = new Date()): ServiceKeys {
  return {
    signing: [newSigningKey(at)],
    pepper: randomBytes(32).toString('base64url'),
    webhooks: {
      'identity/sandbox': randomBytes(24).toString('base64url'),
      'payments/mock': randomBytes(24).toString('base64url'),
      'payouts/mock': randomBytes(24).toString('base64url'),
      'cards/sandbox': randomBytes(24).toString('base64url'),
    },
  };
}

/** Adds a key when the newest is older than the rotation period; drops keys retired for over a day. */
export function rotate(keys: ServiceKeys, now = new Date()): { keys: ServiceKeys; changed: boolean } {
  const newest = keys.signing[keys.signing.length - 1];
  if (newest && now.getTime() - Date.parse(newest.createdAt) < KEY_ROTATION_DAYS * 86_400_000) return { keys, changed: false };
  const added = newSigningKey(now);
  const kept = keys.signing.filter((_k, i, all) => {
    const successor = all[i + 1];
    return !successor || now.getTime() - Date.parse(successor.createdAt) < RETIRED_KEY_GRACE_MS;
  });
  return { keys: { ...keys, signing: [...kept, added] }, changed: true };
}

function withDefaults(keys: ServiceKeys): ServiceKeys {
  const fresh = generateKeys();
  return { ...keys, webhooks: { ...fresh.webhooks, ...(keys.webhooks ?? {}) } };
}

export function loadKeys(options: { dataDir: string; env?: NodeJS.ProcessEnv }): ServiceKeys {
  const fromEnv = (options.env ?? process.env).TALLY_KEYS;
  if (fromEnv) return withDefaults(JSON.parse(fromEnv) as ServiceKeys);
  openDataDir(options.dataDir);
  const file = join(options.dataDir, 'keys.json');
  let keys: ServiceKeys;
  if (existsSync(file)) keys = withDefaults(JSON.parse(readFileSync(file, 'utf8')) as ServiceKeys);
  else keys = generateKeys();
  const rotated = rotate(keys);
  if (rotated.changed || !existsSync(file)) {
    writeFileSync(file, JSON.stringify(rotated.keys, null, 2), { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return rotated.keys;
}
