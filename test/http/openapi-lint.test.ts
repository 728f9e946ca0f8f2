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

describe('OpenAPI document: redocly lint', function () {
  this.timeout(60_000);

  it('passes the recommended rules with no error and no warning (redocly.yaml says which rules are off, and why)', () => {
    const file = join(tempDir('tally-openapi-'), 'openapi.json');
    // The document as createApp serves it: every route and the notifications' webhooks section.
    writeFileSync(file, JSON.stringify(buildOpenApi(allRoutes(), 'http://localhost:3000', notificationWebhooks)));
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
