import type supertest from 'supertest';
import type { PartnerCredentials } from './app';
import { uniqueEmail } from './app';

export const COMPLETE_PROFILE = {
  firstName: 'Ada',
  lastName: 'Lovelace',
  dateOfBirth: '1990-12-10',
  nationality: 'CO',
  gender: 'female',
  governmentIdType: 'passport',
  governmentIdNumber: 'AB123456',
  governmentIdCountry: 'CO',
  addressLine1: 'Calle 1 # 2-3',
  city: 'Bogotá',
  stateProvince: 'Cundinamarca',
  postalCode: '110111',
  addressCountry: 'CO',
  occupation: 'Engineer',
  annualSalary: '85000.50',
  accountPurpose: 'savings',
  expectedMonthlyVolume: 2500,
};

export async function registerUser(http: supertest.Agent, partner: PartnerCredentials, email = uniqueEmail()): Promise<{ id: string; email: string }> {
  const res = await http.post('/api/v1/partner/users').set(partner.headers).send({ email, countryCode: 'CO' });
  if (res.status !== 201) throw new Error(`register failed ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.data.user.id, email };
}

/** Registered, profiled, with a verification started (its inquiry awaits the sandbox's decision): kyc_required. */
export async function kycStartedUser(
  http: supertest.Agent,
  partner: PartnerCredentials,
  email = uniqueEmail(),
): Promise<{ id: string; email: string; inquiryId: string }> {
  const user = await registerUser(http, partner, email);
  const profile = await http
    .post('/api/v1/user/profile')
    .set(partner.headers)
    .send({ userId: user.id, ...COMPLETE_PROFILE });
  if (profile.status !== 201) throw new Error(`profile failed ${profile.status} ${JSON.stringify(profile.body)}`);
  const kyc = await http.post('/api/v1/partner/kyc').set(partner.headers).send({ userId: user.id });
  if (kyc.status !== 200) throw new Error(`kyc failed ${kyc.status} ${JSON.stringify(kyc.body)}`);
  return { ...user, inquiryId: kyc.body.inquiryId };
}

/** Registered, profiled, KYC approved through the sandbox provider's signed webhook: active. */
export async function activeUser(
  http: supertest.Agent,
  partner: PartnerCredentials,
  email = uniqueEmail(),
): Promise<{ id: string; email: string; inquiryId: string }> {
  const user = await kycStartedUser(http, partner, email);
  const done = await http.post(`/sandbox/v1/kyc/${user.inquiryId}/complete`).set(partner.headers).send({ outcome: 'approved' });
  if (done.status !== 202) throw new Error(`complete failed ${done.status} ${JSON.stringify(done.body)}`);
  return user;
}

export async function latestCode(http: supertest.Agent, partner: PartnerCredentials, email: string): Promise<string> {
  const res = await http.get(`/sandbox/v1/emails?to=${encodeURIComponent(email)}`).set(partner.headers);
  if (res.status !== 200 || !res.body.data[0]?.code) throw new Error(`no code for ${email}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data[0].code;
}

/** Logs an active user in through send + verify; returns the verify body. */
export async function login(http: supertest.Agent, partner: PartnerCredentials, email: string) {
  const sent = await http.post('/api/v1/partner/auth/send').set(partner.headers).send({ email });
  if (sent.status !== 200) throw new Error(`send failed ${sent.status}`);
  const code = await latestCode(http, partner, email);
  const res = await http.post('/api/v1/partner/auth/verify').set(partner.headers).send({ email, code });
  if (res.status !== 200) throw new Error(`verify failed ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { accessToken: string; refreshToken: string; user: { id: string } };
}
