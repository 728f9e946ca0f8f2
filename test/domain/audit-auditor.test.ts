import { expect } from 'chai';
import { AUDIT_REFUSALS, type AuditorEvent, auditorDecider, latestExpiry } from '../../src/domain/audit';
import { DomainError } from '../../src/platform/decider';
import { deciderSpec } from './spec';

const auditorId = '6d1e8f2a-3b4c-4d5e-8f60-718293a4b5c6';
const now = new Date('2026-03-01T12:00:00.000Z');
const expiresAt = '2026-06-01T00:00:00.000Z';
const created: AuditorEvent = { type: 'AuditorCreated', data: { auditorId, name: 'Ledger & Co.', tokenHash: 'h1', expiresAt } };
const revoked: AuditorEvent = { type: 'AuditorRevoked', data: { auditorId } };
const create = (expires: Date, name = 'Ledger & Co.') => ({ type: 'CreateAuditor', auditorId, name, tokenHash: 'h1', expiresAt: expires, now }) as const;
const use = (at: Date, tokenHash = 'h1') => ({ type: 'RecordUse', tokenHash, route: '/audit/v1/events', now: at }) as const;

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
  return undefined;
}

describe('auditor credential', () => {
  const spec = deciderSpec(auditorDecider);

  it('is created with its token hash and expiry, its name trimmed', () => {
    spec
      .given([])
      .when(create(new Date(expiresAt), '  Ledger & Co. '))
      .then([created]);
  });

  it('expires in the future and at most one calendar year ahead', () => {
    spec.given([]).when(create(now)).thenThrows('invalid', 'expiresAt must be in the future');
    spec
      .given([])
      .when(create(new Date('2027-03-01T12:00:00.001Z')))
      .thenThrows('invalid', 'expiresAt must be at most 1 year ahead');
    spec
      .given([])
      .when(create(latestExpiry(now)))
      .then([{ ...created, data: { ...created.data, expiresAt: '2027-03-01T12:00:00.000Z' } }]);
    expect(codeOf(() => auditorDecider.decide(create(now), auditorDecider.initialState()))).to.equal('auditor_expiry_not_in_future');
    expect(codeOf(() => auditorDecider.decide(create(new Date('2028-01-01')), auditorDecider.initialState()))).to.equal('auditor_expiry_too_far');
  });

  it('refuses a blank name and a second creation', () => {
    spec
      .given([])
      .when(create(new Date(expiresAt), '   '))
      .thenThrows('invalid', 'name must not be empty');
    spec
      .given([created])
      .when(create(new Date(expiresAt)))
      .thenThrows('conflict', 'Auditor already exists');
    expect(AUDIT_REFUSALS.auditorNameEmpty.code).to.equal('auditor_name_empty');
    expect(AUDIT_REFUSALS.auditorExists.code).to.equal('auditor_exists');
  });

  it('records a use of a route by the token it was made with, before it expires', () => {
    spec
      .given([created])
      .when(use(now))
      .then([{ type: 'AuditorUsed', data: { auditorId, route: '/audit/v1/events', at: now.toISOString() } }]);
  });

  it('refuses a use by another token, of an unknown auditor, after revocation, and at or after expiry', () => {
    const state = (events: AuditorEvent[]) => events.reduce(auditorDecider.evolve, auditorDecider.initialState());
    expect(codeOf(() => auditorDecider.decide(use(now, 'other'), state([created])))).to.equal('auditor_token_invalid');
    expect(codeOf(() => auditorDecider.decide(use(now), state([])))).to.equal('auditor_token_invalid');
    expect(codeOf(() => auditorDecider.decide(use(now), state([created, revoked])))).to.equal('auditor_token_invalid');
    expect(codeOf(() => auditorDecider.decide(use(new Date(expiresAt)), state([created])))).to.equal('auditor_token_expired');
    spec
      .given([created])
      .when(use(new Date(expiresAt)))
      .thenThrows('unauthenticated', 'Invalid or expired token');
  });

  it('is revoked once: revoking again records nothing, and an unknown auditor is not found', () => {
    spec.given([created]).when({ type: 'RevokeAuditor' }).then([revoked]);
    spec.given([created, revoked]).when({ type: 'RevokeAuditor' }).thenNothingHappens();
    spec.given([]).when({ type: 'RevokeAuditor' }).thenThrows('not_found', 'Auditor not found');
  });

  it('keeps its state through a snapshot (long streams of uses load from one)', () => {
    const codec = auditorDecider.snapshot;
    if (!codec) throw new Error('the auditor decider keeps snapshots');
    const state = [created, { type: 'AuditorUsed', data: { auditorId, route: '/r', at: expiresAt } } as AuditorEvent].reduce(
      auditorDecider.evolve,
      auditorDecider.initialState(),
    );
    expect(codec.decode(JSON.parse(JSON.stringify(codec.encode(state))))).to.deep.equal(state);
  });
});
