import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { expect } from 'chai';
import { leftoverTempDirs, TEST_RUN, tempDir } from './temp';

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('temp folders of the test run', () => {
  it('are all made through tempDir, which marks them with the run so the after-suite check sees them', () => {
    const root = join(__dirname, '..');
    // temp.ts is tempDir itself; postgres.ts names its clusters with the pid, which the check also counts.
    const allowed = new Set(['support/temp.ts', 'support/postgres.ts', 'support/temp.test.ts']);
    const direct = sources(root)
      .filter((file) => !allowed.has(relative(root, file)))
      .filter((file) => /\bmkdtemp(Sync)?\(/.test(readFileSync(file, 'utf8')));
    expect(direct, 'files making temp folders without tempDir').to.deep.equal([]);
  });

  it("counts a folder of this run left in the temp dir, and not another run's folder beside it", () => {
    const ours = tempDir('tally-leak-check-');
    const another = mkdtempSync(join(tmpdir(), 'tally-leak-check-99999.other-'));
    try {
      expect(ours).to.include(`-${TEST_RUN}-`);
      const left = leftoverTempDirs();
      expect(left).to.include(ours);
      expect(left).not.to.include(another);
    } finally {
      rmSync(ours, { recursive: true, force: true });
      rmSync(another, { recursive: true, force: true });
    }
    expect(leftoverTempDirs()).not.to.include(ours);
  });
});
