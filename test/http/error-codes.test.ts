import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { AUDIT_REFUSALS } from '../../src/domain/audit';
import { CARD_REFUSALS } from '../../src/domain/cards';
import { IDENTITY_REFUSALS } from '../../src/domain/identity';
import { LEDGER_REFUSALS } from '../../src/domain/ledger';
import { NOTIFICATION_REFUSALS } from '../../src/domain/notifications';
import { PLATFORM_CODES } from '../../src/platform/http/errors';

const root = join(__dirname, '..', '..');
const filesUnder = (dir: string) =>
  (readdirSync(join(root, dir), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(root, dir, f));
const catalogued = [IDENTITY_REFUSALS, LEDGER_REFUSALS, CARD_REFUSALS, NOTIFICATION_REFUSALS, AUDIT_REFUSALS].flatMap((c) =>
  Object.values(c).map((r) => r.code),
);

/** Codes the source names outside the catalogues: `{ code: '...' }` given to an HTTP answer. */
function codesNamedInSource(): string[] {
  const found = new Set<string>();
  for (const file of filesUnder('src')) for (const m of readFileSync(file, 'utf8').matchAll(/\bcode: '([a-z][a-z0-9_]*)'/g)) found.add(m[1] as string);
  return [...found];
}

describe('Error codes: each one documented in docs/errors.md and asserted by a test', () => {
  const every = [...new Set([...catalogued, ...Object.values(PLATFORM_CODES), ...codesNamedInSource()])].sort();

  it('are snake_case, and a catalogue names each code for one status only', () => {
    for (const code of every) expect(code).to.match(/^[a-z][a-z0-9_]*$/);
    const statusOf = new Map<string, string>();
    for (const r of [IDENTITY_REFUSALS, LEDGER_REFUSALS, CARD_REFUSALS, NOTIFICATION_REFUSALS, AUDIT_REFUSALS].flatMap((c) => Object.values(c))) {
      const kind = statusOf.get(r.code);
      expect(kind ?? r.kind, `${r.code} has one kind`).to.equal(r.kind);
      statusOf.set(r.code, r.kind);
    }
  });

  it('lists every code on docs/errors.md', () => {
    const page = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');
    expect(every.filter((code) => !page.includes(`\`${code}\``))).to.deep.equal([]);
  });

  it('has every catalogued code asserted, literally, by some test', () => {
    const tests = filesUnder('test')
      .filter((f) => !f.endsWith('error-codes.test.ts'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    expect(catalogued.filter((code) => !tests.includes(`'${code}'`))).to.deep.equal([]);
  });
});
