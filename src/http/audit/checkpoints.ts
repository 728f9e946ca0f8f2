import { type Static, Type } from '@sinclair/typebox';
import { AUDIT_REFUSALS as R } from '../../domain/audit';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications';
import { routeFor } from '../../platform/http/route';
import { CursorPage, CursorParam, Success } from '../schemas';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['checkpoints'] as const;
const route = routeFor<AppServices>()(USES);

const HEX = 'lowercase hex';
const Checkpoint = Type.Object(
  {
    id: Type.String({ description: 'The checkpoint’s id (a UUID v7)' }),
    position: Type.String({ description: 'The log position it covers: every event at or before it (opaque, ordered as the log)' }),
    streams: Type.Integer({ description: 'How many stream heads the tree has (its size)' }),
    root: Type.String({ description: `The RFC 6962 Merkle root over every stream's head at \`position\`, sorted by stream name (UTF-8 bytes), ${HEX}` }),
    createdAt: Type.String({ format: 'date-time', description: 'When it was signed (ISO 8601, UTC)' }),
    kid: Type.String({ description: 'The key that signed it, as GET /audit/v1/keys lists it' }),
    signature: Type.String({ description: 'Ed25519 over the RFC 8785 canonical JSON of the other fields, base64url without padding' }),
  },
  { $id: 'Checkpoint' },
);
const Head = Type.Object(
  {
    stream: Type.String({ description: 'The stream’s name' }),
    revision: Type.Integer({ description: 'Its last event’s revision at the checkpoint (0-based)' }),
    hash: Type.String({ description: `Its last event’s chain hash, ${HEX}` }),
  },
  { $id: 'StreamHead', description: 'A leaf: its input is the RFC 8785 canonical JSON of these three fields' },
);
const Proof = Type.Object(
  {
    checkpointId: Type.String({ description: 'The checkpoint the proof is for' }),
    leaf: Head,
    index: Type.Integer({ description: 'The leaf’s index in the tree (0-based)' }),
    treeSize: Type.Integer({ description: 'The tree’s size: the checkpoint’s `streams`' }),
    path: Type.Array(Type.String({ description: `A sibling hash, ${HEX}` }), { description: 'The audit path, nearest sibling first (RFC 9162 2.1.3)' }),
  },
  { $id: 'CheckpointProof' },
);
const Jwk = Type.Object(
  {
    kid: Type.String({ description: 'The key’s id: its RFC 7638 thumbprint' }),
    kty: Type.Literal('OKP', { description: 'Always OKP' }),
    crv: Type.Literal('Ed25519', { description: 'Always Ed25519' }),
    x: Type.String({ description: 'The public key, base64url' }),
  },
  { $id: 'AuditKey' },
);
const ListQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Checkpoints per page, 1 to 100' }),
  cursor: CursorParam(),
});
const IdParams = Type.Object({ id: Type.String({ maxLength: 100, description: 'The checkpoint’s id; an unknown one is 404 `Checkpoint not found`' }) });
const ProofQuery = Type.Object({
  stream: Type.String({ minLength: 1, maxLength: 500, description: 'The stream whose head to prove; one with no event at the checkpoint is 404' }),
});

/** Signed checkpoints: taken by the operator, read and proved by auditors, verified with the public keys. */
export const checkpointRoutes = [
  route({
    method: 'post',
    path: '/admin/v1/checkpoints',
    auth: 'admin',
    tag: 'Operator',
    summary: 'Sign a checkpoint now (the service also does every minute in which the log grew): the Merkle root over every stream head, appended to the log.',
    responses: { 201: { description: 'The checkpoint', schema: Success(Checkpoint) } },
    async handler({ services }) {
      return { status: 201, body: { success: true, data: await services.checkpoints.now() } };
    },
  }),
  route({
    method: 'get',
    path: '/audit/v1/keys',
    auth: 'public',
    tag: 'Audit',
    summary: 'The public keys that verify checkpoints (JWK), the signing key last; no credentials.',
    responses: {
      200: { description: 'The keys', schema: Type.Object({ keys: Type.Array(Jwk, { description: 'Every key checkpoints may name' }) }) },
    },
    async handler({ services }) {
      return { status: 200, body: { keys: services.checkpoints.publicKeys } };
    },
  }),
  route<unknown, Static<typeof ListQuery>>({
    method: 'get',
    path: '/audit/v1/checkpoints',
    auth: 'auditor',
    tag: 'Audit',
    summary: 'The signed checkpoints, newest first; cursor pagination (pass `nextCursor` as `cursor`).',
    query: ListQuery,
    responses: {
      200: {
        description: 'A page of checkpoints',
        schema: Success(CursorPage(Checkpoint, 'Checkpoints, newest first', 'CheckpointPage')),
      },
    },
    refuses: [NOTIFICATION_REFUSALS.invalidCursor],
    async handler({ services, query }) {
      const page = await services.checkpoints.reads.list(query.limit, query.cursor);
      return { status: 200, body: { success: true, data: { items: page.checkpoints, nextCursor: page.nextCursor } } };
    },
  }),
  route<unknown, unknown, Static<typeof IdParams>>({
    method: 'get',
    path: '/audit/v1/checkpoints/{id}',
    auth: 'auditor',
    tag: 'Audit',
    summary: 'One checkpoint: what an auditor keeps and later verifies an export against (tally audit verify --checkpoint).',
    params: IdParams,
    responses: { 200: { description: 'The checkpoint', schema: Success(Checkpoint) } },
    refuses: [R.checkpointNotFound],
    async handler({ services, params }) {
      return { status: 200, body: { success: true, data: await services.checkpoints.reads.get(params.id) } };
    },
  }),
  route<unknown, Static<typeof ProofQuery>, Static<typeof IdParams>>({
    method: 'get',
    path: '/audit/v1/checkpoints/{id}/proof',
    auth: 'auditor',
    tag: 'Audit',
    summary: "A stream's head at a checkpoint and its inclusion proof: RFC 9162's algorithm leads from the leaf to the checkpoint's root.",
    params: IdParams,
    query: ProofQuery,
    responses: { 200: { description: 'The proof', schema: Success(Proof) } },
    refuses: [R.checkpointNotFound, R.streamNotInCheckpoint],
    async handler({ services, params, query }) {
      return { status: 200, body: { success: true, data: await services.checkpoints.reads.proof(params.id, query.stream) } };
    },
  }),
];
