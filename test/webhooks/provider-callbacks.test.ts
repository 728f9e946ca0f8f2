import { expect } from 'chai';
import { signPayload } from '../../src/providers/signature';
import { startTestApp } from '../support/app';

describe('provider callbacks: the codes of their refusals', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;

  before(async () => {
    app = await startTestApp();
  });
  after(() => app?.close());

  const callback = (body: string, signature?: string) => {
    const req = app.http.post('/webhooks/identity/sandbox').set('Content-Type', 'application/json');
    if (signature) req.set('X-Signature', signature);
    return req.send(body);
  };

  it('answers 401 invalid_webhook_signature to an unsigned callback', async () => {
    const res = await callback(JSON.stringify({ id: 'evt_1', type: 'inquiry.approved' }));
    expect(res.status).to.equal(401);
    expect(res.body).to.include({ success: false, error: 'Invalid webhook signature', code: 'invalid_webhook_signature' });
  });

  it('answers 400 invalid_webhook_payload to a well-signed callback its adapter cannot read', async () => {
    const body = JSON.stringify({ unexpected: true });
    const secret = app.tally.keys.webhooks['identity/sandbox'] ?? '';
    const res = await callback(body, signPayload(secret, Buffer.from(body), Math.floor(Date.now() / 1000)));
    expect(res.status).to.equal(400);
    expect(res.body).to.include({ success: false, error: 'Invalid webhook payload', code: 'invalid_webhook_payload' });
  });
});
