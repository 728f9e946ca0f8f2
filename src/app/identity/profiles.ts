import { missingFields, type ProfileFields, profileDecider, profileStream } from '../../domain/identity/profile';
import { kycDecider, kycStream } from '../../domain/identity/kyc';
import { type CommandContext, load } from '../../platform/commands/commands';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { ProfileQueries, ProfileView } from '../../projections/identity';
import { IDENTITY_REFUSALS } from '../../domain/identity/refusals';

export type { ProfileView } from '../../projections/identity';

const today = () => new Date().toISOString().slice(0, 10);

export interface ProfileServiceDeps {
  commands: CommandHandler;
  store: EventStore;
  readYourWrites: WaitForReadModels;
  profileQueries: Pick<ProfileQueries, 'get'>;
}

/** Personal profiles: partner routes name the user (after the ownership check), bearer routes are the token's user. */
export class ProfileService {
  constructor(private readonly deps: ProfileServiceDeps) {}

  async create(partnerId: string, userId: string, fields: ProfileFields, ctx: CommandContext): Promise<ProfileView> {
    const result = await this.deps.commands.decide(ctx, profileStream(userId), profileDecider, {
      type: 'CreateProfile',
      userId,
      partnerId,
      fields,
      today: today(),
    });
    await this.deps.readYourWrites(result.position, ['profiles']);
    return this.require(userId);
  }

  async update(userId: string, changes: ProfileFields, ctx: CommandContext): Promise<ProfileView> {
    const identityVerified = await this.identityVerified(userId);
    const result = await this.deps.commands.decide(ctx, profileStream(userId), profileDecider, {
      type: 'UpdateProfile',
      userId,
      changes,
      today: today(),
      identityVerified,
    });
    await this.deps.readYourWrites(result.position, ['profiles']);
    return this.require(userId);
  }

  /**
   * Whether a KYC verification of the user was approved: an approval is final (a later verification
   * starts only after an expired one), so the identity it verified stays verified. Read from the KYC
   * stream, not a read model, so an approval just recorded counts.
   */
  private async identityVerified(userId: string): Promise<boolean> {
    const { state } = await load(this.deps.store, kycStream(userId), kycDecider);
    return state.verifications.some((v) => v.status === 'approved');
  }

  async get(userId: string): Promise<ProfileView | null> {
    return this.deps.profileQueries.get(userId);
  }

  async require(userId: string): Promise<ProfileView> {
    const profile = await this.get(userId);
    if (!profile) throw IDENTITY_REFUSALS.profileNotFound(userId);
    return profile;
  }

  async completion(userId: string): Promise<{ isComplete: boolean; missingFields: string[] }> {
    const profile = await this.require(userId);
    const missing = missingFields(profile);
    return { isComplete: missing.length === 0, missingFields: missing };
  }
}
