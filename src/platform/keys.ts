import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AuditKey, newAuditKey } from './audit/signing';
import { openDataDir } from './data-dir';

/**
 * The service's own secrets: JWT signing keys (rotating, each with a `kid`), the pepper that keys
 * login-code hashes, the sandbox providers' webhook secrets, and the Ed25519 keys that sign audit
 * checkpoints (the newest signs; older ones stay published so old checkpoints still verify; they are
 * not rotated by time: an auditor pins a key). From `TALLY_KEYS` (JSON, production)
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
  audit: AuditKey[];
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
    audit: [newAuditKey(at)],
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

export class NoAuditKeyError extends Error {
  constructor() {
    super('TALLY_KEYS has no audit key: add "audit": [{"kid", "privateKey" (Ed25519 PKCS#8 DER, base64url), "createdAt"}] (see docs/audit.md)');
    this.name = 'NoAuditKeyError';
  }
}

export function loadKeys(options: { dataDir: string; env?: NodeJS.ProcessEnv }): ServiceKeys {
  const fromEnv = (options.env ?? process.env).TALLY_KEYS;
  if (fromEnv) {
    // A key made up here would sign checkpoints no auditor can pin, and differ on every node and start.
    const keys = withDefaults(JSON.parse(fromEnv) as ServiceKeys);
    if (!keys.audit?.length) throw new NoAuditKeyError();
    return keys;
  }
  openDataDir(options.dataDir);
  const file = join(options.dataDir, 'keys.json');
  let keys: ServiceKeys;
  if (existsSync(file)) keys = withDefaults(JSON.parse(readFileSync(file, 'utf8')) as ServiceKeys);
  else keys = generateKeys();
  // A keys file from before audit checkpoints gets its first audit key, kept from then on.
  const missingAudit = !keys.audit?.length;
  if (missingAudit) keys = { ...keys, audit: [newAuditKey()] };
  const rotated = rotate(keys);
  if (rotated.changed || missingAudit || !existsSync(file)) {
    writeFileSync(file, JSON.stringify(rotated.keys, null, 2), { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return rotated.keys;
}
