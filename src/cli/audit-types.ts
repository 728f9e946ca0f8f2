import type { Tally } from '../compose/tally';
import type { Json } from '../eventstore/port';

/** What `tally audit verify` reports: its checks and their findings. */

export interface AuditFinding {
  /** What is wrong where, for a person: "stream user-1 revision 3 event <id>". */
  subject: string;
  reason: string;
  details?: { [key: string]: Json };
}

export interface AuditCheckResult {
  /** What was checked, e.g. "12 streams, 340 events". */
  checked: string;
  findings: AuditFinding[];
}

/** A named check of `tally audit verify`. Add one (ledger conservation, ...) to `auditChecks`. */
export interface AuditCheck {
  name: string;
  run(tally: Tally): Promise<AuditCheckResult>;
}
