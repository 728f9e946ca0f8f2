/** The audit routes: auditor tokens (operator) and the auditors' read-only API. */
export { auditorRoutes } from './auditors';
export { checkpointRoutes } from './checkpoints';
export { auditReadRoutes } from './reads';
