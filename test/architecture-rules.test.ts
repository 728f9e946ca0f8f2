import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import {
  checkArchitecture,
  compareWithBaseline,
  findImportPath,
  formatBaseline,
  importGraph,
  type Layout,
  parseBaseline,
  readAllFacts,
} from './support/architecture';
import { tempDir } from './support/temp';

/**
 * The architecture checker (test/support/architecture.ts) on tiny trees written to a temp folder:
 * each rule fires on a small bad tree and stays quiet on a good one. The layout is a copy of the
 * shape of test/architecture/layout.ts, so editing the real one does not change these.
 */

const LAYOUT: Layout = {
  srcDir: 'src',
  layers: [
    { name: 'platform', rank: 0, paths: ['src/platform/**', 'src/config.ts'], selfContained: true },
    { name: 'domain', rank: 1, paths: ['src/domain/**'], capabilities: true },
    { name: 'projections', rank: 2, paths: ['src/projections/**'], capabilities: true },
    { name: 'providers', rank: 2, paths: ['src/providers/**'], capabilities: true },
    { name: 'app', rank: 3, paths: ['src/app/**'], capabilities: true },
    { name: 'composition', rank: 5, paths: ['src/main.ts', 'src/cli/**'], importsAnything: true },
  ],
  capabilities: ['ledger', 'cards'],
  maxFunctionLines: 70,
  domainErrorFolder: 'src/domain',
};

function writeTree(files: Record<string, string>): string {
  const root = tempDir('tally-arch-');
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  return root;
}

/** The messages of the violations of one rule in the tree. */
function found(rule: string, files: Record<string, string>): string[] {
  return checkArchitecture(writeTree(files), LAYOUT)
    .filter((v) => v.rule === rule)
    .map((v) => v.message);
}

/** A function of exactly `lines` lines. */
function functionOf(lines: number, name = 'work'): string {
  return `export function ${name}() {\n${'  void 0;\n'.repeat(lines - 2)}}\n`;
}

describe('architecture checker', () => {
  describe('unplaced', () => {
    it('reports a file under src that no layer holds', () => {
      expect(found('unplaced', { 'src/misc/x.ts': '', 'src/config.ts': '', 'src/app/a.ts': '' })).to.deep.equal(['unplaced: src/misc/x.ts']);
    });
  });

  describe('platform', () => {
    it('reports a platform file importing any file outside the platform, and no `layer` line for it too', () => {
      const tree = {
        'src/platform/db.ts': "import { x } from '../domain/ledger/money';\nimport '../misc/y';",
        'src/domain/ledger/money.ts': '',
        'src/misc/y.ts': '',
      };
      expect(found('platform', tree)).to.deep.equal([
        'platform: src/platform/db.ts -> src/domain/ledger/money.ts',
        'platform: src/platform/db.ts -> src/misc/y.ts',
      ]);
      expect(found('layer', tree)).to.deep.equal([]);
    });

    it('is quiet when the platform imports itself and packages', () => {
      expect(found('platform', { 'src/platform/db.ts': "import '../config';\nimport 'pg';\nimport 'node:fs';", 'src/config.ts': '' })).to.deep.equal([]);
    });
  });

  describe('layer', () => {
    it('reports an import of a higher layer', () => {
      const tree = { 'src/domain/ledger/money.ts': "import '../../app/tally';", 'src/app/tally.ts': '' };
      expect(found('layer', tree)).to.deep.equal(['layer: src/domain/ledger/money.ts -> src/app/tally.ts']);
    });

    it('reports projections and providers importing each other, either way', () => {
      const tree = { 'src/projections/rows.ts': "import '../providers/port';", 'src/providers/port.ts': "import '../projections/rows';" };
      expect(found('layer', tree)).to.deep.equal([
        'layer: src/projections/rows.ts -> src/providers/port.ts',
        'layer: src/providers/port.ts -> src/projections/rows.ts',
      ]);
    });

    it('is quiet for imports downward, within a layer, and from composition to anything', () => {
      const tree = {
        'src/app/tally.ts': "import '../domain/ids';\nimport '../platform/db';\nimport './keys';",
        'src/app/keys.ts': '',
        'src/domain/ids.ts': '',
        'src/platform/db.ts': '',
        'src/main.ts': "import './app/tally';\nimport './cli/run';\nimport './misc';",
        'src/cli/run.ts': '',
        'src/misc.ts': '',
      };
      expect(found('layer', tree)).to.deep.equal([]);
    });
  });

  describe('surface', () => {
    const ledger = { 'src/app/ledger/index.ts': '', 'src/app/ledger/transfers.ts': '', 'src/domain/ledger/transfer.ts': '' };

    it("reports another capability or a layer's root file reaching past a capability's index.ts", () => {
      const tree = { ...ledger, 'src/app/cards/cards.ts': "import '../ledger/transfers';", 'src/app/tally.ts': "import './ledger/transfers';" };
      expect(found('surface', tree)).to.deep.equal([
        'surface: src/app/cards/cards.ts -> src/app/ledger/transfers.ts',
        'surface: src/app/tally.ts -> src/app/ledger/transfers.ts',
      ]);
    });

    it("is quiet for a capability's index.ts, its own files in any layer, and composition", () => {
      const tree = {
        ...ledger,
        'src/app/cards/cards.ts': "import '../ledger';\nimport '../ledger/index';",
        'src/app/ledger/transfers.ts': "import '../../domain/ledger/transfer';\nimport './index';",
        'src/main.ts': "import './app/ledger/transfers';",
      };
      expect(found('surface', tree)).to.deep.equal([]);
    });
  });

  describe('import forms', () => {
    it('follows import type, export from, import(), typeof import(), require() and import = require(), all resolved to .ts or /index.ts', () => {
      const tree = {
        'src/domain/a.ts': [
          "import type { T } from '../app/t1';",
          "export { x } from '../app/t2';",
          "const m = import('../app/t3');",
          "type M = typeof import('../app/t4');",
          "const r = require('../app/t5');",
          "import e = require('../app/t6');",
        ].join('\n'),
        ...Object.fromEntries(['t1', 't2', 't3', 't4', 't5'].map((name) => [`src/app/${name}.ts`, ''])),
        'src/app/t6/index.ts': '',
      };
      expect(found('layer', tree)).to.have.length(6);
    });

    it('does not take an import in a comment or a string for an edge', () => {
      const tree = { 'src/domain/a.ts': "// import '../app/t';\nconst s = \"import '../app/t'\";", 'src/app/t.ts': '' };
      expect(found('layer', tree)).to.deep.equal([]);
    });
  });

  describe('cycle', () => {
    it('reports a strongly connected component once, its files sorted, and a file importing itself', () => {
      const tree = {
        'src/app/c.ts': "import './a';",
        'src/app/a.ts': "import type { B } from './b';",
        'src/app/b.ts': "export * from './c';",
        'src/app/d.ts': "import './d';",
      };
      expect(found('cycle', tree)).to.deep.equal(['cycle: src/app/a.ts, src/app/b.ts, src/app/c.ts', 'cycle: src/app/d.ts']);
    });

    it('is quiet on an import graph without cycles', () => {
      expect(found('cycle', { 'src/app/a.ts': "import './b';\nimport './c';", 'src/app/b.ts': "import './c';", 'src/app/c.ts': '' })).to.deep.equal([]);
    });
  });

  describe('table', () => {
    const owner = { 'src/app/ledger/schema.ts': 'const DDL = `CREATE TABLE IF NOT EXISTS rm_balances (id int)`;' };

    it("reports a file outside the owner's capability folder naming the table, in any case", () => {
      const tree = { ...owner, 'src/app/cards/spend.ts': "const q = 'SELECT * FROM RM_BALANCES';" };
      expect(found('table', tree)).to.deep.equal(['table: src/app/cards/spend.ts names rm_balances (owned by src/app/ledger)']);
    });

    it('finds the owner through UNLOGGED, a template, and a same-file constant substituted in it', () => {
      const tree = {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a file under test, a template in it
        'src/providers/email/box.ts': "const TABLE = 'sandbox_emails';\nconst DDL = `CREATE TABLE IF NOT EXISTS ${TABLE} (id int)`;",
        'src/platform/log.ts': "const DDL = 'CREATE UNLOGGED TABLE es_scratch (id int)';",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a file under test, a template in it
        'src/app/reader.ts': "const q = `SELECT * FROM sandbox_emails, es_scratch WHERE ${'x'}`;",
      };
      expect(found('table', tree)).to.deep.equal([
        'table: src/app/reader.ts names es_scratch (owned by src/platform)',
        'table: src/app/reader.ts names sandbox_emails (owned by src/providers/email)',
      ]);
    });

    it('is quiet inside the owner folder, in comments, for longer names and for names built at run time', () => {
      const tree = {
        ...owner,
        'src/app/ledger/read.ts': "const q = 'SELECT * FROM rm_balances';",
        'src/app/cards/spend.ts': "// reads rm_balances\nconst q = 'SELECT * FROM rm_balances_old';",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source of a file under test, a template in it
        'src/projections/rows.ts': 'const ddl = (t: Record<string, string>) => `CREATE TABLE IF NOT EXISTS ${t.rm_users} (id int)`;',
        'src/app/users.ts': "const q = 'SELECT * FROM rm_users';",
      };
      expect(found('table', tree)).to.deep.equal([]);
    });
  });

  describe('long-function', () => {
    it('reports a function over the limit with its line and length, keyed without them', () => {
      const violations = checkArchitecture(writeTree({ 'src/app/a.ts': `\n${functionOf(71)}` }), LAYOUT);
      expect(violations.map((v) => [v.key, v.message])).to.deep.equal([['long-function: src/app/a.ts work', 'long-function: src/app/a.ts:2 work 71 lines']]);
    });

    it('names class members, arrows by their variable, anonymous ones, and numbers repeated names', () => {
      const body = `{\n${'  void 0;\n'.repeat(70)}}`;
      const text = [
        `class Engine {\n  constructor() ${body}\n  run() ${body}\n  get size() ${body}\n}`,
        `const arrow = () => ${body};`,
        `[1].map(function () ${body});`,
        `[2].map(() => ${body});`,
      ].join('\n');
      const keys = checkArchitecture(writeTree({ 'src/app/a.ts': text }), LAYOUT).map((v) => v.key);
      expect(keys).to.deep.equal([
        'long-function: src/app/a.ts (anonymous)',
        'long-function: src/app/a.ts (anonymous)#2',
        'long-function: src/app/a.ts Engine.constructor',
        'long-function: src/app/a.ts Engine.get size',
        'long-function: src/app/a.ts Engine.run',
        'long-function: src/app/a.ts arrow',
      ]);
    });

    it('is quiet at the limit', () => {
      expect(found('long-function', { 'src/app/a.ts': functionOf(70) })).to.deep.equal([]);
    });
  });

  describe('domain-error', () => {
    it('reports a file outside the domain throwing DomainError, once, with the count in the message', () => {
      const text = "throw new DomainError('a', 'b');\nthrow DomainError('c');\nconst e = new DomainError('not thrown');";
      const violations = checkArchitecture(writeTree({ 'src/app/a.ts': text }), LAYOUT);
      expect(violations.map((v) => [v.key, v.message])).to.deep.equal([
        ['domain-error: src/app/a.ts', 'domain-error: src/app/a.ts throws DomainError 2 time(s)'],
      ]);
    });

    it('is quiet in the domain', () => {
      expect(found('domain-error', { 'src/domain/ledger/a.ts': "throw new DomainError('a');" })).to.deep.equal([]);
    });
  });

  describe('findImportPath', () => {
    it('lists the shortest chain of imports from one file to another, or undefined', () => {
      const root = writeTree({ 'src/a.ts': "import './b';\nimport './c';", 'src/b.ts': "import './d';", 'src/c.ts': "import './b';", 'src/d.ts': '' });
      const graph = importGraph(readAllFacts(root, 'src'));
      expect(findImportPath(graph, 'src/a.ts', 'src/d.ts')).to.deep.equal(['src/a.ts', 'src/b.ts', 'src/d.ts']);
      expect(findImportPath(graph, 'src/d.ts', 'src/a.ts')).to.equal(undefined);
    });
  });

  describe('baseline', () => {
    it('reads keys past comments and blank lines, writes them sorted once, and tells new from fixed', () => {
      expect(parseBaseline('# why\n\ncycle: b\n  layer: a  \n')).to.deep.equal(['cycle: b', 'layer: a']);
      expect(formatBaseline(['why'], ['layer: b', 'cycle: a', 'layer: b'])).to.equal('# why\ncycle: a\nlayer: b\n');
      expect(compareWithBaseline(['a', 'b'], ['b', 'c'])).to.deep.equal({ added: ['a'], fixed: ['c'] });
    });
  });
});
