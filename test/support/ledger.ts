import { randomUUID } from 'node:crypto';
import type supertest from 'supertest';
import { createPartner, type PartnerCredentials, startTestApp } from './app';
import { activeUser, login } from './identity';

export interface Customer {
  id: string;
  email: string;
  token: string;
  bearer: { Authorization: string };
  accountId: number;
}

/** An active, logged-in user with the USDC account opened at first login. */
export async function customer(http: supertest.Agent, partner: PartnerCredentials): Promise<Customer> {
  const user = await activeUser(http, partner);
  const { accessToken } = await login(http, partner, user.email);
  const bearer = { Authorization: `Bearer ${accessToken}` };
  const accounts = await http.get('/api/v1/user/accounts').set(bearer);
  if (accounts.status !== 200) throw new Error(`accounts failed ${accounts.status}`);
  return { id: user.id, email: user.email, token: accessToken, bearer, accountId: accounts.body.items[0].id };
}

export const PAYER = { payer: { documentType: 'CC', documentNumber: '1020304050' } };

/** Creates a deposit and has the mock provider confirm it; returns the transaction uuid. */
export async function fund(http: supertest.Agent, partner: PartnerCredentials, who: Customer, amount: number | string): Promise<string> {
  const created = await http
    .post('/api/v1/transactions/deposit')
    .set(who.bearer)
    .send({ toAccountId: who.accountId, amount, currency: 'USDC', provider: 'mock', description: 'top up', metadata: PAYER });
  if (created.status !== 201) throw new Error(`deposit failed ${created.status} ${JSON.stringify(created.body)}`);
  const confirmed = await http.post(`/sandbox/v1/deposits/${created.body.transactionId}/confirm`).set(partner.headers).send();
  if (confirmed.status !== 202) throw new Error(`confirm failed ${confirmed.status} ${JSON.stringify(confirmed.body)}`);
  return created.body.transactionId;
}

export async function balanceOf(http: supertest.Agent, who: Customer): Promise<{ credits: string; debits: string }> {
  const res = await http.get('/api/v1/user/accounts').set(who.bearer);
  return { credits: res.body.items[0].credits, debits: res.body.items[0].debits };
}

export const PAYOUT_DESTINATION = {
  accountNumber: '000123456789',
  accountType: 'H',
  bankName: 'Banco de Prueba',
  bankNumber: '007',
  ownerName: 'Ada Lovelace',
  ownerDocumentType: 'CC',
  ownerDocumentNumber: '1020304050',
};

/** A payout request's body: 40,000 COP (10 USDC at the sandbox's rate) by the mock provider to PAYOUT_DESTINATION, a fresh transactionId; `overrides` replace fields. */
export const payoutRequest = (overrides: Record<string, unknown> = {}) => ({
  transactionId: randomUUID(),
  amount: 40000,
  asset: 'COP',
  provider: 'mock',
  source: { metadata: { fundingId: 'f1' } },
  destination: PAYOUT_DESTINATION,
  ...overrides,
});

/** The app with a partner and two of its active, logged-in users: Ada, funded with 100 USDC, and Bob. */
export async function startWithCustomers(
  overrides: Parameters<typeof startTestApp>[0] = {},
): Promise<{ app: Awaited<ReturnType<typeof startTestApp>>; acme: PartnerCredentials; ada: Customer; bob: Customer }> {
  const app = await startTestApp(overrides);
  const acme = await createPartner(app.http);
  const ada = await customer(app.http, acme);
  const bob = await customer(app.http, acme);
  await fund(app.http, acme, ada, '100');
  return { app, acme, ada, bob };
}
