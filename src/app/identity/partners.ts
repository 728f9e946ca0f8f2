import { randomUUID } from 'node:crypto';
import { type PartnerCommand, partnerDecider, partnerStream } from '../../domain/identity/partner';
import { type CommandContext, load } from '../../platform/commands/commands';
import { ReadModelMemo } from '../../platform/consumers/read-model-memo';
import { SecretChecks } from './secret-checks';
import { hashSecret, newApiKeyPair } from './secrets';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { StateCache } from '../../platform/commands/commands';
import type { Projections } from '../../platform/consumers/projections';
import type { PartnerQueries, PartnerRecord, StoredKey } from '../../projections/identity';
import { IDENTITY_REFUSALS } from '../../domain/identity/refusals';

export type { PartnerRecord } from '../../projections/identity';

export interface PartnerServiceDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  readYourWrites: WaitForReadModels;
  engine: Projections;
  partnerQueries: Pick<PartnerQueries, 'get' | 'list' | 'count' | 'activeKey'>;
}

export class PartnerService {
  /** Remembered right and wrong pairs, and each key's budget of scrypt checks. */
  readonly secretChecks = new SecretChecks();
  /** Unrevoked keys as read from rm_partner_keys, remembered while this node runs the partners projection. */
  readonly keys: ReadModelMemo<StoredKey>;

  constructor(private readonly deps: PartnerServiceDeps) {
    this.keys = new ReadModelMemo(deps.engine, ['partners'], {
      ttlMs: 60_000,
      maxEntries: 10_000,
      staleAfter: (e) => (e.type === 'PartnerApiKeyRevoked' ? [(e.data as { apiKey: string }).apiKey] : []),
    });
  }

  async create(name: string, options: { sandbox: boolean; ctx: CommandContext }): Promise<{ id: string; name: string; apiKey: string; apiSecret: string }> {
    const partnerId = randomUUID();
    const { apiKey, apiSecret } = newApiKeyPair(options.sandbox);
    const secretHash = await hashSecret(apiSecret);
    const command: PartnerCommand = { type: 'CreatePartner', partnerId, name, sandbox: options.sandbox, apiKey, secretHash };
    const result = await this.deps.commands.decide(options.ctx, partnerStream(partnerId), partnerDecider, command);
    await this.deps.readYourWrites(result.position, ['partners']);
    return { id: partnerId, name: name.trim(), apiKey, apiSecret };
  }

  async createKey(partnerId: string, ctx: CommandContext): Promise<{ id: string; apiKey: string; apiSecret: string }> {
    const partner = await this.get(partnerId);
    if (!partner) throw IDENTITY_REFUSALS.partnerNotFound();
    const { apiKey, apiSecret } = newApiKeyPair(partner.sandbox);
    const secretHash = await hashSecret(apiSecret);
    const result = await this.deps.commands.decide(ctx, partnerStream(partnerId), partnerDecider, { type: 'CreateApiKey', apiKey, secretHash });
    await this.deps.readYourWrites(result.position, ['partners']);
    return { id: partnerId, apiKey, apiSecret };
  }

  async revokeKey(partnerId: string, apiKey: string, ctx: CommandContext): Promise<void> {
    const result = await this.deps.commands.decide(ctx, partnerStream(partnerId), partnerDecider, { type: 'RevokeApiKey', apiKey });
    this.secretChecks.forgetPartner(partnerId);
    await this.deps.readYourWrites(result.position, ['partners']);
  }

  async get(partnerId: string): Promise<PartnerRecord | null> {
    return this.deps.partnerQueries.get(partnerId);
  }

  /** Every partner, oldest first, with how many of its keys are active (the operator's list). */
  async list(): Promise<Array<PartnerRecord & { activeKeys: number }>> {
    return this.deps.partnerQueries.list();
  }

  async count(): Promise<number> {
    return this.deps.partnerQueries.count();
  }

  /**
   * The partner id of a valid, unrevoked key pair, or null. While the partners projection is stopped
   * on an event, rm_partner_keys may miss a later revocation: the partner's stream decides then.
   */
  async authenticate(apiKey: string, apiSecret: string): Promise<string | null> {
    if (apiKey.length > 200 || apiSecret.length > 200) return null;
    const row = await this.storedKey(apiKey);
    if (!row) return null;
    const ok = await this.secretChecks.check({ apiKey, partnerId: row.partner_id, secretHash: row.secret_hash }, apiSecret);
    return ok ? row.partner_id : null;
  }

  private async storedKey(apiKey: string): Promise<StoredKey | null> {
    const known = this.keys.get(apiKey);
    if (known) return known;
    const generation = this.keys.generation;
    const row = await this.deps.partnerQueries.activeKey(apiKey);
    if (!row) return null;
    if (this.deps.engine.isStopped('partners')) {
      const { state } = await load(this.deps.store, partnerStream(row.partner_id), partnerDecider, { cache: this.deps.stateCache });
      return state.activeKeys.includes(apiKey) ? row : null;
    }
    this.keys.remember(apiKey, row, [apiKey], generation);
    return row;
  }
}
