import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { layout } from './architecture/layout';
import { checkArchitecture, compareText, compareWithBaseline, formatBaseline, parseBaseline, ruleOf, type Violation } from './support/architecture';

/**
 * The ratchet over src/'s layering (test/architecture/layout.ts): every violation found must be a
 * line of known-violations.txt, and every line there must still occur, so the list only shrinks as
 * the tree moves into the layout. `ARCH_BASELINE=write npx mocha test/architecture.test.ts`
 * rewrites the list from the tree as it is.
 */

const ROOT = join(__dirname, '..');
const BASELINE = join(__dirname, 'architecture', 'known-violations.txt');
const BASELINE_NAME = 'test/architecture/known-violations.txt';
const HEADER = [
  'Violations of test/architecture/layout.ts that src/ still has: one key per line, sorted.',
  'Delete a line when its violation is fixed; never add one by hand (the layering forbids it).',
  'Rewrite from the tree: ARCH_BASELINE=write npx mocha test/architecture.test.ts',
];

describe('architecture (the layering of src/ against its baseline)', () => {
  let violations: Violation[] = [];
  let baseline: string[] = [];
  let added: string[] = [];
  let fixed: string[] = [];

  before(() => {
    violations = checkArchitecture(ROOT, layout);
    const keys = violations.map((v) => v.key);
    if (process.env.ARCH_BASELINE === 'write') rewriteBaseline(keys);
    baseline = parseBaseline(readFileSync(BASELINE, 'utf8'));
    ({ added, fixed } = compareWithBaseline(keys, baseline));
    printSummary(keys, baseline);
  });

  it('finds no violation that the baseline does not already list', () => {
    const lines = violations.filter((v) => added.includes(v.key)).map(describeNew);
    expect(lines, `${lines.length} new architecture violation(s): the layering forbids them (see test/architecture/layout.ts):\n${lines.join('\n')}\n`).to.be
      .empty;
  });

  it('lists no violation that no longer occurs (the baseline only shrinks)', () => {
    const lines = fixed.map((key) => `  ${key}`);
    expect(lines, `${lines.length} line(s) of ${BASELINE_NAME} no longer occur: fixed, so delete them from the file:\n${lines.join('\n')}\n`).to.be.empty;
  });

  it('keeps the baseline sorted and without duplicates', () => {
    const misplaced = baseline.filter((key, i) => i > 0 && compareText(baseline[i - 1]!, key) >= 0);
    expect(misplaced, `${BASELINE_NAME}: these lines are out of order or repeated (keep it sorted):\n  ${misplaced.join('\n  ')}\n`).to.be.empty;
  });
});

function describeNew(violation: Violation): string {
  return violation.message === violation.key ? `  ${violation.key}` : `  ${violation.message}\n      (baseline key: ${violation.key})`;
}

function rewriteBaseline(keys: readonly string[]): void {
  const before = existsSync(BASELINE) ? parseBaseline(readFileSync(BASELINE, 'utf8')) : [];
  writeFileSync(BASELINE, formatBaseline(HEADER, keys));
  const { added } = compareWithBaseline(keys, before);
  console.warn(`\n  WARNING: rewrote ${BASELINE_NAME} (${keys.length} lines). It should only ever shrink:`);
  console.warn(`  ${added.length} line(s) were added; review the diff before committing it.\n`);
}

function printSummary(current: readonly string[], baseline: readonly string[]): void {
  const rules = [...new Set([...current, ...baseline].map(ruleOf))].sort(compareText);
  const count = (keys: readonly string[], rule: string) => keys.filter((key) => ruleOf(key) === rule).length;
  console.log('\n  architecture: rule, violations now, in the baseline');
  for (const rule of rules) console.log(`    ${rule.padEnd(14)} ${String(count(current, rule)).padStart(4)} ${String(count(baseline, rule)).padStart(4)}`);
}
