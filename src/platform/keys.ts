import { hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AuditKey, newAuditKey } from './audit/signing';
import { openDataDir } from './data-dir';

/**
 * The service's own secrets: JWT signing keys (rotating, each with a `kid`), the pepper that keys
 * login-code hashes, the sandbox providers' webhook secrets, the key-encryption keys that wrap the
 * data keys (platform/sealing), and the Ed25519 keys that sign audit checkpoints (the newest signs;
 * older ones stay published so old checkpoints still verify; they are not rotated by time: an auditor
 * pins a key). From `TALLY_KEYS` (JSON, production) or generated once into `DATA_DIR/keys.json`
 * (mode 0600). Never printed or logged (`tally keys rotate` prints a new TALLY_KEYS for the operator
 * to paste: that is its purpose).
 */
export interface SigningKey {
  kid: string;
  secret: string;
  createdAt: string;
}

/**
 * A key-encryption key (KEK): wraps data keys, never seals data itself. The last of `keks` wraps new
 * data keys; older ones stay while a data key is still wrapped under them (`tally keys rotate`).
 */
export interface KeyEncryptionKey {
  kid: string;
  secret: string;
  createdAt: string;
}

export interface ServiceKeys {
  signing: SigningKey[];
  pepper: string;
  webhooks: Record<string, string>;
  keks: KeyEncryptionKey[];
  audit: AuditKey[];
}

/** A new signing key every 30 days; the previous one keeps verifying for a day (> token lifetime). */
export const KEY_ROTATION_DAYS = 30;
const RETIRED_KEY_GRACE_MS = 24 * 3600 * 1000;

const newSigningKey = (at: Date): SigningKey => ({ kid: randomUUID(), secret: randomBytes(32).toString('base64url'), createdAt: at.toISOString() });
export const newKek = (at = new Date()): KeyEncryptionKey => ({
  kid: randomUUID(),
  secret: randomBytes(32).toString('base64url'),
  createdAt: at.toISOString(),
});

/**
 * The KEK of a TALLY_KEYS written before KEKs existed: derived from its pepper, so every node and
 * every restart derives the same one (a random one would lose the data keys at the next start).
 * `tally keys rotate` writes it out beside the new one; once nothing names it, it can go.
 */
export const PEPPER_KEK_ID = 'pepper';
const pepperKek = (pepper: string): KeyEncryptionKey => ({
  kid: PEPPER_KEK_ID,
  secret: Buffer.from(hkdfSync('sha256', pepper, 'tally', 'key-encryption-key/pepper', 32)).toString('base64url'),
  createdAt: new Date(0).toISOString(),
});

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
    keks: [newKek(at)],
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

/** An empty `keys.keks` is a mistake (every data key would be lost), not a request for a new one. */
function checkKeks(keys: ServiceKeys, source: string): ServiceKeys {
  if (!Array.isArray(keys.keks) || keys.keks.length === 0) throw new Error(`${source} has an empty "keks": put back the key-encryption keys`);
  return keys;
}

export function loadKeys(options: { dataDir: string; env?: NodeJS.ProcessEnv }): ServiceKeys {
  const fromEnv = (options.env ?? process.env).TALLY_KEYS;
  if (fromEnv) {
    const keys = withDefaults(JSON.parse(fromEnv) as ServiceKeys);
    // A key made up here would sign checkpoints no auditor can pin, and differ on every node and start.
    if (!keys.audit?.length) throw new NoAuditKeyError();
    return checkKeks(keys.keks === undefined ? { ...keys, keks: [pepperKek(keys.pepper)] } : keys, 'TALLY_KEYS');
  }
  openDataDir(options.dataDir);
  const file = join(options.dataDir, 'keys.json');
  let keys: ServiceKeys;
  if (existsSync(file)) keys = withDefaults(JSON.parse(readFileSync(file, 'utf8')) as ServiceKeys);
  else keys = generateKeys();
  // A keys file from before key-encryption keys or audit checkpoints gets its first one of each, kept from then on.
  const missingKeks = keys.keks === undefined;
  if (missingKeks) keys = { ...keys, keks: [newKek()] };
  const missingAudit = !keys.audit?.length;
  if (missingAudit) keys = { ...keys, audit: [newAuditKey()] };
  checkKeks(keys, file);
  const rotated = rotate(keys);
  if (rotated.changed || missingKeks || missingAudit || !existsSync(file)) writeKeysFile(options.dataDir, rotated.keys);
  return rotated.keys;
}

/** DATA_DIR/keys.json, readable by its owner only; written aside and renamed, so a crash leaves the old file or the new, never half. */
export function writeKeysFile(dataDir: string, keys: ServiceKeys): void {
  const file = join(dataDir, 'keys.json');
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, JSON.stringify(keys, null, 2), { mode: 0o600 });
  chmodSync(aside, 0o600);
  renameSync(aside, file);
}
