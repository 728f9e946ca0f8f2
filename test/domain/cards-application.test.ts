import { expect } from 'chai';
import { type ApplicationFacts, type CardApplicationCommand, cardApplicationDecider, requireApproved } from '../../src/domain/cards/application';
import { AT, application, cardDeciderSpec, decided, LATER, refused, submitted } from './cards-support';
import { refusal } from './ledger-support';

const spec = cardDeciderSpec(cardApplicationDecider);
const READY: ApplicationFacts = { kycApproved: true, profileMissing: [] };
const submit = (facts: ApplicationFacts = READY, over: Parameters<typeof application>[0] = {}): CardApplicationCommand => ({
  type: 'Submit',
  application: application(over),
  externalStatus: 'pending',
  facts,
});
const report = (
  status: 'pending' | 'approved' | 'declined',
  externalStatus: string,
  reason: string | null = null,
  applicationId = 'app-1',
): CardApplicationCommand => ({
  type: 'ApplyIssuerStatus',
  applicationId,
  status,
  externalStatus,
  reason,
  source: 'sandbox',
  at: LATER,
});

describe('a card application, decided', () => {
  describe('submitting', () => {
    it('is pending, with the request and profile fields it was made with, when KYC is approved and terms accepted', () => {
      spec.given([]).when(submit()).then([submitted()]);
    });

    it('may follow a declined application: a new one is pending', () => {
      spec
        .given([submitted(), decided('declined', 'risk')])
        .when(submit(READY, { id: 'app-2' }))
        .then([submitted({ id: 'app-2' })]);
    });

    it('is refused without accepted terms of service', () => {
      spec
        .given([])
        .when(submit(READY, { isTermsOfServiceAccepted: false }))
        .thenRefuses('invalid', 'terms_not_accepted', 'isTermsOfServiceAccepted must be true');
    });

    it('is refused while KYC is not approved', () => {
      spec
        .given([])
        .when(submit({ kycApproved: false, profileMissing: [] }))
        .thenRefuses('forbidden', 'kyc_not_approved', 'KYC must be approved to apply for a card');
    });

    it('is refused while another application is pending', () => {
      spec
        .given([submitted()])
        .when(submit(READY, { id: 'app-2' }))
        .thenRefuses('conflict', 'card_application_exists', 'Card application already exists with status: pending');
    });

    it('is refused once an application was approved', () => {
      spec
        .given([submitted(), decided('approved')])
        .when(submit(READY, { id: 'app-2' }))
        .thenRefuses('conflict', 'card_application_exists', 'Card application already exists with status: approved');
    });

    it('is refused when the profile lacks the fields the issuer asks for, naming them', () => {
      spec
        .given([])
        .when(submit({ kycApproved: true, profileMissing: ['occupation', 'annualSalary'] }))
        .thenRefuses('unprocessable', 'profile_incomplete_for_card', 'PersonalProfile is missing fields required for a card: occupation, annualSalary');
    });
  });

  describe("the issuer's report", () => {
    it('approves a pending application', () => {
      spec
        .given([submitted()])
        .when(report('approved', 'approved'))
        .then([decided('approved')]);
    });

    it('declines a pending application with its reason', () => {
      spec
        .given([submitted()])
        .when(report('declined', 'denied', 'risk'))
        .then([decided('declined', 'risk')]);
    });

    it('changes nothing once the application is decided (a late or repeated report)', () => {
      spec
        .given([submitted(), decided('approved')])
        .when(report('declined', 'denied', 'late'))
        .thenNothingHappens();
      spec
        .given([submitted(), decided('declined', 'risk')])
        .when(report('approved', 'approved'))
        .thenNothingHappens();
      spec
        .given([submitted(), decided('approved')])
        .when(report('approved', 'approved'))
        .thenNothingHappens();
    });

    it('mirrors an issuer status that decides nothing (statusSummary.external), once', () => {
      const seen = {
        type: 'CardApplicationIssuerStatusSeen' as const,
        data: { applicationId: 'app-1', userId: 'ada', externalStatus: 'manualReview', source: 'sandbox', at: LATER },
      };
      spec.given([submitted()]).when(report('pending', 'manualReview')).then([seen]);
      spec.given([submitted(), seen]).when(report('pending', 'manualReview')).thenNothingHappens();
      spec.given([submitted()]).when(report('pending', 'pending')).thenNothingHappens();
    });

    it('is refused for an application the user does not have (404)', () => {
      spec.given([]).when(report('approved', 'approved')).thenRefuses('not_found', 'card_application_not_found', 'Card application not found');
      spec
        .given([submitted()])
        .when(report('approved', 'approved', null, 'app-9'))
        .thenRefuses('not_found', 'card_application_not_found', 'Card application not found');
    });
  });

  describe('the state it folds to', () => {
    it('shows status, reason, external status and timestamps of the latest application', () => {
      const state = [submitted(), decided('declined', 'risk')].reduce(cardApplicationDecider.evolve, cardApplicationDecider.initialState());
      expect(state.current).to.include({
        id: 'app-1',
        applicationStatus: 'declined',
        applicationReason: 'risk',
        externalStatus: 'denied',
        createdAt: AT,
        updatedAt: LATER,
      });
    });

    it('lets a card be issued only on an approved application', () => {
      const fold = (...events: Parameters<typeof cardApplicationDecider.evolve>[1][]) =>
        events.reduce(cardApplicationDecider.evolve, cardApplicationDecider.initialState());
      expect(requireApproved(fold(submitted(), decided('approved'))).id).to.equal('app-1');
      expect(refused(() => requireApproved(fold()))).to.deep.equal({
        kind: 'not_found',
        code: 'card_application_not_found',
        message: 'Card application not found',
      });
      expect(refused(() => requireApproved(fold(submitted())))).to.deep.equal({
        kind: 'conflict',
        code: 'card_application_not_approved',
        message: 'Card application is pending',
      });
      expect(refusal(() => requireApproved(fold(submitted(), decided('declined')))).message).to.equal('Card application is declined');
    });
  });
});
