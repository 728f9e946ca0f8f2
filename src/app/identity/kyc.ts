import { randomUUID } from 'node:crypto';
import { ProviderAnsweredBadly } from '../../platform/failures';
import { IDENTITY_REFUSALS } from '../../domain/identity/refusals';
import { decideStart, type KycDocumentData, kycDecider, kycStream } from '../../domain/identity/kyc';
import { kycHistoryStatus } from '../../domain/identity/kyc-statuses';
import { userDecider, userStream } from '../../domain/identity/user';
import type { IdentityProvider, IdentityWebhookEvent, InquiryPrefill, InquirySnapshot } from '../../providers/identity/port';
import { at } from '../../platform/commands/command-handler';
import { type CommandContext, load } from '../../platform/commands/commands';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { Logger } from 'pino';
import type { Config } from '../../config';
import type { BuiltProviders } from '../../providers/index';
import type { KycQueries, VerificationRow } from '../../projections/identity';
import type { ProfileService } from './profiles';

/** The identity provider answered badly or not at all: nothing was recorded (502). */
export class ProviderFailure extends ProviderAnsweredBadly {}

export interface KycServiceDeps {
  commands: CommandHandler;
  store: EventStore;
  readYourWrites: WaitForReadModels;
  log: Logger;
  kycQueries: Pick<KycQueries, 'userOfInquiry' | 'history' | 'latest'>;
  config: Pick<Config, 'identityProvider' | 'kycLimits'>;
  providers: Pick<BuiltProviders, 'identity'>;
  profiles: Pick<ProfileService, 'require'>;
}

export class KycService {
  constructor(private readonly deps: KycServiceDeps) {}

  private provider(name?: string): IdentityProvider {
    const provider = this.deps.providers.identity.get(name ?? this.deps.config.identityProvider);
    if (!provider) throw new Error(`Identity provider ${name ?? this.deps.config.identityProvider} is not configured`);
    return provider;
  }

  /** Start KYC: the existing in-progress verification, or a new inquiry at the provider. */
  async start(userId: string, prefill: InquiryPrefill, ctx: CommandContext): Promise<{ verificationUrl: string; inquiryId: string; isExisting: boolean }> {
    await this.deps.profiles.require(userId);
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const kyc = await reads.stream(kycStream(userId), kycDecider);
        // A concurrent start that won is found here on the next attempt, and answered with.
        const decision = decideStart(kyc.state);
        if (decision.kind === 'existing') {
          const { verificationUrl, inquiryId } = decision.verification;
          return { appends: [], result: { verificationUrl, inquiryId, isExisting: true } };
        }
        const provider = this.provider();
        const created = await this.createInquiry(provider, userId, prefill);
        const kycEvents = kycDecider.decide(
          {
            type: 'RecordVerificationStarted',
            userId,
            verificationId: randomUUID(),
            inquiryId: created.inquiryId,
            provider: provider.name,
            verificationUrl: created.verificationUrl,
            at: new Date().toISOString(),
          },
          kyc.state,
        );
        const user = await reads.stream(userStream(userId), userDecider);
        return {
          appends: [
            { stream: kycStream(userId), events: kycEvents, expected: at(kyc), cached: kycDecider },
            { stream: userStream(userId), events: userDecider.decide({ type: 'RequireKyc' }, user.state), expected: at(user) },
          ],
          result: { verificationUrl: created.verificationUrl, inquiryId: created.inquiryId, isExisting: false },
        };
      },
      { cache: false },
    );
    await this.deps.readYourWrites(done.position, ['kyc', 'users']);
    return done.result;
  }

  private async createInquiry(provider: IdentityProvider, userId: string, prefill: InquiryPrefill) {
    try {
      return await provider.createInquiry({ referenceId: userId, prefill });
    } catch (error) {
      this.deps.log.warn({ err: error, provider: provider.name }, 'identity provider could not create an inquiry');
      throw new ProviderFailure('Failed to create identity inquiry');
    }
  }

  /** A provider's verified callback (or a re-read): moves the verification and, on approval, the user. */
  async applyProviderUpdate(update: { snapshot: Omit<InquirySnapshot, 'updatedAt'>; source: string; eventId: string; at: string }): Promise<void> {
    const userId = await this.userOfInquiry(update.snapshot.inquiryId, update.snapshot.referenceId);
    if (!userId) throw IDENTITY_REFUSALS.unknownInquiry(update.snapshot.inquiryId);
    const ctx: CommandContext = {
      commandId: `identity:${update.source}:${update.eventId}`,
      metadata: { actor: { kind: 'provider', id: update.source }, correlationId: update.eventId },
    };
    const s = update.snapshot;
    const command = {
      type: 'ApplyProviderStatus' as const,
      inquiryId: s.inquiryId,
      status: s.status,
      riskLevel: s.riskLevel,
      riskScore: s.riskScore,
      reasons: s.reasons,
      document: s.document as KycDocumentData | null,
      source: update.source,
      at: update.at,
    };
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const user = await reads.stream(userStream(userId), userDecider);
        // An erased user's verification is over: what the provider says now (a document, perhaps) is not kept.
        if (user.state.erased) return { appends: [], result: undefined };
        const kyc = await reads.stream(kycStream(userId), kycDecider);
        const kycEvents = kycDecider.decide(command, kyc.state);
        const approved = kycEvents.some((e) => e.type === 'KycStatusChanged' && e.data.to === 'approved');
        const userEvents = approved ? userDecider.decide({ type: 'ActivateAfterKyc' }, user.state) : [];
        return {
          appends: kycEvents.length
            ? [
                { stream: kycStream(userId), events: kycEvents, expected: at(kyc), cached: kycDecider },
                { stream: userStream(userId), events: userEvents, expected: at(user) },
              ]
            : [],
          result: undefined,
        };
      },
      { cache: false },
    );
    await this.deps.readYourWrites(done.position, ['kyc', 'users']);
  }

  async applyWebhook(providerName: string, event: IdentityWebhookEvent): Promise<void> {
    const snapshot = event.snapshot ?? {
      inquiryId: event.inquiryId,
      referenceId: '',
      status: event.status,
      riskLevel: null,
      riskScore: null,
      reasons: null,
      document: null,
    };
    await this.applyProviderUpdate({ snapshot: { ...snapshot, status: event.status }, source: providerName, eventId: event.eventId, at: event.occurredAt });
  }

  /** POST auth/kyc/verify: re-read the latest inquiry from its provider and apply any change. */
  async resync(userId: string): Promise<void> {
    const latest = await this.latest(userId);
    if (!latest) throw IDENTITY_REFUSALS.kycNotFound(userId);
    let snapshot: InquirySnapshot;
    try {
      snapshot = await this.provider(latest.provider).getInquiry(latest.inquiry_id);
    } catch (error) {
      this.deps.log.warn({ err: error }, 'identity provider could not be read');
      throw new ProviderFailure('Identity provider unavailable');
    }
    await this.applyProviderUpdate({
      snapshot,
      source: latest.provider,
      eventId: `resync:${latest.inquiry_id}:${snapshot.status}:${snapshot.updatedAt}`,
      at: new Date().toISOString(),
    });
  }

  private async userOfInquiry(inquiryId: string, referenceId: string): Promise<string | null> {
    const known = await this.deps.kycQueries.userOfInquiry(inquiryId);
    if (known) return known;
    // The callback may outrun our projection: the provider's reference id is our user id.
    if (/^[0-9a-f-]{36}$/i.test(referenceId)) {
      const kyc = await load(this.deps.store, kycStream(referenceId), kycDecider);
      if (kyc.state.verifications.some((v) => v.inquiryId === inquiryId)) return referenceId;
    }
    return null;
  }

  async history(userId: string): Promise<VerificationRow[]> {
    return this.deps.kycQueries.history(userId);
  }

  async latest(userId: string): Promise<VerificationRow | null> {
    return this.deps.kycQueries.latest(userId);
  }

  /** The latest verification's identity document as GET kyc/document shows it (every field null until the provider reports it); null before any verification. */
  async documentView(userId: string) {
    const latest = await this.latest(userId);
    if (!latest) return null;
    const empty = { issuingCountry: null, type: null, issuedDate: null, idNumber: null, expiryDate: null, imageFront: null, imageBack: null };
    return { inquiryId: latest.inquiry_id, kycStatus: latest.status, document: { ...empty, ...(latest.document ?? {}) } };
  }

  /** The status view of section 2.3. */
  async statusView(userId: string, userStatus: string) {
    const latest = await this.latest(userId);
    const now = new Date().toISOString();
    const isApproved = latest?.status === 'approved' && (!latest.expires_at || latest.expires_at > now);
    const isExpired = latest?.status === 'expired' || (latest?.status === 'approved' && !!latest.expires_at && latest.expires_at <= now);
    const canStartNewKyc = !latest || latest.status === 'expired';
    const resumable = !!latest && ['created', 'pending', 'in_progress'].includes(latest.status);
    const operable = !['suspended', 'banned'].includes(userStatus);
    const limits = this.deps.config.kycLimits;
    return {
      userId,
      userStatus,
      userType: 'individual',
      kyc: {
        hasKyc: !!latest,
        hasActiveKyc: !!latest && !['declined', 'rejected', 'failed', 'expired'].includes(latest.status) && !isExpired,
        isApproved,
        isExpired,
        status: latest?.status ?? null,
        inquiryId: latest?.inquiry_id ?? null,
        verificationLevel: latest?.verification_level ?? 'basic',
        riskLevel: latest?.risk_level ?? null,
        riskScore: latest?.risk_score === null || latest?.risk_score === undefined ? null : Number(latest.risk_score),
        submittedAt: latest?.submitted_at ?? null,
        approvedAt: latest?.approved_at ?? null,
        expiresAt: latest?.expires_at ?? null,
        nextReviewDate: isApproved ? (latest?.expires_at ?? null) : null,
        canStartNewKyc,
      },
      permissions: {
        canStartKyc: operable && (canStartNewKyc || resumable),
        canCreateAccounts: isApproved && userStatus === 'active',
        requiresKyc: !isApproved,
        maxTransactionAmount: isApproved ? limits.maxTransactionAmount : 0,
        dailyTransactionLimit: isApproved ? limits.dailyTransactionLimit : 0,
      },
    };
  }

  /** A verification as the history shows it: the interface's five values, not the full KYC status (kycHistoryStatus). */
  historyItem(row: VerificationRow) {
    const { status, rejectionReasons } = kycHistoryStatus(row.status, row.rejection_reasons);
    return {
      id: row.verification_id,
      status,
      verificationLevel: row.verification_level,
      riskLevel: row.risk_level,
      riskScore: row.risk_score === null ? null : Number(row.risk_score),
      provider: row.provider,
      providerVerificationId: row.inquiry_id,
      submittedAt: row.submitted_at,
      reviewedAt: row.reviewed_at,
      approvedAt: row.approved_at,
      rejectionReasons,
      complianceNotes: null,
      createdAt: row.created_at,
    };
  }
}
