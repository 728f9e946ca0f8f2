import { expect } from 'chai';
import { type KycEvent, kycDecider, decideStart } from '../../src/domain/identity/kyc';
import { type LoginEvent, loginDecider } from '../../src/domain/identity/login';
import { ageOn, type ProfileEvent, profileDecider } from '../../src/domain/identity/profile';
import { type SessionEvent, sessionDecider } from '../../src/domain/identity/session';
import { type UserEvent, type UserStatus, userDecider } from '../../src/domain/identity/user';
import { deciderSpec } from './spec';

const userId = '11111111-1111-4111-8111-111111111111';
const registered: UserEvent = {
  type: 'UserRegistered',
  data: { userId, partnerId: 'p', email: 'a@b.co', countryCode: 'CO', phoneNumber: null, language: 'en' },
};
const moved = (from: UserStatus, to: UserStatus, reason = 'r'): UserEvent => ({ type: 'UserStatusChanged', data: { userId, from, to, reason } });

describe('user status transitions', () => {
  const spec = deciderSpec(userDecider);
  it('a pending user becomes kyc_required when KYC starts', () => {
    spec
      .given([registered])
      .when({ type: 'RequireKyc' })
      .then([moved('pending', 'kyc_required', 'kyc_started')]);
  });
  it('approval activates a kyc_required user', () => {
    spec
      .given([registered, moved('pending', 'kyc_required')])
      .when({ type: 'ActivateAfterKyc' })
      .then([moved('kyc_required', 'active', 'kyc_approved')]);
  });
  it('a reinstated user returns to the status it had before suspension', () => {
    spec
      .given([registered, moved('pending', 'kyc_required'), moved('kyc_required', 'active'), moved('active', 'suspended')])
      .when({ type: 'Reinstate', reason: 'r' })
      .then([moved('suspended', 'active')]);
  });
  it('banned is final', () => {
    spec
      .given([registered, moved('pending', 'banned')])
      .when({ type: 'Reinstate', reason: 'r' })
      .thenThrows('conflict', 'A banned user cannot be reinstated');
    spec
      .given([registered, moved('pending', 'banned')])
      .when({ type: 'Suspend', reason: 'r' })
      .thenThrows('conflict', 'User is banned');
    spec
      .given([registered, moved('pending', 'banned')])
      .when({ type: 'ActivateAfterKyc' })
      .thenNothingHappens();
  });
  it('a suspended user is not activated by a late approval, but reinstatement lands where the approval would have moved it', () => {
    const onReinstatement = (from: UserStatus, to: UserStatus, reason: string): UserEvent => ({
      type: 'UserStatusOnReinstatementChanged',
      data: { userId, from, to, reason },
    });
    const suspendedWhileKycRequired = [registered, moved('pending', 'kyc_required'), moved('kyc_required', 'suspended')];
    spec
      .given(suspendedWhileKycRequired)
      .when({ type: 'ActivateAfterKyc' })
      .then([onReinstatement('kyc_required', 'active', 'kyc_approved')]);
    spec
      .given([...suspendedWhileKycRequired, onReinstatement('kyc_required', 'active', 'kyc_approved')])
      .when({ type: 'Reinstate', reason: 'r' })
      .then([moved('suspended', 'active', 'r')]);
    // Suspended while pending: KYC started and approved meanwhile.
    const suspendedWhilePending = [registered, moved('pending', 'suspended')];
    spec
      .given(suspendedWhilePending)
      .when({ type: 'RequireKyc' })
      .then([onReinstatement('pending', 'kyc_required', 'kyc_started')]);
    spec
      .given([...suspendedWhilePending, onReinstatement('pending', 'kyc_required', 'kyc_started')])
      .when({ type: 'Reinstate', reason: 'r' })
      .then([moved('suspended', 'kyc_required', 'r')]);
    spec
      .given([registered, moved('pending', 'kyc_required'), moved('kyc_required', 'active'), moved('active', 'suspended')])
      .when({ type: 'ActivateAfterKyc' })
      .thenNothingHappens();
  });
});

describe('login codes', () => {
  const spec = deciderSpec(loginDecider);
  const at = '2026-01-01T00:00:00.000Z';
  const issued: LoginEvent = { type: 'LoginCodeIssued', data: { userId, codeId: 'c1', codeHash: 'aa'.repeat(32), expiresAt: '2026-01-01T00:10:00.000Z', at } };
  it('lives 10 minutes', () => {
    expect(loginDecider.decide({ type: 'IssueCode', userId, codeId: 'c1', codeHash: 'aa'.repeat(32), at }, loginDecider.initialState())).to.deep.equal([
      issued,
    ]);
  });
  it('is refused once expired, even when right', () => {
    spec
      .given([issued])
      .when({ type: 'VerifyCode', userId, presentedHash: 'aa'.repeat(32), sessionId: 's', at: '2026-01-01T00:10:00.000Z' })
      .thenThrows('unauthenticated', 'Invalid or expired code');
  });
  it('counts wrong tries and burns the code at the fifth', () => {
    const failed = (attempts: number): LoginEvent => ({ type: 'LoginCodeAttemptFailed', data: { userId, codeId: 'c1', attempts, burned: attempts >= 5, at } });
    spec
      .given([issued, failed(1), failed(2), failed(3)])
      .when({ type: 'VerifyCode', userId, presentedHash: 'bb'.repeat(32), sessionId: 's', at })
      .then([failed(4)]);
    spec
      .given([issued, failed(1), failed(2), failed(3), failed(4)])
      .when({ type: 'VerifyCode', userId, presentedHash: 'bb'.repeat(32), sessionId: 's', at })
      .then([failed(5)]);
    spec
      .given([issued, failed(1), failed(2), failed(3), failed(4), failed(5)])
      .when({ type: 'VerifyCode', userId, presentedHash: 'aa'.repeat(32), sessionId: 's', at })
      .thenThrows('unauthenticated', 'Invalid or expired code');
  });
});

describe('sessions', () => {
  const spec = deciderSpec(sessionDecider);
  const at = '2026-01-01T00:00:00.000Z';
  const started: SessionEvent = {
    type: 'SessionStarted',
    data: { sessionId: 's', userId, partnerId: 'p', refreshHash: 'aa'.repeat(32), expiresAt: '2026-01-31T00:00:00.000Z', at },
  };
  it('refuses a refresh token after its 30 days', () => {
    spec
      .given([started])
      .when({
        type: 'Refresh',
        presentedHash: 'aa'.repeat(32),
        newHash: 'bb'.repeat(32),
        userStatus: 'active',
        userGeneration: 0,
        at: '2026-01-31T00:00:00.000Z',
      })
      .thenThrows('unauthenticated', 'Invalid or expired token');
  });
  it('revokes the session when a spent token comes back', () => {
    const refreshed: SessionEvent = {
      type: 'SessionRefreshed',
      data: { sessionId: 's', refreshHash: 'bb'.repeat(32), expiresAt: '2026-01-31T00:00:00.000Z', at },
    };
    spec
      .given([started, refreshed])
      .when({ type: 'Refresh', presentedHash: 'aa'.repeat(32), newHash: 'cc'.repeat(32), userStatus: 'active', userGeneration: 0, at })
      .then([{ type: 'SessionRevoked', data: { sessionId: 's', reason: 'refresh_token_reuse', at } }]);
  });
  it('changes nothing on a refresh while the user is not active', () => {
    for (const userStatus of ['suspended', 'banned', 'pending'] as const) {
      spec
        .given([started])
        .when({ type: 'Refresh', presentedHash: 'aa'.repeat(32), newHash: 'bb'.repeat(32), userStatus, userGeneration: 1, at })
        .thenThrows('unauthenticated', `User account is ${userStatus}`);
    }
  });
  it('stays ended after its user was suspended, even once the user is active again', () => {
    spec
      .given([started])
      .when({ type: 'Refresh', presentedHash: 'aa'.repeat(32), newHash: 'bb'.repeat(32), userStatus: 'active', userGeneration: 1, at })
      .thenThrows('unauthenticated', 'Invalid or expired token');
    spec
      .given([{ ...started, data: { ...started.data, userGeneration: 1 } } as SessionEvent])
      .when({ type: 'Refresh', presentedHash: 'aa'.repeat(32), newHash: 'bb'.repeat(32), userStatus: 'active', userGeneration: 1, at })
      .then([{ type: 'SessionRefreshed', data: { sessionId: 's', refreshHash: 'bb'.repeat(32), expiresAt: '2026-01-31T00:00:00.000Z', at } }]);
  });
});

describe('KYC verifications', () => {
  const at = '2026-01-01T00:00:00.000Z';
  const started: KycEvent = {
    type: 'KycVerificationStarted',
    data: { userId, verificationId: 'v1', inquiryId: 'inq1', provider: 'sandbox', verificationUrl: 'u', verificationLevel: 'basic', at },
  };
  const change = (from: string, to: string) =>
    ({
      type: 'KycStatusChanged',
      data: {
        userId,
        verificationId: 'v1',
        inquiryId: 'inq1',
        from,
        to,
        riskLevel: null,
        riskScore: null,
        rejectionReasons: null,
        document: null,
        source: 's',
        at,
      },
    }) as KycEvent;
  const apply = (status: string) =>
    ({ type: 'ApplyProviderStatus', inquiryId: 'inq1', status, riskLevel: null, riskScore: null, reasons: null, document: null, source: 's', at }) as const;
  const spec = deciderSpec(kycDecider);
  it('moves forward with the provider', () => {
    spec
      .given([started])
      .when(apply('pending') as never)
      .then([change('created', 'pending')]);
  });
  it('never moves a final status, nor back', () => {
    spec
      .given([started, change('created', 'approved')])
      .when(apply('declined') as never)
      .thenNothingHappens();
    spec
      .given([started, change('created', 'needs_review')])
      .when(apply('pending') as never)
      .thenNothingHappens();
  });
  it('applies the start rules', () => {
    const state = (events: KycEvent[]) => events.reduce(kycDecider.evolve, kycDecider.initialState());
    expect(decideStart(state([])).kind).to.equal('new');
    expect(decideStart(state([started])).kind).to.equal('existing');
    expect(decideStart(state([started, change('created', 'expired')])).kind).to.equal('new');
    expect(() => decideStart(state([started, change('created', 'completed')]))).to.throw('KYC already in progress');
    expect(() => decideStart(state([started, change('created', 'rejected')]))).to.throw('KYC already finalized with status: rejected');
  });
});

describe('profiles', () => {
  const spec = deciderSpec(profileDecider);
  it('counts age in whole years, birthday included', () => {
    expect(ageOn('2000-06-15', '2018-06-14')).to.equal(17);
    expect(ageOn('2000-06-15', '2018-06-15')).to.equal(18);
    expect(ageOn('2000-02-29', '2018-02-28')).to.equal(17);
  });
  it('records only the fields that change', () => {
    const created: ProfileEvent = { type: 'ProfileCreated', data: { userId, partnerId: 'p', fields: { city: 'Cali', firstName: 'Ada' } } };
    spec
      .given([created])
      .when({ type: 'UpdateProfile', userId, changes: { city: 'Cali', firstName: 'Grace' }, today: '2026-01-01', identityVerified: false })
      .then([{ type: 'ProfileUpdated', data: { userId, changes: { firstName: 'Grace' } } }]);
    spec
      .given([created])
      .when({ type: 'UpdateProfile', userId, changes: { city: 'Cali' }, today: '2026-01-01', identityVerified: false })
      .thenNothingHappens();
  });
  it('keeps the verified identity fields once KYC is approved, naming those that would change; other fields change', () => {
    const fields = { firstName: 'Ada', lastName: 'Lovelace', dateOfBirth: '1990-12-10', nationality: 'CO', governmentIdNumber: 'AB1', city: 'Cali' };
    const created: ProfileEvent = { type: 'ProfileCreated', data: { userId, partnerId: 'p', fields } };
    const verified = { type: 'UpdateProfile' as const, userId, today: '2026-01-01', identityVerified: true };
    spec
      .given([created])
      .when({ ...verified, changes: { governmentIdNumber: 'ZZ9', city: 'Lima', firstName: 'Augusta', lastName: 'Lovelace', governmentIdCountry: 'MX' } })
      .thenThrows('conflict', 'Verified identity fields cannot be changed: firstName, governmentIdNumber, governmentIdCountry');
    spec
      .given([created])
      .when({ ...verified, changes: { firstName: 'Ada', dateOfBirth: '1990-12-10', city: 'Lima' } })
      .then([{ type: 'ProfileUpdated', data: { userId, changes: { city: 'Lima' } } }]);
    spec
      .given([created])
      .when({ ...verified, identityVerified: false, changes: { firstName: 'Augusta' } })
      .then([{ type: 'ProfileUpdated', data: { userId, changes: { firstName: 'Augusta' } } }]);
  });
  it('names dateOfBirth when the user would be under 18', () => {
    spec
      .given([])
      .when({ type: 'CreateProfile', userId, partnerId: 'p', fields: { dateOfBirth: '2008-06-15' }, today: '2026-06-14' })
      .thenThrows('invalid', 'dateOfBirth: the user must be at least 18 years old');
  });
});
