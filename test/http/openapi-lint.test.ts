import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { allRoutes } from '../../src/http/app';
import { buildOpenApi } from '../../src/http/openapi';
import { notificationWebhooks } from '../../src/http/notifications/webhooks';
import { tempDir } from '../support/temp';

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
}

/** The document as createApp serves it (every route and the notifications' webhooks section), in a file. */
function documentFile(): string {
  const file = join(tempDir('tally-openapi-'), 'openapi.json');
  writeFileSync(file, JSON.stringify(buildOpenApi(allRoutes(), 'http://localhost:3000', notificationWebhooks)));
  return file;
}

describe('OpenAPI document: lint (Redocly recommended, Spectral oas)', function () {
  this.timeout(60_000);

  it('passes Spectral’s oas rules with no problem at all (.spectral.yaml says where a rule is off, and why)', () => {
    const cli = join(__dirname, '..', '..', 'node_modules', '.bin', 'spectral');
    const ruleset = join(__dirname, '..', '..', '.spectral.yaml');
    const run = spawnSync(cli, ['lint', documentFile(), '--ruleset', ruleset, '--format', 'json', '--quiet'], { encoding: 'utf8' });
    const problems = (JSON.parse(run.stdout.slice(run.stdout.indexOf('['))) as Array<{ code: string; message: string; path: string[] }>).map(
      (p) => `${p.code}: ${p.message} (${p.path.join('.')})`,
    );
    expect(problems).to.deep.equal([]);
    expect(run.status).to.equal(0);
  });

  it('passes Redocly’s recommended rules with no error and no warning (redocly.yaml says which rules are off, and why)', () => {
    const file = documentFile();
    const cli = join(__dirname, '..', '..', 'node_modules', '.bin', 'redocly');
    const run = spawnSync(cli, ['lint', file, '--config', join(__dirname, '..', '..', 'redocly.yaml'), '--format', 'json'], { encoding: 'utf8' });
    const json = run.stdout.slice(run.stdout.indexOf('{'));
    const report = JSON.parse(json) as { totals: { errors: number; warnings: number }; problems: LintProblem[] };
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`);
    expect(problems).to.deep.equal([]);
    expect(report.totals).to.include({ errors: 0, warnings: 0 });
    expect(run.status).to.equal(0);
  });
});
