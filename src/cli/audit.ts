import type { Config } from '../config';
import { type AuditCheck, type AuditFinding, auditChecks } from './audit-checks';
import { type CliIo, withTally } from './context';

export interface AuditReport {
  ok: boolean;
  checks: Array<{ name: string; checked: string; findings: AuditFinding[]; error?: string }>;
}

/**
 * `tally audit verify`: runs every check and prints what it checked and each finding. A check that
 * cannot complete fails the audit too (an audit that did not look proves nothing), but the others still run.
 */
export async function auditVerify(config: Config, io: CliIo, checks: AuditCheck[] = auditChecks): Promise<AuditReport> {
  return withTally(config, io, async (tally) => {
    const report: AuditReport = { ok: true, checks: [] };
    for (const check of checks) {
      try {
        const result = await check.run(tally);
        report.checks.push({ name: check.name, ...result });
        io.out(
          `${result.findings.length ? 'FAIL' : 'OK  '} ${check.name}: ${result.checked} checked${result.findings.length ? `, ${result.findings.length} finding(s)` : ''}`,
        );
        for (const f of result.findings) io.out(`       ${f.subject}: ${f.reason}`);
        if (result.findings.length) report.ok = false;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        report.checks.push({ name: check.name, checked: 'nothing', findings: [], error: message });
        io.out(`FAIL ${check.name}: could not complete: ${message}`);
        report.ok = false;
      }
    }
    const findings = report.checks.reduce((n, c) => n + c.findings.length, 0);
    const failed = report.checks.filter((c) => c.error).length;
    const incomplete = failed ? `, ${failed} check(s) could not complete` : '';
    io.out(report.ok ? `Audit passed: ${checks.length} checks, no findings.` : `Audit FAILED: ${findings} finding(s)${incomplete}.`);
    return report;
  });
}
