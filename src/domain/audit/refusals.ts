import { refusal } from '../../platform/refusals';

/**
 * The audit capability's refusals: each its stable code, kind (hence status) and exact message.
 * The auditor decider throws them, the routes name the ones they answer (`refuses`), the reference
 * documents them. The two token refusals are answered by the request path as the 401 of an auditor
 * route (the interface's one message, told apart by code, as the bearer routes' `token_*` codes).
 */
export const AUDIT_REFUSALS = {
  auditorExists: refusal('auditor_exists', 'conflict', 'Auditor already exists'),
  auditorNameEmpty: refusal('auditor_name_empty', 'invalid', 'name must not be empty', { param: 'name' }),
  expiryNotInFuture: refusal('auditor_expiry_not_in_future', 'invalid', 'expiresAt must be in the future', { param: 'expiresAt' }),
  expiryTooFar: refusal('auditor_expiry_too_far', 'invalid', 'expiresAt must be at most 1 year ahead', { param: 'expiresAt' }),
  auditorNotFound: refusal('auditor_not_found', 'not_found', 'Auditor not found'),
  /** Unknown, malformed or revoked: the holder needs a new token from the operator. */
  tokenInvalid: refusal('auditor_token_invalid', 'unauthenticated', 'Invalid or expired token'),
  /** Past its `expiresAt`: the holder needs a new token from the operator. */
  tokenExpired: refusal('auditor_token_expired', 'unauthenticated', 'Invalid or expired token'),
  /** An id that names no signed checkpoint in the log (or is not an id at all). */
  checkpointNotFound: refusal('checkpoint_not_found', 'not_found', 'Checkpoint not found'),
  /** A proof asked for a stream that had no event at the checkpoint's position: it is no leaf of that tree. */
  streamNotInCheckpoint: refusal('stream_not_in_checkpoint', 'not_found', 'Stream not in checkpoint', { param: 'stream' }),
  /** A stream with no event at all (at an instant before its first event, a stream that exists is shown empty). */
  streamNotFound: refusal('stream_not_found', 'not_found', 'Stream not found'),
};
