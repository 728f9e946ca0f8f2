import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';
import { allRoutes } from '../../src/http/app';
import { buildOpenApi } from '../../src/http/openapi';
import { notificationWebhooks } from '../../src/http/notifications/webhooks';
import { tempDir } from '../support/temp';

/**
 * What a partner does with the document first: generate a typed client. openapi-typescript turns it
 * into types, and a partner's first calls written against them must compile under strict TypeScript
 * (and a call that sends a wrong field must not).
 */
describe('OpenAPI document: a TypeScript client generated from it (openapi-typescript) compiles', function () {
  this.timeout(120_000);

  it('generates types whose transfer, error and card shapes a strict program uses, and that refuse a wrong field', () => {
    const dir = tempDir('tally-client-');
    const doc = join(dir, 'openapi.json');
    writeFileSync(doc, JSON.stringify(buildOpenApi(allRoutes(), 'http://localhost:3000', notificationWebhooks)));
    const cli = join(__dirname, '..', '..', 'node_modules', '.bin', 'openapi-typescript');
    const gen = spawnSync(cli, [doc, '--output', join(dir, 'tally.ts')], { encoding: 'utf8' });
    expect(gen.status, gen.stderr).to.equal(0);
    writeFileSync(
      join(dir, 'partner.ts'),
      [
        "import type { components, operations, paths } from './tally';",
        "type TransferBody = paths['/api/v1/transactions/transfer']['post']['requestBody']['content']['application/json'];",
        "export const transfer: TransferBody = { toAccountId: 1003, amount: '10.50', description: 'rent' };",
        "type Failure = components['schemas']['Error'];",
        "export const failure: Failure = { success: false, error: 'Insufficient balance in account 1002', code: 'insufficient_balance', requestId: 'r-1' };",
        "export const switchOn = (f: Failure): string => (f.code === 'token_expired' ? 'refresh' : f.error);",
        "type CardAnswer = operations['getCardDetails']['responses'][200]['content']['application/json'];",
        'export const last4 = (a: CardAnswer) => a.data;',
      ].join('\n'),
    );
    writeFileSync(
      join(dir, 'wrong.ts'),
      [
        "import type { paths } from './tally';",
        "type TransferBody = paths['/api/v1/transactions/transfer']['post']['requestBody']['content']['application/json'];",
        "export const transfer: TransferBody = { toAccountId: 1003, amount: '10.50', description: 'rent', amountInCents: 1050 };",
      ].join('\n'),
    );
    const compile = (file: string) => {
      const program = ts.createProgram([join(dir, file)], {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.CommonJS,
        skipLibCheck: true,
      });
      return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    };
    expect(compile('partner.ts')).to.deep.equal([]);
    expect(compile('wrong.ts').join('\n')).to.match(/amountInCents/);
  });
});
