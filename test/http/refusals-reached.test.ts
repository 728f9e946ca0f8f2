import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { signPayload } from '../../src/providers/signature';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { registerUser } from '../support/identity';
import { customer } from '../support/ledger';

/**
 * Refusals the reference documents that no other test answered over HTTP: each is reached here the
 * way a partner or operator would meet it, with its message and code.
 */
describe('documented refusals, each reached over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http, 'Reached');
  });
  after(() => app?.close());

  it('a date of birth in the future: 400 date_of_birth_in_future', async () => {
    const user = await registerUser(app.http, acme);
    const res = await app.http.post('/api/v1/user/profile').set(acme.headers).send({ userId: user.id, dateOfBirth: '2999-01-01' });
    expect([res.status, res.body.error, res.body.code, res.body.param]).to.deep.equal([
      400,
      'dateOfBirth must be in the past',
      'date_of_birth_in_future',
      'dateOfBirth',
    ]);
  });

  it('a partner name of spaces: 400 partner_name_empty', async () => {
    const res = await app.http.post('/admin/v1/partners').set(admin).send({ name: '   ' });
    expect([res.status, res.body.error, res.body.code]).to.deep.equal([400, 'name must not be empty', 'partner_name_empty']);
  });

  it('a key pair past the most a partner may hold: 409 api_key_limit_reached', async () => {
    const partner = await createPartner(app.http, 'Many keys');
    let last: { status: number; body: { error?: string; code?: string } } = { status: 0, body: {} };
    for (let i = 0; i < 12 && last.status !== 409; i++) last = await app.http.post(`/admin/v1/partners/${partner.id}/keys`).set(admin).send();
    expect([last.status, last.body.code]).to.deep.equal([409, 'api_key_limit_reached']);
    expect(last.body.error).to.match(/^A partner may hold at most \d+ active keys; revoke one first$/);
  });

  it('suspending a banned user: 409 user_banned (banning again is the same ban, 200)', async () => {
    const user = await registerUser(app.http, acme);
    expect((await app.http.post(`/admin/v1/users/${user.id}/ban`).set(admin).send({ reason: 'fraud' })).status).to.equal(200);
    expect((await app.http.post(`/admin/v1/users/${user.id}/ban`).set(admin).send({ reason: 'again' })).status).to.equal(200);
    const res = await app.http.post(`/admin/v1/users/${user.id}/suspend`).set(admin).send({ reason: 'again' });
    expect([res.status, res.body.error, res.body.code]).to.deep.equal([409, 'User is banned', 'user_banned']);
  });

  it('issuing a card while the application is pending: 409 card_application_not_approved', async () => {
    const ada = await customer(app.http, acme);
    const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
    expect(applied.status).to.equal(201);
    const res = await app.http.post('/api/v1/cards').set(ada.bearer).send({});
    expect([res.status, res.body.error, res.body.code]).to.deep.equal([409, 'Card application is pending', 'card_application_not_approved']);
  });

  it('a signed identity callback about an inquiry the service never made: 404 unknown_inquiry', async () => {
    const inquiryId = `inq_sandbox_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const body = JSON.stringify({
      id: `evt_${randomUUID()}`,
      type: 'inquiry.approved',
      createdAt: new Date().toISOString(),
      data: { inquiryId, status: 'approved' },
    });
    const secret = app.tally.keys.webhooks['identity/sandbox'] ?? '';
    const res = await app.http
      .post('/webhooks/identity/sandbox')
      .set('Content-Type', 'application/json')
      .set('X-Signature', signPayload(secret, Buffer.from(body), Math.floor(Date.now() / 1000)))
      .send(body);
    expect([res.status, res.body.error, res.body.code]).to.deep.equal([404, `Unknown inquiry ${inquiryId}`, 'unknown_inquiry']);
  });
});
