import { expect } from 'chai';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';

/**
 * The error envelope every answer other than success carries: the exact message, a stable `code`,
 * the answer's `requestId`, and `param` where one field was refused; a known path asked with a method
 * it does not serve is 405 with `Allow`.
 */
describe('HTTP: the error envelope (code, requestId, param) and 405', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  before(async () => {
    app = await startTestApp();
    partner = await createPartner(app.http, 'Envelope');
  });
  after(async () => {
    await app.close();
  });

  it('says the request id of the answer in the body, the one the client sent or the one made for it', async () => {
    const sent = await app.http.get('/api/v1/partner/users/not-a-user').set(partner.headers).set('X-Request-Id', 'trace-42');
    expect(sent.status).to.equal(404);
    expect(sent.body).to.include({ success: false, error: 'User not found', requestId: 'trace-42' });
    expect(sent.body.code)
      .to.be.a('string')
      .and.match(/^[a-z][a-z0-9_]*$/);
    const made = await app.http.get('/api/v1/partner/users/not-a-user').set(partner.headers);
    expect(made.body.requestId).to.equal(made.headers['x-request-id']);
  });

  it('names the refused field in param, with code validation_error', async () => {
    const res = await app.http.post('/api/v1/partner/users').set(partner.headers).send({ email: 'ada@example.com', countryCode: 'COL' });
    expect(res.status).to.equal(400);
    expect(res.body).to.include({ code: 'validation_error', param: 'countryCode', error: 'countryCode must be exactly 2 characters' });
  });

  it('gives the platform’s own refusals their codes: bad JSON, unknown route, partner credentials, operator token', async () => {
    const badJson = await app.http.post('/api/v1/partner/users').set(partner.headers).set('Content-Type', 'application/json').send('{"email":');
    expect(badJson.body).to.include({ error: 'Invalid JSON body', code: 'invalid_json' });
    const unknown = await app.http.get('/api/v1/no-such-thing');
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.include({ error: 'Not found', code: 'not_found' });
    const credentials = await app.http.get('/api/v1/partner/users').set({ 'X-Api-Key': partner.apiKey, 'X-Api-Secret': 'wrong' });
    expect(credentials.status).to.equal(401);
    expect(credentials.body).to.include({ error: 'Invalid partner credentials', code: 'invalid_partner_credentials' });
    const operator = await app.http.get('/metrics').set('Authorization', 'Bearer wrong');
    expect(operator.status).to.equal(401);
    expect(operator.body).to.include({ error: 'Invalid admin token', code: 'invalid_admin_token' });
  });

  it('answers a known path asked with another method 405 Method not allowed, with Allow; an unknown path stays 404', async () => {
    const res = await app.http.delete('/api/v1/partner/users').set(partner.headers);
    expect(res.status).to.equal(405);
    expect(res.body).to.include({ success: false, error: 'Method not allowed', code: 'method_not_allowed' });
    expect(res.headers.allow).to.equal('GET, HEAD, POST');
    const withId = await app.http.put('/api/v1/partner/users/0b9d8c4e-3f1a-4c2b-9d7e-6a5f4e3d2c1b/');
    expect(withId.status).to.equal(405);
    expect(withId.headers.allow).to.equal('GET, HEAD');
    expect((await app.http.delete('/api/v1/partner/nothing-here')).status).to.equal(404);
  });
});
