/** Audit's use cases: auditor tokens and their record of use. */
export { type AuditorRefusal, AuditorService, type AuditorServiceDeps, type CreatedAuditor } from './auditors';
export { CHECKPOINT_INTERVAL_MS, CheckpointService, type CheckpointServiceDeps } from './checkpoints';
