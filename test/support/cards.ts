import type supertest from 'supertest';
import type { PartnerCredentials } from './app';

/**
 * A card for a logged-in user: applied for, approved by the sandbox issuer, issued. Returns the
 * card as POST cards answered it. Throws, with the answer, at the first step that is refused.
 */
export async function issuedCard(
  http: supertest.Agent,
  partner: PartnerCredentials,
  bearer: { Authorization: string },
  headers: Record<string, string> = {},
): Promise<{ id: string }> {
  const applied = await http.post('/api/v1/cards/application').set(bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
  if (applied.status !== 201) throw new Error(`card application failed ${applied.status} ${applied.text}`);
  const approved = await http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
  if (approved.status !== 202) throw new Error(`card approval failed ${approved.status} ${approved.text}`);
  const issued = await http.post('/api/v1/cards').set(bearer).set(headers).send({});
  if (issued.status !== 201) throw new Error(`card issue failed ${issued.status} ${issued.text}`);
  return issued.body.data;
}
