import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * This run's mark, in the name of every temp folder the tests make (`tally-cli-<run>-XXXXXX`): the check
 * after the suite counts only folders with it, so the folders of a suite running beside ours (other
 * engineers share this machine and its temp dir) are never taken for ours. Pid and start time: unique
 * among live runs, and across a pid reused later.
 */
export const TEST_RUN = `${process.pid}.${Date.now().toString(36)}`;

const made = new Set<string>();

/** A fresh folder in the temp dir, removed when the test run ends (removeTempDirs, a root hook). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}${TEST_RUN}-`));
  made.add(dir);
  return dir;
}

/** Removes every folder tempDir made (and any folder removed early is simply gone). */
export function removeTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}

/** This process's throwaway clusters (test/support/postgres.ts names them with the pid). */
const clusterPrefix = `tally-pg-${process.pid}-`;

function ourFolders(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith('tally-') && (name.includes(`-${TEST_RUN}-`) || name.startsWith(clusterPrefix)));
}

/** Ours before the run began: a cluster folder of a dead process whose pid we now have. */
const presentAtStart = new Set(ourFolders());

/** Folders in the temp dir that this run made and that are still there (after removeTempDirs, none should be). */
export function leftoverTempDirs(): string[] {
  return ourFolders()
    .filter((name) => !presentAtStart.has(name))
    .map((name) => join(tmpdir(), name));
}
