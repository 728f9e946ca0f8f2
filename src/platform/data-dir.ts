import { chmodSync, mkdirSync, statSync } from 'node:fs';

/**
 * DATA_DIR holds the embedded store and the service's keys: only the service's user may enter it
 * (docs/decisions.md, "Input and hardening"). PGlite writes its files 0666 whatever the umask, so the
 * directory is what keeps other users out. mkdir's mode is masked by the umask and leaves an
 * existing directory as it was (earlier versions made it 0755), hence the chmod on every open.
 *
 * Only a directory's owner may chmod it: one made by another user (an operator's mkdir, a mounted
 * volume) answers EPERM. The service then starts if the directory is already closed to group and
 * others, and refuses to start, naming the directory and its mode, if it is not.
 */
export function openDataDir(dir: string, chmod: (path: string, mode: number) => void = chmodSync): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    chmod(dir, 0o700);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EPERM') throw error;
    const mode = statSync(dir).mode & 0o777;
    if (mode & 0o077) {
      throw new Error(
        `DATA_DIR ${dir} is mode ${mode.toString(8).padStart(4, '0')} and this user cannot change it (not its owner): other users may read the store and keys in it. Make it 0700 (chmod 700), or owned by the service's user, and start again`,
      );
    }
  }
}
