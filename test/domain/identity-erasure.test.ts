import { emailReservationDecider, type UserEvent, userDecider } from '../../src/domain/identity/user';
import { deciderSpec } from './spec';

const userId = '11111111-1111-4111-8111-111111111111';
const registered: UserEvent = {
  type: 'UserRegistered',
  data: { userId, partnerId: 'p', email: 'a@b.co', countryCode: 'CO', phoneNumber: null, language: 'en' },
};
const at = '2026-11-27T10:00:00.000Z';
const settled = { unsettled: false, pending: false };
const erased: UserEvent = { type: 'UserErased', data: { userId, erasedAt: at } };

describe('user erasure (the decider)', () => {
  const spec = deciderSpec(userDecider);

  it('erases a user whose money is settled', () => {
    spec.given([registered]).when({ type: 'Erase', erasedAt: at, money: settled }).then([erased]);
  });

  it('refuses while money is left, then while something is pending', () => {
    spec
      .given([registered])
      .when({ type: 'Erase', erasedAt: at, money: { unsettled: true, pending: true } })
      .thenThrows('conflict', 'User has a non-zero balance');
    spec
      .given([registered])
      .when({ type: 'Erase', erasedAt: at, money: { unsettled: false, pending: true } })
      .thenThrows('conflict', 'User has pending transactions');
  });

  it('an erased user is not found by any command, erasure included', () => {
    for (const command of [
      { type: 'Erase' as const, erasedAt: at, money: settled },
      { type: 'Suspend' as const, reason: 'r' },
      { type: 'RequireKyc' as const },
      { type: 'ActivateAfterKyc' as const },
    ])
      spec.given([registered, erased]).when(command).thenThrows('not_found', 'User not found');
  });
});

describe('an email’s reservation', () => {
  const spec = deciderSpec(emailReservationDecider);
  const reserved = (id: string) => ({ type: 'UserEmailReserved' as const, data: { userId: id } });
  const released = (id: string) => ({ type: 'UserEmailReleased' as const, data: { userId: id } });

  it('is one user’s until that user’s erasure releases it; then another may take it', () => {
    spec
      .given([])
      .when({ type: 'Reserve', userId })
      .then([reserved(userId)]);
    spec
      .given([reserved(userId)])
      .when({ type: 'Reserve', userId: 'other' })
      .thenThrows('conflict', 'User with this email already exists');
    spec
      .given([reserved(userId)])
      .when({ type: 'Release', userId })
      .then([released(userId)]);
    spec
      .given([reserved(userId), released(userId)])
      .when({ type: 'Reserve', userId: 'other' })
      .then([reserved('other')]);
  });

  it('is released once, and only by its holder', () => {
    spec
      .given([reserved(userId), released(userId)])
      .when({ type: 'Release', userId })
      .thenNothingHappens();
    spec
      .given([reserved('other')])
      .when({ type: 'Release', userId })
      .thenNothingHappens();
  });
});
