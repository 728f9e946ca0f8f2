import { expect } from 'chai';
import { ADMIN_TOKEN, createPartner, lastWritten, type PartnerCredentials, startTestApp } from '../support/app';
import { customer, type Customer } from '../support/ledger';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

/** POST /admin/v1/auditors and DELETE /admin/v1/auditors/{id}: the auditor credential (docs/decisions.md, "Auditors"). */
describe('auditor tokens (operator API)', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let acme: PartnerCredentials;
  let ada: Customer;

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http);
    ada = await customer(app.http, acme);
  });
  after(() => app.close());

  const create = (body: object) => app.http.post('/admin/v1/auditors').set(admin).send(body);

  it('makes a token shown once, stores only its hash, and records the auditor in its own stream', async () => {
    const expiresAt = inDays(30);
    const res = await create({ name: '  Ledger & Co. ', expiresAt });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.success).to.equal(true);
    const { id, token } = res.body.data;
    expect(res.body.data).to.deep.equal({ id, name: 'Ledger & Co.', token, expiresAt });
    expect(token).to.match(new RegExp(`^ta_${id.replaceAll('-', '')}_[0-9a-f]{64}$`));
    const events = await app.tally.store.readStream(`auditor-${id}`);
    expect(events.map((e) => e.type)).to.deep.equal(['AuditorCreated']);
    expect(JSON.stringify(events)).not.to.contain(token);
    expect(events[0]?.data).to.include({ auditorId: id, name: 'Ledger & Co.', expiresAt });
    expect(events[0]?.data.tokenHash).to.match(/^[0-9a-f]{64}$/);
  });

  it('takes an expiry in the future and at most 1 year ahead (400 with a code), and a date alone', async () => {
    const past = await create({ name: 'Late', expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.status).to.equal(400);
    expect(past.body).to.include({ success: false, error: 'expiresAt must be in the future', code: 'auditor_expiry_not_in_future', param: 'expiresAt' });
    const far = await create({ name: 'Far', expiresAt: inDays(367) });
    expect(far.status).to.equal(400);
    expect(far.body).to.include({ error: 'expiresAt must be at most 1 year ahead', code: 'auditor_expiry_too_far', param: 'expiresAt' });
    const garbled = await create({ name: 'Garbled', expiresAt: 'tomorrow' });
    expect(garbled.status).to.equal(400);
    expect(garbled.body).to.include({ error: 'expiresAt must be an ISO 8601 date', code: 'validation_error' });
    const blank = await create({ name: '   ', expiresAt: inDays(1) });
    expect(blank.status).to.equal(400);
    expect(blank.body.code).to.equal('validation_error');
    const tomorrow = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const dateAlone = await create({ name: 'By date', expiresAt: tomorrow });
    expect(dateAlone.status, dateAlone.text).to.equal(201);
    expect(dateAlone.body.data.expiresAt).to.equal(`${tomorrow}T00:00:00.000Z`);
  });

  it('revokes at once (204, twice alike); an unknown or malformed id is 404 `Auditor not found`', async () => {
    const { id, token } = (await create({ name: 'Revoked', expiresAt: inDays(10) })).body.data;
    expect(await app.tally.auditors.authenticate(token, '/audit/v1/events', 'r1')).to.deep.equal({ auditorId: id });
    expect((await app.http.delete(`/admin/v1/auditors/${id}`).set(admin)).status).to.equal(204);
    expect(await app.tally.auditors.authenticate(token, '/audit/v1/events', 'r2')).to.equal('auditor_token_invalid');
    expect((await app.http.delete(`/admin/v1/auditors/${id}`).set(admin)).status).to.equal(204);
    const events = await app.tally.store.readStream(`auditor-${id}`);
    expect(events.map((e) => e.type)).to.deep.equal(['AuditorCreated', 'AuditorUsed', 'AuditorRevoked']);
    for (const unknown of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await app.http.delete(`/admin/v1/auditors/${unknown}`).set(admin);
      expect(res.status).to.equal(404);
      expect(res.body).to.include({ error: 'Auditor not found', code: 'auditor_not_found' });
    }
  });

  it('refuses a token that is malformed, altered or of an unknown auditor, and one past its expiry', async () => {
    const { id, token } = (await create({ name: 'Soon', expiresAt: new Date(Date.now() + 1_500).toISOString() })).body.data;
    const altered = `${token.slice(0, -1)}${token.endsWith('0') ? '1' : '0'}`;
    const stranger = `ta_${'0'.repeat(32)}_${'0'.repeat(64)}`;
    for (const bad of ['ta_', 'ta_nonsense', altered, stranger])
      expect(await app.tally.auditors.authenticate(bad, '/r', 'r')).to.equal('auditor_token_invalid');
    expect(await app.tally.auditors.authenticate(token, '/r', 'r')).to.deep.equal({ auditorId: id });
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    expect(await app.tally.auditors.authenticate(token, '/r', 'r')).to.equal('auditor_token_expired');
    // Refused uses are not recorded: only the one accepted.
    expect((await app.tally.store.readStream(`auditor-${id}`)).map((e) => e.type)).to.deep.equal(['AuditorCreated', 'AuditorUsed']);
  });

  it('opens no other route: a bearer, partner or operator route answers an auditor token 401, and writes nothing', async () => {
    const { token } = (await create({ name: 'Elsewhere', expiresAt: inDays(10) })).body.data;
    const auditor = { Authorization: `Bearer ${token}` };
    const before = await lastWritten(app);
    const bearerRoute = await app.http.get('/api/v1/user/accounts').set(auditor);
    expect(bearerRoute.status).to.equal(401);
    expect(bearerRoute.body).to.include({ error: 'Invalid or expired token', code: 'token_invalid' });
    expect(bearerRoute.headers['www-authenticate']).to.equal('Bearer error="invalid_token"');
    const partnerRoute = await app.http.get('/api/v1/partner/users').set(auditor);
    expect(partnerRoute.status).to.equal(401);
    const operatorRoute = await app.http.get('/admin/v1/projections').set(auditor);
    expect(operatorRoute.status).to.equal(401);
    expect(operatorRoute.body.code).to.equal('invalid_admin_token');
    expect(await lastWritten(app)).to.equal(before);
    // The user's own token still works on the same route.
    expect((await app.http.get('/api/v1/user/accounts').set(ada.bearer)).status).to.equal(200);
  });
});
