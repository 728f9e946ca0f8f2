import { chmodSync, mkdirSync } from 'node:fs';

/**
 * DATA_DIR holds the embedded store and the service's keys: only the service's user may enter it
 * (decisions.md, "Input and hardening"). PGlite writes its files 0666 whatever the umask, so the
 * directory is what keeps other users out. mkdir's mode is masked by the umask and leaves an
 * existing directory as it was (earlier versions made it 0755), hence the chmod on every open.
 */
export function openDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}
