import { randomUUID } from 'node:crypto';
import {
  APPLICATION_PROFILE_FIELDS,
  type CardApplication,
  type CardApplicationData,
  type CardType,
  cardApplicationDecider,
  cardApplicationStream,
  checkCanApply,
  issuerApplicationDecider,
  issuerApplicationStream,
} from '../../domain/cards/application';
import { CARD_REFUSALS } from '../../domain/cards/refusals';
import { kycDecider, kycStream, latest } from '../../domain/identity';
import { isApprovedAt } from '../../domain/ledger';
import { profileDecider, profileStream } from '../../domain/identity';
import type { CardIssuer, CardIssuerWebhookEvent, IssuerApplication } from '../../providers/cards/port';
import { at, type Reads } from '../../platform/commands/command-handler';
import { DomainError } from '../../platform/decider';
import { type CommandContext, load } from '../../platform/commands/commands';
import { accountOfUser } from '../ledger';
import { LedgerProviderFailure } from '../ledger';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../../platform/commands/commands';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import type { BuiltProviders } from '../../providers/index';

type User = { userId: string; partnerId: string };

export interface ApplyInput {
  cardType: CardType;
  isTermsOfServiceAccepted: boolean;
  walletAddress?: string;
  ipAddress: string | null;
}

/** statusSummary of the application-status read: our status, the issuer's word, and whether they agree. */
export interface StatusSummary {
  local: string;
  external: string;
  synced: boolean;
}

/** No application yet: both sides say so (as KYC's simple status does). */
const NOT_STARTED = 'not_started';

export interface CardApplicationsDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  log: Logger;
  config: Pick<Config, 'cardIssuer'>;
  providers: Pick<BuiltProviders, 'cards'>;
}

/** Card applications: checked here, decided by the issuer, its reports applied from signed callbacks. */
export class CardApplications {
  constructor(private readonly deps: CardApplicationsDeps) {}

  /** The issuer of new applications is the configured one (CARD_ISSUER); an application's own stays its issuer's. */
  issuer(name: string = this.deps.config.cardIssuer): CardIssuer {
    const issuer = this.deps.providers.cards.get(name);
    if (!issuer) throw new Error(`Card issuer ${name} is not configured`);
    return issuer;
  }

  /** Submits the application to the issuer and records it, pending: nothing is recorded when the issuer fails. */
  async apply(user: User, input: ApplyInput, ctx: CommandContext): Promise<CardApplication> {
    const applicationId = randomUUID();
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const now = new Date().toISOString();
        const { stream, facts, hasExistingDocuments, profile } = await this.factsOf(reads, user.userId, now);
        checkCanApply(stream.state, { termsAccepted: input.isTermsOfServiceAccepted }, facts);
        const accountId = await accountOfUser(this.deps.store, this.deps.stateCache, user.userId);
        const fields = Object.fromEntries(APPLICATION_PROFILE_FIELDS.map((f) => [f, String(profile[f])])) as Pick<
          CardApplicationData,
          (typeof APPLICATION_PROFILE_FIELDS)[number]
        >;
        const asked = {
          ...fields,
          applicationId,
          userId: user.userId,
          cardType: input.cardType,
          walletAddress: input.walletAddress ?? null,
          ...{ solanaAddress: null, tronAddress: null, chainId: null, contractAddress: null },
          identityShareToken: null,
          sourceKey: user.partnerId,
          ipAddress: input.ipAddress,
          isTermsOfServiceAccepted: input.isTermsOfServiceAccepted,
        };
        const issuer = this.issuer();
        const answer = await this.callIssuer(() => issuer.submitApplication(asked));
        const { identityShareToken: _notKept, applicationId: id, ...kept } = asked;
        const application = {
          ...kept,
          id,
          accountId,
          partnerId: user.partnerId,
          issuer: issuer.name,
          issuerApplicationId: answer.issuerApplicationId,
          hasExistingDocuments,
          at: now,
        };
        const events = cardApplicationDecider.decide({ type: 'Submit', application, externalStatus: answer.externalStatus, facts }, stream.state);
        const link = { issuer: issuer.name, issuerApplicationId: answer.issuerApplicationId, userId: user.userId, applicationId };
        return {
          appends: [
            { stream: cardApplicationStream(user.userId), events, expected: at(stream) },
            {
              stream: issuerApplicationStream(issuer.name, answer.issuerApplicationId),
              events: issuerApplicationDecider.decide({ type: 'Link', link }, null),
              expected: 'no_stream',
            },
          ],
          result: events.reduce(cardApplicationDecider.evolve, stream.state).current as CardApplication,
        };
      },
      { cache: false },
    );
    return done.result;
  }

  /** What a submission is decided on: the user's applications, KYC approval and profile fields. */
  private async factsOf(reads: Reads, userId: string, now: string) {
    const [stream, kyc, profile] = await Promise.all([
      reads.stream(cardApplicationStream(userId), cardApplicationDecider),
      reads.stream(kycStream(userId), kycDecider),
      reads.stream(profileStream(userId), profileDecider),
    ]);
    const kycApproved = isApprovedAt(kyc.state, now);
    const fields = profile.state.fields;
    const profileMissing = APPLICATION_PROFILE_FIELDS.filter((f) => !(fields[f] ?? '').trim());
    return { stream, facts: { kycApproved, profileMissing }, hasExistingDocuments: latest(kyc.state)?.document != null, profile: fields };
  }

  /** The user's latest application (null when none). */
  async current(userId: string): Promise<CardApplication | null> {
    const { state } = await load(this.deps.store, cardApplicationStream(userId), cardApplicationDecider);
    return state.current;
  }

  /** Our status beside the issuer's live word; when the issuer cannot be asked, the last word it reported, unconfirmed. */
  async statusSummary(application: CardApplication | null): Promise<StatusSummary> {
    if (!application) return { local: NOT_STARTED, external: NOT_STARTED, synced: true };
    let live: IssuerApplication;
    try {
      live = await this.issuer(application.issuer).getApplication(application.issuerApplicationId);
    } catch (error) {
      this.deps.log.warn({ err: error, issuer: application.issuer }, 'card issuer could not be asked for an application status');
      return { local: application.applicationStatus, external: application.externalStatus, synced: false };
    }
    return { local: application.applicationStatus, external: live.externalStatus, synced: live.status === application.applicationStatus };
  }

  /** An issuer's verified callback: the application it names moves (or its status word is mirrored). */
  async applyIssuerWebhook(issuerName: string, event: CardIssuerWebhookEvent): Promise<void> {
    const { state: link } = await load(this.deps.store, issuerApplicationStream(issuerName, event.issuerApplicationId), issuerApplicationDecider);
    if (!link) throw CARD_REFUSALS.applicationNotFound();
    const ctx: CommandContext = {
      commandId: `cards:${issuerName}:${event.eventId}`,
      metadata: { actor: { kind: 'provider', id: issuerName }, correlationId: event.eventId },
    };
    const command = {
      type: 'ApplyIssuerStatus' as const,
      applicationId: link.applicationId,
      status: event.status,
      externalStatus: event.externalStatus,
      reason: event.reason,
      source: issuerName,
      at: event.occurredAt,
    };
    await this.deps.commands.decide(ctx, cardApplicationStream(link.userId), cardApplicationDecider, command);
  }

  /** A provider call; its failure is a 503 with nothing recorded. A refusal is no failure: card secrets gone with their holder's data key are 404 (providers/cards/vault.ts). */
  async callIssuer<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof DomainError) throw error;
      this.deps.log.warn({ err: error }, 'card issuer call failed');
      throw new LedgerProviderFailure('Card issuer unavailable', { cause: error });
    }
  }
}
