import { createHash, randomUUID } from 'node:crypto';
import { emailReservationDecider, normalizeEmail, type UserCommand, userDecider, userStream } from '../../domain/identity/user';
import { type CommandContext, load } from '../../platform/commands/commands';
import { at as atRevision, type CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { UserListQuery, UserQueries, UserRecord, UserRecordOrErased, UserSummary } from '../../projections/identity';
import { IDENTITY_REFUSALS, requireUserOfPartner } from '../../domain/identity';
import { emailTaken } from '../../domain/identity/user';

export type { UserListQuery, UserRecord, UserSummary } from '../../projections/identity';

/** The reservation stream of an email: named by a hash, so the address itself is not a stream name. */
export const emailStream = (email: string) => `useremail-${createHash('sha256').update(normalizeEmail(email)).digest('hex')}`;

export const summary = (u: UserRecord): UserSummary => ({ id: u.id, email: u.email, status: u.status, createdAt: u.createdAt });

export interface UserServiceDeps {
  commands: CommandHandler;
  store: EventStore;
  readYourWrites: WaitForReadModels;
  userQueries: Pick<UserQueries, 'get' | 'evenErased' | 'withPartner' | 'list'>;
}

export class UserService {
  constructor(private readonly deps: UserServiceDeps) {}

  /**
   * Registers a user; the email reservation stream keeps emails unique. It is appended at the
   * revision it was read at ("no stream" the first time; after an erasure released it, its last
   * revision): of two registrations at once, one appends and the other is 409.
   */
  async register(
    partnerId: string,
    input: { email: string; countryCode: string; phoneNumber?: string; language?: string },
    ctx: CommandContext,
  ): Promise<UserRecord> {
    const userId = randomUUID();
    const email = normalizeEmail(input.email);
    const command: UserCommand = {
      type: 'RegisterUser',
      data: {
        userId,
        partnerId,
        email,
        countryCode: input.countryCode.toUpperCase(),
        phoneNumber: input.phoneNumber?.trim() || null,
        language: input.language ?? 'en',
      },
    };
    const result = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const reservation = await reads.stream(emailStream(email), emailReservationDecider, { cached: false });
        const reserved = emailReservationDecider.decide({ type: 'Reserve', userId }, reservation.state);
        return {
          appends: [
            { stream: userStream(userId), events: userDecider.decide(command, userDecider.initialState()), expected: 'no_stream' },
            { stream: emailStream(email), expected: atRevision(reservation), events: reserved, refuseOnConflict: emailTaken() },
          ],
          result: null,
        };
      },
      { cache: false },
    );
    await this.deps.readYourWrites(result.position, ['users']);
    const user = await this.get(partnerId, userId);
    if (user) return user;
    // The users read model is behind (stopped on an event, or slow): the answer comes from the log.
    const [registered] = await this.deps.store.readStream(userStream(userId), { maxCount: 1 });
    if (registered?.type !== 'UserRegistered') throw new Error(`user ${userId} was registered but its stream does not start with it`);
    const at = registered.recordedAt;
    const d = command.data;
    return {
      id: userId,
      email,
      status: 'pending',
      createdAt: at,
      updatedAt: at,
      countryCode: d.countryCode,
      phoneNumber: d.phoneNumber,
      language: d.language,
      kycStatus: null,
    };
  }

  /** The user, if it exists and belongs to the partner (otherwise null: callers answer 404). */
  async get(partnerId: string, userId: string): Promise<UserRecord | null> {
    return this.deps.userQueries.get(partnerId, userId);
  }

  /** The user even when erased (its personal fields null): for the notifications of its events before the erasure. */
  async evenErased(partnerId: string, userId: string): Promise<UserRecordOrErased | null> {
    return this.deps.userQueries.evenErased(partnerId, userId);
  }

  /** For writes that name a user in the body: 404 when unknown, 403 when another partner's. */
  async requireOwned(partnerId: string, userId: string): Promise<UserRecord> {
    return requireUserOfPartner(await this.deps.userQueries.withPartner(userId), partnerId).user;
  }

  async list(partnerId: string, query: UserListQuery): Promise<{ items: UserRecord[]; totalItems: number }> {
    return this.deps.userQueries.list(partnerId, query);
  }

  /** Operator moves: suspend, ban, reinstate. */
  async operatorAction(userId: string, action: 'suspend' | 'ban' | 'reinstate', reason: string, ctx: CommandContext): Promise<UserRecord> {
    const { state } = await load(this.deps.store, userStream(userId), userDecider);
    if (!state.exists || !state.partnerId) throw IDENTITY_REFUSALS.userNotFound();
    const command: UserCommand =
      action === 'suspend' ? { type: 'Suspend', reason } : action === 'ban' ? { type: 'Ban', reason } : { type: 'Reinstate', reason };
    const result = await this.deps.commands.decide(ctx, userStream(userId), userDecider, command);
    await this.deps.readYourWrites(result.position, ['users']);
    const user = await this.get(state.partnerId, userId);
    if (!user) throw new Error('an existing user is readable');
    return user;
  }
}
