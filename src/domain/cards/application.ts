import type { Decider } from '../../platform/decider';
import { CARD_REFUSALS } from './refusals';

/** Card types (docs/interface.md, "Resources"). */
export const CARD_TYPES = ['virtual', 'physical'] as const;
export type CardType = (typeof CARD_TYPES)[number];

/** Card application statuses (docs/interface.md, "Resources"): pending until the issuer decides. */
export const APPLICATION_STATUSES = ['pending', 'approved', 'declined'] as const;
export type ApplicationStatus = (typeof APPLICATION_STATUSES)[number];

/** The profile fields a card application carries (docs/interface.md, "Resources"). */
export const APPLICATION_PROFILE_FIELDS = ['occupation', 'annualSalary', 'accountPurpose', 'expectedMonthlyVolume'] as const;

/** One application, as submitted and as the issuer decided it (docs/interface.md, "Resources", without the share token). */
export type CardApplicationData = {
  id: string;
  accountId: number;
  userId: string;
  partnerId: string;
  /** Which issuer adapter it went to, and the issuer's id for it. */
  issuer: string;
  issuerApplicationId: string;
  walletAddress: string | null;
  solanaAddress: string | null;
  tronAddress: string | null;
  chainId: string | null;
  contractAddress: string | null;
  /** Where the application came from: the partner it was made through. */
  sourceKey: string;
  ipAddress: string | null;
  occupation: string;
  annualSalary: string;
  accountPurpose: string;
  expectedMonthlyVolume: string;
  isTermsOfServiceAccepted: boolean;
  hasExistingDocuments: boolean;
  cardType: CardType;
  at: string;
};

export type CardApplication = CardApplicationData & {
  applicationStatus: ApplicationStatus;
  applicationReason: string | null;
  /** The issuer's own status word, as last reported (statusSummary.external). */
  externalStatus: string;
  createdAt: string;
  updatedAt: string;
};

export type CardApplicationEvent =
  | { type: 'CardApplicationSubmitted'; data: CardApplicationData & { externalStatus: string } }
  | {
      type: 'CardApplicationDecided';
      data: {
        applicationId: string;
        userId: string;
        from: ApplicationStatus;
        to: ApplicationStatus;
        reason: string | null;
        externalStatus: string;
        source: string;
        at: string;
      };
    }
  /** The issuer's status changed without a decision (say, to a manual review): mirrored only. */
  | { type: 'CardApplicationIssuerStatusSeen'; data: { applicationId: string; userId: string; externalStatus: string; source: string; at: string } };

/** What a submission needs besides the request: facts read from the user's other streams. */
export interface ApplicationFacts {
  kycApproved: boolean;
  /** Application fields the profile lacks (APPLICATION_PROFILE_FIELDS). */
  profileMissing: readonly string[];
}

export type CardApplicationCommand =
  | { type: 'Submit'; application: CardApplicationData; externalStatus: string; facts: ApplicationFacts }
  | {
      type: 'ApplyIssuerStatus';
      applicationId: string;
      /** The issuer's status mapped to ours. */
      status: ApplicationStatus;
      externalStatus: string;
      reason: string | null;
      source: string;
      at: string;
    };

export interface CardApplicationState {
  /** The user's latest application (an earlier declined one is replaced by a new one). */
  current: CardApplication | null;
}

/** One stream per user: the applications made, newest last. */
export const cardApplicationStream = (userId: string) => `cardapplication-${userId}`;

/**
 * Whether an application may be made: terms accepted, identity approved, no application pending or
 * approved already, a profile with the fields the issuer asks for. Checked before the issuer is
 * asked, and again when the submission is decided.
 */
export function checkCanApply(state: CardApplicationState, request: { termsAccepted: boolean }, facts: ApplicationFacts): void {
  if (!request.termsAccepted) throw CARD_REFUSALS.termsNotAccepted();
  if (!facts.kycApproved) throw CARD_REFUSALS.kycNotApproved();
  const current = state.current;
  if (current && current.applicationStatus !== 'declined') throw CARD_REFUSALS.applicationExists(current.applicationStatus);
  if (facts.profileMissing.length > 0) throw CARD_REFUSALS.profileIncomplete(facts.profileMissing.join(', '));
}

export const cardApplicationDecider: Decider<CardApplicationState, CardApplicationCommand, CardApplicationEvent> = {
  initialState: () => ({ current: null }),

  evolve(state, event) {
    switch (event.type) {
      case 'CardApplicationSubmitted': {
        const d = event.data;
        return { current: { ...d, applicationStatus: 'pending', applicationReason: null, createdAt: d.at, updatedAt: d.at } };
      }
      case 'CardApplicationDecided': {
        const d = event.data;
        if (state.current?.id !== d.applicationId) return state;
        return { current: { ...state.current, applicationStatus: d.to, applicationReason: d.reason, externalStatus: d.externalStatus, updatedAt: d.at } };
      }
      case 'CardApplicationIssuerStatusSeen': {
        const d = event.data;
        if (state.current?.id !== d.applicationId) return state;
        return { current: { ...state.current, externalStatus: d.externalStatus, updatedAt: d.at } };
      }
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'Submit':
        checkCanApply(state, { termsAccepted: command.application.isTermsOfServiceAccepted }, command.facts);
        return [{ type: 'CardApplicationSubmitted', data: { ...command.application, externalStatus: command.externalStatus } }];
      case 'ApplyIssuerStatus':
        return decideIssuerStatus(state, command);
    }
  },
};

/**
 * The issuer's report. Only pending moves, to approved or declined; a decided application stays as
 * decided (a late or repeated report changes nothing, as with KYC). A new issuer status that is no
 * decision is mirrored for statusSummary.
 */
function decideIssuerStatus(state: CardApplicationState, command: Extract<CardApplicationCommand, { type: 'ApplyIssuerStatus' }>): CardApplicationEvent[] {
  const current = state.current;
  if (!current || current.id !== command.applicationId) throw CARD_REFUSALS.applicationNotFound();
  const { applicationId, externalStatus, source, at } = command;
  if (current.applicationStatus === 'pending' && command.status !== 'pending') {
    const data = {
      applicationId,
      userId: current.userId,
      from: current.applicationStatus,
      to: command.status,
      reason: command.reason,
      externalStatus,
      source,
      at,
    };
    return [{ type: 'CardApplicationDecided', data }];
  }
  if (current.applicationStatus !== 'pending' || externalStatus === current.externalStatus) return [];
  return [{ type: 'CardApplicationIssuerStatusSeen', data: { applicationId, userId: current.userId, externalStatus, source, at } }];
}

/** Whether a card may be issued on the application (and why not): approved, nothing else. */
export function requireApproved(state: CardApplicationState): CardApplication {
  const current = state.current;
  if (!current) throw CARD_REFUSALS.applicationNotFound();
  if (current.applicationStatus !== 'approved') throw CARD_REFUSALS.applicationNotApproved(current.applicationStatus);
  return current;
}

/** Which user an issuer's application id belongs to: written once, when the application is submitted. */
export type IssuerApplicationLinked = {
  type: 'CardIssuerApplicationLinked';
  data: { issuer: string; issuerApplicationId: string; userId: string; applicationId: string };
};
export const issuerApplicationStream = (issuer: string, issuerApplicationId: string) => `cardissuerapp-${issuer}-${issuerApplicationId}`;
export const issuerApplicationDecider: Decider<
  IssuerApplicationLinked['data'] | null,
  { type: 'Link'; link: IssuerApplicationLinked['data'] },
  IssuerApplicationLinked
> = {
  initialState: () => null,
  evolve: (state, event) => state ?? event.data,
  decide: (command, state) => (state ? [] : [{ type: 'CardIssuerApplicationLinked', data: command.link }]),
};
