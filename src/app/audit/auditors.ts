import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { AUDIT_REFUSALS as R, type AuditorCommand, auditorDecider, auditorStream } from '../../domain/audit';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { CommandContext } from '../../platform/commands/commands';
import { DomainError } from '../../platform/decider';
import { AUDITOR_TOKEN_PREFIX, auditorIdOf } from '../../platform/http/auditor-token';
import { uuidV7 } from '../../platform/ids';

export interface AuditorServiceDeps {
  commands: CommandHandler;
}

export interface CreatedAuditor {
  id: string;
  name: string;
  /** Shown this once: only its SHA-256 is stored. */
  token: string;
  expiresAt: string;
}

/** Why an auditor token names no one (the 401's code). */
export type AuditorRefusal = 'auditor_token_invalid' | 'auditor_token_expired';

const REFUSED = new Set<string>([R.tokenInvalid.code, R.tokenExpired.code]);

/** SHA-256 is enough for a token of 256 random bits (nothing to guess); a slow hash would tax every read. */
const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Auditors: their tokens, made and revoked by the operator, and the record of each use. There is no
 * read model: a token names its auditor's stream, and every use is decided on that stream and
 * appended at the revision it was decided at, so a revocation appended by any node stops the very
 * next use (the append of a use decided on a state from before it fails, and is decided again).
 */
export class AuditorService {
  constructor(private readonly deps: AuditorServiceDeps) {}

  async create(name: string, expiresAt: Date, ctx: CommandContext): Promise<CreatedAuditor> {
    const id = randomUUID();
    const token = `${AUDITOR_TOKEN_PREFIX}${id.replaceAll('-', '')}_${randomBytes(32).toString('hex')}`;
    const command: AuditorCommand = { type: 'CreateAuditor', auditorId: id, name, tokenHash: tokenHash(token), expiresAt, now: new Date() };
    await this.deps.commands.decide(ctx, auditorStream(id), auditorDecider, command);
    return { id, name: name.trim(), token, expiresAt: expiresAt.toISOString() };
  }

  /** The token stops at once, on every node (see the class). Revoking a revoked auditor changes nothing. */
  async revoke(auditorId: string, ctx: CommandContext): Promise<void> {
    await this.deps.commands.decide(ctx, auditorStream(auditorId), auditorDecider, { type: 'RevokeAuditor' });
  }

  /**
   * The auditor a token names, once its use of `route` (the route's path template) is in the log; or
   * why it names no one (nothing is recorded then). A use is appended before the route answers, so
   * every answer an auditor was given is in the log. One auditor's requests on this node take turns
   * on its stream instead of appending at the same revision.
   */
  async authenticate(token: string, route: string, requestId: string): Promise<{ auditorId: string } | AuditorRefusal> {
    const auditorId = auditorIdOf(token);
    if (!auditorId) return 'auditor_token_invalid';
    const stream = auditorStream(auditorId);
    const ctx: CommandContext = { commandId: uuidV7(), unkeyed: true, metadata: { correlationId: requestId, auditorId } };
    const command: AuditorCommand = { type: 'RecordUse', tokenHash: tokenHash(token), route, now: new Date() };
    try {
      await this.deps.commands.inLane(stream, () => this.deps.commands.decide(ctx, stream, auditorDecider, command));
      return { auditorId };
    } catch (error) {
      if (error instanceof DomainError && REFUSED.has(error.code)) return error.code as AuditorRefusal;
      throw error;
    }
  }
}
