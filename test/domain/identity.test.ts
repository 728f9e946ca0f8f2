import { expect } from 'chai';
import { type KycEvent, kycDecider, decideStart } from '../../src/domain/identity/kyc';
import { KYC_HISTORY_STATUSES, KYC_STATUSES, type KycStatus, kycHistoryStatus } from '../../src/domain/identity/kyc-statuses';
import { type LoginEvent, loginDecider } from '../../src/domain/identity/login';
import { ageOn, type ProfileEvent, profileDecider } from '../../src/domain/identity/profile';
import { type SessionEvent, sessionDecider } from '../../src/domain/identity/session';
import { type UserEvent, type UserStatus, userDecider } from '../../src/domain/identity/user';
import { type PartnerEvent, partnerDecider } from '../../src/domain/identity/partner';
import { IDENTITY_REFUSALS, requireActiveForLogin, requireMayVerify, requireOfPartner, requireOwnedBy, requireUserOfPartner } from '../../src/domain/identity';
import { type Decider, type DomainEvent, DomainError } from '../../src/platform/decider';
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

/** The refusal a decider answers a command with, given events: its kind, code, message and param. */
function refusalOf<S, C, E extends DomainEvent>(decider: Decider<S, C, E>, given: E[], command: C) {
  return refused(() => decider.decide(command, given.reduce(decider.evolve, decider.initialState())));
}

function refused(act: () => unknown) {
  try {
    act();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    const e = error as DomainError;
    return { kind: e.kind, code: e.code, message: e.message, ...(e.param === undefined ? {} : { param: e.param }) };
  }
  throw new Error('expected a refusal');
}

describe('identity refusals carry their own codes', () => {
  const at = '2026-01-01T00:00:00.000Z';
  it('every code of the catalogue is snake_case and none is a kind default', () => {
    for (const r of Object.values(IDENTITY_REFUSALS)) {
      expect(r.code).to.match(/^[a-z][a-z0-9_]*$/);
      expect(['invalid_request', 'not_found', 'conflict', 'forbidden', 'unauthenticated', 'unprocessable', 'gone']).not.to.include(r.code);
    }
  });

  it('partners', () => {
    const created: PartnerEvent[] = [
      { type: 'PartnerCreated', data: { partnerId: 'p', name: 'Acme', sandbox: true } },
      { type: 'PartnerApiKeyCreated', data: { partnerId: 'p', apiKey: 'k0', secretHash: 'h' } },
    ];
    const create = { type: 'CreatePartner' as const, partnerId: 'p', name: 'Acme', sandbox: true, apiKey: 'k', secretHash: 'h' };
    expect(refusalOf(partnerDecider, created, create)).to.deep.equal({ kind: 'conflict', code: 'partner_exists', message: 'Partner already exists' });
    expect(refusalOf(partnerDecider, [], { ...create, name: '   ' })).to.deep.equal({
      kind: 'invalid',
      code: 'partner_name_empty',
      message: 'name must not be empty',
      param: 'name',
    });
    expect(refusalOf(partnerDecider, [], { type: 'CreateApiKey', apiKey: 'k', secretHash: 'h' })).to.include({
      code: 'partner_not_found',
      message: 'Partner not found',
    });
    expect(refusalOf(partnerDecider, [], { type: 'RevokeApiKey', apiKey: 'k' })).to.include({ code: 'partner_not_found' });
    expect(refusalOf(partnerDecider, created, { type: 'RevokeApiKey', apiKey: 'nope' })).to.deep.equal({
      kind: 'not_found',
      code: 'api_key_not_found',
      message: 'API key not found',
    });
    const keys: PartnerEvent[] = Array.from({ length: 9 }, (_, i) => ({
      type: 'PartnerApiKeyCreated',
      data: { partnerId: 'p', apiKey: `k${i + 1}`, secretHash: 'h' },
    }));
    expect(refusalOf(partnerDecider, [...created, ...keys], { type: 'CreateApiKey', apiKey: 'k10', secretHash: 'h' })).to.deep.equal({
      kind: 'conflict',
      code: 'api_key_limit_reached',
      message: 'A partner may hold at most 10 active keys; revoke one first',
    });
  });

  it('users', () => {
    expect(refusalOf(userDecider, [registered], { type: 'RegisterUser', data: registered.data })).to.deep.equal({
      kind: 'conflict',
      code: 'user_exists',
      message: 'User already exists',
    });
    expect(refusalOf(userDecider, [], { type: 'Suspend', reason: 'r' })).to.deep.equal({
      kind: 'not_found',
      code: 'user_not_found',
      message: 'User not found',
    });
    expect(refusalOf(userDecider, [registered, moved('pending', 'banned')], { type: 'Suspend', reason: 'r' })).to.include({ code: 'user_banned' });
    expect(refusalOf(userDecider, [registered, moved('pending', 'banned')], { type: 'Reinstate', reason: 'r' })).to.include({
      code: 'banned_user_not_reinstatable',
    });
    expect(refusalOf(userDecider, [registered], { type: 'Reinstate', reason: 'r' })).to.deep.equal({
      kind: 'conflict',
      code: 'user_not_suspended',
      message: 'User is not suspended (status pending)',
    });
    expect(IDENTITY_REFUSALS.emailTaken()).to.include({ kind: 'conflict', code: 'email_taken', message: 'User with this email already exists' });
  });

  it('who owns what', () => {
    expect(refused(() => requireUserOfPartner(null, 'p'))).to.include({ code: 'user_not_found' });
    expect(refused(() => requireUserOfPartner({ partnerId: 'q' }, 'p'))).to.deep.equal({
      kind: 'forbidden',
      code: 'user_of_another_partner',
      message: 'User does not belong to this partner',
    });
    // Another capability's refusal keeps its own code; a bare message keeps the kind's.
    expect(refused(() => requireOfPartner({ partnerId: 'q' }, 'p', IDENTITY_REFUSALS.partnerNotFound))).to.include({ code: 'partner_not_found' });
    expect(refused(() => requireOfPartner(null, 'p', 'Thing not found'))).to.deep.equal({ kind: 'not_found', code: 'not_found', message: 'Thing not found' });
    const caller = { partnerId: 'p', userId: 'u' };
    const refusals = { notFound: IDENTITY_REFUSALS.userNotFound, forbidden: IDENTITY_REFUSALS.userOfAnotherPartner };
    expect(refused(() => requireOwnedBy({}, { partnerId: 'q', userId: 'u' }, caller, refusals))).to.include({ code: 'user_not_found' });
    expect(refused(() => requireOwnedBy({}, { partnerId: 'p', userId: 'v' }, caller, refusals))).to.include({ code: 'user_of_another_partner' });
    expect(requireOwnedBy(1, caller, caller, refusals)).to.equal(1);
  });

  it('profiles', () => {
    const created: ProfileEvent = { type: 'ProfileCreated', data: { userId, partnerId: 'p', fields: { firstName: 'Ada' } } };
    const create = { type: 'CreateProfile' as const, userId, partnerId: 'p', fields: {}, today: '2026-06-14' };
    expect(refusalOf(profileDecider, [created], create)).to.deep.equal({
      kind: 'conflict',
      code: 'profile_exists',
      message: `PersonalProfile already exists: ${userId}`,
    });
    expect(refusalOf(profileDecider, [], { type: 'UpdateProfile', userId, changes: {}, today: '2026-06-14', identityVerified: false })).to.deep.equal({
      kind: 'not_found',
      code: 'profile_not_found',
      message: `PersonalProfile not found: ${userId}`,
    });
    expect(refusalOf(profileDecider, [], { ...create, fields: { dateOfBirth: '2001-02-29' } })).to.deep.equal({
      kind: 'invalid',
      code: 'date_of_birth_invalid',
      message: 'dateOfBirth must be a real date in YYYY-MM-DD format',
      param: 'dateOfBirth',
    });
    expect(refusalOf(profileDecider, [], { ...create, fields: { dateOfBirth: '2026-06-15' } })).to.deep.equal({
      kind: 'invalid',
      code: 'date_of_birth_in_future',
      message: 'dateOfBirth must be in the past',
      param: 'dateOfBirth',
    });
    expect(refusalOf(profileDecider, [], { ...create, fields: { dateOfBirth: '2008-06-15' } })).to.deep.equal({
      kind: 'invalid',
      code: 'user_under_age',
      message: 'dateOfBirth: the user must be at least 18 years old',
      param: 'dateOfBirth',
    });
    expect(
      refusalOf(profileDecider, [created], { type: 'UpdateProfile', userId, changes: { firstName: 'Grace' }, today: '2026-06-14', identityVerified: true }),
    ).to.deep.equal({ kind: 'conflict', code: 'verified_fields_locked', message: 'Verified identity fields cannot be changed: firstName' });
  });

  it('KYC', () => {
    const started: KycEvent = {
      type: 'KycVerificationStarted',
      data: { userId, verificationId: 'v1', inquiryId: 'inq1', provider: 'sandbox', verificationUrl: 'u', verificationLevel: 'basic', at },
    };
    const change = (to: string) =>
      ({
        type: 'KycStatusChanged',
        data: {
          userId,
          verificationId: 'v1',
          inquiryId: 'inq1',
          from: 'created',
          to,
          riskLevel: null,
          riskScore: null,
          rejectionReasons: null,
          document: null,
          source: 's',
          at,
        },
      }) as KycEvent;
    const state = (events: KycEvent[]) => events.reduce(kycDecider.evolve, kycDecider.initialState());
    expect(refused(() => decideStart(state([started, change('needs_review')])))).to.deep.equal({
      kind: 'conflict',
      code: 'kyc_in_progress',
      message: 'KYC already in progress',
    });
    expect(refused(() => decideStart(state([started, change('approved')])))).to.deep.equal({
      kind: 'unprocessable',
      code: 'kyc_finalized',
      message: 'KYC already finalized with status: approved',
    });
    const record = {
      type: 'RecordVerificationStarted' as const,
      userId,
      verificationId: 'v2',
      inquiryId: 'inq2',
      provider: 'sandbox',
      verificationUrl: 'u',
      at,
    };
    expect(refusalOf(kycDecider, [started, change('completed')], record)).to.include({ code: 'kyc_in_progress' });
    const apply = {
      type: 'ApplyProviderStatus' as const,
      inquiryId: 'nope',
      status: 'approved' as const,
      riskLevel: null,
      riskScore: null,
      reasons: null,
      document: null,
      source: 's',
      at,
    };
    expect(refusalOf(kycDecider, [started], apply)).to.deep.equal({ kind: 'not_found', code: 'unknown_inquiry', message: 'Unknown inquiry nope' });
    expect(IDENTITY_REFUSALS.kycNotFound(userId)).to.include({ kind: 'not_found', code: 'kyc_not_found', message: `KycVerification not found: ${userId}` });
  });

  it('login codes and sessions', () => {
    expect(refusalOf(loginDecider, [], { type: 'VerifyCode', userId, presentedHash: 'aa', sessionId: 's', at })).to.deep.equal({
      kind: 'unauthenticated',
      code: 'invalid_login_code',
      message: 'Invalid or expired code',
    });
    const started: SessionEvent = {
      type: 'SessionStarted',
      data: { sessionId: 's', userId, partnerId: 'p', refreshHash: 'aa'.repeat(32), expiresAt: '2026-01-31T00:00:00.000Z', at },
    };
    const start = { type: 'StartSession' as const, sessionId: 's', userId, partnerId: 'p', refreshHash: 'aa', userGeneration: 0, at };
    expect(refusalOf(sessionDecider, [started], start)).to.deep.equal({ kind: 'conflict', code: 'session_exists', message: 'Session already exists' });
    expect(refusalOf(sessionDecider, [started], { type: 'Logout', presentedHash: 'bb'.repeat(32), at })).to.deep.equal({
      kind: 'unauthenticated',
      code: 'refresh_token_invalid',
      message: 'Invalid or expired token',
    });
    const refresh = { type: 'Refresh' as const, presentedHash: 'aa'.repeat(32), newHash: 'bb'.repeat(32), userGeneration: 0, at };
    expect(refusalOf(sessionDecider, [started], { ...refresh, userStatus: 'suspended' })).to.deep.equal({
      kind: 'unauthenticated',
      code: 'user_not_active',
      message: 'User account is suspended',
    });
    expect(refusalOf(sessionDecider, [], { ...refresh, userStatus: 'active' })).to.include({ code: 'refresh_token_invalid' });
  });

  it('users who may not verify or log in', () => {
    expect(refused(() => requireMayVerify('banned'))).to.deep.equal({ kind: 'conflict', code: 'user_suspended_or_banned', message: 'User account is banned' });
    expect(refused(() => requireActiveForLogin('pending'))).to.deep.equal({
      kind: 'unauthenticated',
      code: 'user_not_active',
      message: 'User account is pending',
    });
  });

  it('the sandbox and the retired login route', () => {
    expect(IDENTITY_REFUSALS.inquiryDecided('inq1', 'approved')).to.include({
      kind: 'conflict',
      code: 'inquiry_already_decided',
      message: 'Sandbox inquiry inq1 is already approved',
    });
    expect(IDENTITY_REFUSALS.inquiryNotFound()).to.include({ kind: 'not_found', code: 'inquiry_not_found', message: 'Inquiry not found' });
    expect(IDENTITY_REFUSALS.loginDeprecated()).to.include({ kind: 'gone', code: 'login_deprecated' });
  });
});

describe('KYC history statuses', () => {
  it('sums up each KYC status in the interface’s five values, naming the cause of a failure first', () => {
    const expected: Record<KycStatus, string> = {
      created: 'created',
      pending: 'processing',
      in_progress: 'processing',
      completed: 'processing',
      needs_review: 'manual_review',
      approved: 'approved',
      declined: 'failed',
      rejected: 'failed',
      failed: 'failed',
      expired: 'failed',
    };
    for (const status of KYC_STATUSES) {
      const item = kycHistoryStatus(status, null);
      expect(item.status, status).to.equal(expected[status]);
      expect(KYC_HISTORY_STATUSES).to.include(item.status);
      expect(item.rejectionReasons, status).to.deep.equal(item.status === 'failed' ? [status] : null);
    }
    expect(kycHistoryStatus('declined', ['document_expired', 'declined'])).to.deep.equal({
      status: 'failed',
      rejectionReasons: ['declined', 'document_expired'],
    });
    expect(kycHistoryStatus('approved', ['ignored'])).to.deep.equal({ status: 'approved', rejectionReasons: null });
  });
});
