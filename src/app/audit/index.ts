/** Audit's use cases: auditor tokens and their record of use, and what auditors read of the log. */
export { type AuditorRefusal, AuditorService, type AuditorServiceDeps, type CreatedAuditor } from './auditors';
export { CHECKPOINT_INTERVAL_MS, CheckpointService, type CheckpointServiceDeps } from './checkpoints';
export { Checkpointer } from './checkpointer';
export type { CheckpointerReply, CheckpointerSigned, CheckpointerThreadData } from './checkpointer-thread';
export { type StreamFolder, foldEvents, folderFor, streamFolders } from './folders';
export { type AuditEvent, auditEvent, chained, eventsRecordedBetween, LOG_PAGE_SIZE, logPages } from './log';
export { AuditReads, type AuditReadsDeps, type BalanceAtInstant, type StreamAtInstant } from './reads';
