import { expect } from 'chai';
import type { CardApplicationData, CardApplicationEvent } from '../../src/domain/cards/application';
import type { CardEvent, CardIssuedData, CardStatus } from '../../src/domain/cards/card';
import { DEFAULT_CARD_LIMIT } from '../../src/domain/cards/limit';
import { type Decider, type DomainEvent, DomainError } from '../../src/platform/decider';
import { deciderSpec } from './spec';

/** What a refusal tells the client: its kind (hence status), its stable code and its message. */
export function refused(fn: () => unknown): { kind: string; code: string; message: string } {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    const { kind, code, message } = error as DomainError;
    return { kind, code, message };
  }
  expect.fail('expected a refusal');
}

/** deciderSpec (./spec.ts) whose refusals are checked with their stable code too: thenRefuses(kind, code, message). */
export function cardDeciderSpec<S, C, E extends DomainEvent>(decider: Decider<S, C, E>) {
  const base = deciderSpec(decider);
  return {
    given(events: E[]) {
      const given = base.given(events);
      const state = events.reduce(decider.evolve, decider.initialState());
      return {
        when(command: C) {
          return {
            ...given.when(command),
            thenRefuses(kind: DomainError['kind'], code: string, message: string) {
              expect(refused(() => decider.decide(command, state))).to.deep.equal({ kind, code, message });
            },
          };
        },
      };
    },
  };
}

/** Fixed instants: the deciders take their time from the command, never from a clock. */
export const AT = '2026-11-25T12:00:00.000Z';
export const LATER = '2026-11-25T13:00:00.000Z';

export const application = (over: Partial<CardApplicationData> = {}): CardApplicationData => ({
  id: 'app-1',
  accountId: 1001,
  userId: 'ada',
  partnerId: 'acme',
  issuer: 'sandbox',
  issuerApplicationId: 'iss_app_1',
  walletAddress: null,
  solanaAddress: null,
  tronAddress: null,
  chainId: null,
  contractAddress: null,
  sourceKey: 'acme',
  ipAddress: '203.0.113.7',
  occupation: 'engineer',
  annualSalary: '85000',
  accountPurpose: 'spending',
  expectedMonthlyVolume: '1500',
  isTermsOfServiceAccepted: true,
  hasExistingDocuments: true,
  cardType: 'virtual',
  at: AT,
  ...over,
});

export const submitted = (over: Partial<CardApplicationData> = {}): CardApplicationEvent => ({
  type: 'CardApplicationSubmitted',
  data: { ...application(over), externalStatus: 'pending' },
});

export const decided = (to: 'approved' | 'declined', reason: string | null = null, applicationId = 'app-1'): CardApplicationEvent => ({
  type: 'CardApplicationDecided',
  data: { applicationId, userId: 'ada', from: 'pending', to, reason, externalStatus: to === 'approved' ? 'approved' : 'denied', source: 'sandbox', at: LATER },
});

export const issuedCard = (over: Partial<Omit<CardIssuedData, 'status' | 'limit'>> = {}): Omit<CardIssuedData, 'status' | 'limit'> => ({
  cardId: 'card-1',
  userId: 'ada',
  partnerId: 'acme',
  accountId: 1001,
  applicationId: 'app-1',
  type: 'virtual',
  last4: '4242',
  expirationMonth: '11',
  expirationYear: '29',
  issuer: 'sandbox',
  issuerReference: 'iss_card_1',
  at: AT,
  ...over,
});

export const issued = (type: 'virtual' | 'physical' = 'virtual'): CardEvent => ({
  type: 'CardIssued',
  data: { ...issuedCard({ type }), status: type === 'virtual' ? 'active' : 'notActivated', limit: DEFAULT_CARD_LIMIT },
});

const move = (type: 'CardActivated' | 'CardLocked' | 'CardUnlocked' | 'CardCanceled', from: CardStatus, to: CardStatus): CardEvent => ({
  type,
  data: { cardId: 'card-1', from, to, at: LATER },
});
export const activated = () => move('CardActivated', 'notActivated', 'active');
export const locked = () => move('CardLocked', 'active', 'locked');
export const unlocked = () => move('CardUnlocked', 'locked', 'active');
export const canceled = (from: CardStatus = 'active') => move('CardCanceled', from, 'canceled');
