/** The audit read model: signed checkpoints and the stream heads they recorded (fold.ts), and its reads (queries.ts). */
export { auditProjection } from './fold';
export { AuditQueries, type HeadWithLeaf, type Leaf, type StoredCheckpoint } from './queries';
