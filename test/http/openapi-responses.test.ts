import { randomUUID } from 'node:crypto';
import type Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv/dist/2020';
import { expect } from 'chai';
import type supertest from 'supertest';
import { signPayload } from '../../src/providers/signature';
import { ADMIN_TOKEN, type PartnerCredentials, startTestApp, uniqueEmail } from '../support/app';
import { COMPLETE_PROFILE, latestCode } from '../support/identity';
import { openApiAjv, strict } from '../support/openapi';
import { type Customer, customer, PAYER, PAYOUT_DESTINATION } from '../support/ledger';

type Schema = Record<string, unknown>;
type MediaType = { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown; 'x-message'?: string }> };
type Operation = { responses: Record<string, { content?: Record<string, MediaType> }> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas?: Record<string, Schema> } };

/**
 * Documented operations that the flow below cannot answer with a 2xx, and why. Every other
 * operation of the document must be sampled: a route added to the document without a sample here fails.
 */
const UNSAMPLED: Record<string, string> = {
  'POST /api/v1/auth/profile': 'a bearer token needs an active user, and KYC (hence activity) needs a profile: 201 is unreachable, its 409 is sampled',
  'POST /webhooks/identity/persona': 'the persona provider is not configured in tests (404, sampled)',
  'POST /webhooks/payments/mock': 'the mock payment provider signs and delivers these itself (the sandbox confirm/fail routes drive them)',
  'POST /webhooks/payouts/mock': 'the mock payout provider signs and delivers these itself (the sandbox settle/fail routes drive them)',
  'POST /sandbox/v1/webhook-inbox': "the service's own dispatcher posts these, signed (test/webhooks/inbox.test.ts); an unsigned post is sampled (401)",
  'POST /webhooks/cards/sandbox': 'the sandbox card issuer signs and delivers these itself (its application decisions drive them)',
  'POST /webhooks/cards/rain': 'the rain card issuer is not configured in tests (404, sampled; test/http/cards-rain-issuer.test.ts drives it)',
};

/**
 * An error answer's message when no example of its status documents it. Validation messages name
 * the field that failed (free text, decided per field), so only the others must each be listed.
 */
function unlistedMessage(media: MediaType, res: supertest.Response): string | undefined {
  const body = res.body as { error?: unknown; code?: unknown };
  if (res.status < 400 || typeof body?.error !== 'string' || body.code === 'validation_error') return undefined;
  const templates = Object.values(media.examples ?? {}).map((e) => e['x-message'] ?? '');
  if (media.example && typeof (media.example as { error?: unknown }).error === 'string') templates.push((media.example as { error: string }).error);
  const pattern = (t: string) => new RegExp(`^${t.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&').replace(/<[^>]+>/g, '.+')}$`, 's');
  return templates.some((t) => pattern(t).test(body.error as string)) ? undefined : body.error;
}

const twoXx = (status: string) => /^2\d\d$/.test(status);
const opKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

describe('OpenAPI: real answers match their documented response schemas', function () {
  this.timeout(120_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let doc: Document;
  let ajv: Ajv2020;
  const validators = new Map<string, ValidateFunction>();
  /** `METHOD path` -> statuses validated. */
  const sampled = new Map<string, Set<number>>();
  const failures: string[] = [];

  const templates = () =>
    Object.keys(doc.paths)
      .map((path) => ({ path, re: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`), literal: !path.includes('{') }))
      .sort((a, b) => Number(b.literal) - Number(a.literal));

  /** Validates one real answer against the schema documented for its route and status. */
  function check(res: supertest.Response): supertest.Response {
    const req = (res as unknown as { req: { method: string; path: string } }).req;
    const path = req.path.split('?')[0] ?? '';
    const template = templates().find((t) => t.re.test(path) && doc.paths[t.path]?.[req.method.toLowerCase()]);
    const where = `${req.method} ${path} -> ${res.status}`;
    if (!template) {
      failures.push(`${where}: no documented operation`);
      return res;
    }
    const key = opKey(req.method, template.path);
    const documented = doc.paths[template.path]?.[req.method.toLowerCase()]?.responses[String(res.status)];
    if (!documented) {
      failures.push(`${key}: status ${res.status} is not documented`);
      return res;
    }
    const content = documented.content;
    if (!content) {
      if (res.text) failures.push(`${key} ${res.status}: documented without content, answered ${res.text.slice(0, 80)}`);
    } else {
      const received = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
      const media = Object.keys(content);
      if (!media.includes(received)) failures.push(`${key} ${res.status}: answered ${received}, documented ${media.join(', ')}`);
      const schema = content[received]?.schema;
      if (schema) {
        const id = `${key} ${res.status} ${received}`;
        let validate = validators.get(id);
        if (!validate) {
          try {
            validate = ajv.compile({ ...(strict(schema) as Schema), components: strict(doc.components) });
          } catch (error) {
            failures.push(`${key} ${res.status}: the documented schema does not compile: ${(error as Error).message}`);
            return res;
          }
          validators.set(id, validate);
        }
        const body = received === 'application/json' ? res.body : res.text;
        if (!validate(body)) failures.push(`${key} ${res.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`);
        const message = unlistedMessage(content[received] as MediaType, res);
        if (message) failures.push(`${key} ${res.status}: answered "${message}", not among the documented examples`);
      }
    }
    const seen = sampled.get(key) ?? new Set<number>();
    seen.add(res.status);
    sampled.set(key, seen);
    return res;
  }

  before(async () => {
    app = await startTestApp();
    doc = (await app.http.get('/api/v1/openapi.json')).body as Document;
    ajv = openApiAjv();
  });
  after(async () => app?.close());

  it('documents a schema for every success answer of every operation', () => {
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops))
        for (const [status, res] of Object.entries(op.responses)) {
          if (!twoXx(status) || status === '204') continue;
          const schemas = Object.values(res.content ?? {}).filter((c) => c.schema);
          if (schemas.length === 0) missing.push(`${opKey(method, path)} ${status}`);
        }
    expect(missing, 'operations whose 2xx has no schema').to.deep.equal([]);
  });

  it('names the shared schemas in components.schemas and answers every error status with the Error schema', () => {
    expect(Object.keys(doc.components.schemas ?? {})).to.include.members([
      'Error',
      'User',
      'UserSummary',
      'PageMeta',
      'Profile',
      'KycStatus',
      'Account',
      'Transaction',
      'Quote',
    ]);
    const wrong: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops))
        for (const [status, res] of Object.entries(op.responses)) {
          if (twoXx(status)) continue;
          const schema = res.content?.['application/json']?.schema;
          const ok = schema?.$ref === '#/components/schemas/Error' || (path === '/readyz' && status === '503' && schema);
          if (!ok) wrong.push(`${opKey(method, path)} ${status}: ${JSON.stringify(schema)}`);
        }
    expect(wrong).to.deep.equal([]);
  });

  it('validates the answers of a full partner, user and operator flow', async () => {
    const http = app.http;
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

    // Operations and the document itself.
    check(await http.get('/api/v1/openapi.json'));
    check(await http.get('/healthz'));
    check(await http.get('/readyz'));
    check(await http.get('/metrics').set(admin));
    check(await http.get('/docs'));
    check(await http.get('/docs/reference.js'));

    // Operator: partners and keys.
    const created = check(await http.post('/admin/v1/partners').set(admin).send({ name: 'Docs' }));
    const partner: PartnerCredentials = { ...created.body, headers: { 'X-Api-Key': created.body.apiKey, 'X-Api-Secret': created.body.apiSecret } };
    const key = check(await http.post(`/admin/v1/partners/${partner.id}/keys`).set(admin).send());
    check(await http.delete(`/admin/v1/partners/${partner.id}/keys/${key.body.apiKey}`).set(admin));
    check(await http.post('/admin/v1/partners').send({ name: 'No token' }));
    const p = partner.headers;
    check(await http.get('/api/v1/partner/webhooks').set(p));
    check(
      await http
        .put('/api/v1/partner/webhooks')
        .set(p)
        .send({ url: 'http://127.0.0.1:9/hooks', events: ['deposit.completed'] }),
    );
    check(await http.get('/sandbox/v1/webhook-inbox').set(p));
    check(await http.post('/sandbox/v1/webhook-inbox').send({}));

    // Users.
    const email = uniqueEmail('docs');
    const registered = check(await http.post('/api/v1/partner/users').set(p).send({ email, countryCode: 'CO', phoneNumber: '+573001234567' }));
    const userId = registered.body.data.user.id as string;
    check(await http.post('/api/v1/partner/users').set(p).send({ email, countryCode: 'CO' }));
    check(await http.post('/api/v1/partner/users').set(p).send({ countryCode: 'CO' }));
    check(await http.get('/api/v1/partner/users?limit=5').set(p));
    check(await http.get(`/api/v1/partner/users/${userId}`).set(p));
    check(await http.get(`/api/v1/partner/users/${randomUUID()}`).set(p));
    check(await http.get('/api/v1/partner/users'));

    // Profile and KYC.
    check(await http.get(`/api/v1/user/profile/check-completion?userId=${userId}`).set(p));
    check(await http.post('/api/v1/user/profile').set(p).send({ userId, firstName: 'Ada' }));
    check(await http.get(`/api/v1/user/profile?userId=${userId}`).set(p));
    check(
      await http
        .patch('/api/v1/user/profile')
        .set(p)
        .send({ userId, ...COMPLETE_PROFILE }),
    );
    check(await http.get(`/api/v1/user/profile/check-completion?userId=${userId}`).set(p));
    check(await http.get(`/api/v1/user/kyc/status?userId=${userId}`).set(p));
    check(await http.get(`/api/v1/auth/kyc/simple-status?userId=${userId}`).set(p));
    const kyc = check(await http.post('/api/v1/partner/kyc').set(p).send({ userId, birthDate: '1990-12-10' }));
    check(await http.post('/api/v1/partner/kyc').set(p).send({ userId }));
    const inquiryId = kyc.body.inquiryId as string;
    check(await http.get(new URL(kyc.body.verificationUrl).pathname));
    check(await http.post('/api/v1/auth/kyc/verify').set(p).send({ userId }));
    check(await http.post(`/sandbox/identity/inquiries/${inquiryId}/decision`).type('form').send({ outcome: 'approved' }));
    check(await http.get(`/api/v1/user/kyc/status?userId=${userId}`).set(p));
    check(await http.get(`/api/v1/auth/kyc/simple-status?userId=${userId}`).set(p));
    check(await http.post('/api/v1/partner/kyc').set(p).send({ userId }));

    // A second user approved through the partner's sandbox route.
    const other = check(
      await http
        .post('/api/v1/partner/users')
        .set(p)
        .send({ email: uniqueEmail('docs'), countryCode: 'CO' }),
    );
    const otherId = other.body.data.user.id as string;
    check(
      await http
        .post('/api/v1/user/profile')
        .set(p)
        .send({ userId: otherId, ...COMPLETE_PROFILE }),
    );
    const otherKyc = check(await http.post('/api/v1/partner/kyc').set(p).send({ userId: otherId }));
    check(await http.post(`/sandbox/v1/kyc/${otherKyc.body.inquiryId}/complete`).set(p).send({ outcome: 'approved' }));

    // A redelivered, signed identity callback: received, applied once.
    const callback = JSON.stringify({
      id: `evt_docs_${randomUUID()}`,
      type: 'inquiry.approved',
      createdAt: new Date().toISOString(),
      data: { inquiryId, referenceId: userId, status: 'approved', snapshot: null },
    });
    const secret = app.tally.keys.webhooks['identity/sandbox'] ?? '';
    check(
      await http.post('/webhooks/identity/sandbox').set('Content-Type', 'application/json').set('X-Signature', signPayload(secret, callback)).send(callback),
    );
    check(await http.post('/webhooks/identity/sandbox').set('Content-Type', 'application/json').send(callback));
    check(await http.post('/webhooks/identity/persona').set('Content-Type', 'application/json').send(callback));
    check(await http.post('/webhooks/cards/rain').set('Content-Type', 'application/json').send(callback));

    // Login.
    check(await http.post('/api/v1/partner/auth/send').set(p).send({ email }));
    check(await http.get(`/sandbox/v1/emails?to=${encodeURIComponent(email)}`).set(p));
    check(await http.post('/api/v1/partner/auth/verify').set(p).send({ email, code: '000000' }));
    const verified = check(
      await http
        .post('/api/v1/partner/auth/verify')
        .set(p)
        .send({ email, code: await latestCode(http, partner, email) }),
    );
    const refreshed = check(await http.post('/api/v1/partner/auth/refresh').set(p).send({ refreshToken: verified.body.refreshToken }));
    check(await http.post('/api/v1/partner/auth/login').set(p).send({}));
    const bearer = { Authorization: `Bearer ${refreshed.body.accessToken}` };

    // Profile, KYC reads with the token.
    check(await http.get('/api/v1/auth/profile').set(bearer));
    check(await http.patch('/api/v1/auth/profile').set(bearer).send({ occupation: 'Mathematician' }));
    check(await http.post('/api/v1/auth/profile').set(bearer).send({ firstName: 'Ada' }));
    for (const path of ['/api/v1/auth/kyc/document/me', '/api/v1/user/kyc/document/me', '/api/v1/auth/kyc/history', '/api/v1/user/kyc/history'])
      check(await http.get(path).set(bearer));
    check(await http.get('/api/v1/auth/profile'));

    // Accounts and money.
    const accounts = check(await http.get('/api/v1/user/accounts').set(bearer));
    const accountId = accounts.body.items[0].id as number;
    const me: Customer = { id: userId, email, token: refreshed.body.accessToken, bearer, accountId };
    check(await http.post('/api/v1/user/accounts').set(bearer).send({}));
    const deposit = (amount: number) =>
      http
        .post('/api/v1/transactions/deposit')
        .set(bearer)
        .set('Idempotency-Key', randomUUID())
        .send({ toAccountId: accountId, amount, currency: 'USDC', provider: 'mock', description: 'top up', metadata: PAYER });
    const first = check(await deposit(100));
    const paymentPath = new URL(first.body.paymentLink, app.url).pathname;
    check(await http.get(paymentPath));
    check(await http.post(`${paymentPath}/decision`).type('form').send({ outcome: 'confirmed' }));
    const second = check(await deposit(50));
    check(await http.post(`/sandbox/v1/deposits/${second.body.transactionId}/confirm`).set(p).send());
    const third = check(await deposit(5));
    check(await http.post(`/sandbox/v1/deposits/${third.body.transactionId}/fail`).set(p).send());
    check(await http.post(`/sandbox/v1/deposits/${third.body.transactionId}/confirm`).set(p).send());
    check(await http.post('/api/v1/transactions/deposit').set(bearer).send({ toAccountId: accountId, amount: 1, currency: 'USDC', provider: 'mock' }));

    const payee = await customer(http, partner);
    check(await http.post('/api/v1/transactions/transfer').set(bearer).send({ toAccountId: payee.accountId, amount: 10.5, description: 'rent' }));
    check(await http.post('/api/v1/transactions/transfer').set(bearer).send({ toAccountId: payee.accountId, amount: 1_000_000, description: 'too much' }));
    check(
      await http
        .post('/api/v1/transactions/transfer')
        .set(bearer)
        .send({ fromAccountId: payee.accountId, toAccountId: accountId, amount: 1, description: 'not mine' }),
    );

    const payout = (amount: number) =>
      http
        .post('/api/v1/user/payout')
        .set(bearer)
        .send({ transactionId: randomUUID(), amount, asset: 'USDC', provider: 'mock', source: { metadata: {} }, destination: PAYOUT_DESTINATION });
    const settled = check(await payout(20));
    check(await http.post(`/sandbox/v1/payouts/${settled.body.paymentId}/settle`).set(p).send({}));
    const failed = check(await payout(3));
    check(await http.post(`/sandbox/v1/payouts/${failed.body.paymentId}/fail`).set(p).send({ reason: 'closed account' }));

    check(await http.get('/api/v1/user/balance').set(bearer));
    check(await http.get(`/api/v1/user/balance?at=${encodeURIComponent(new Date().toISOString())}&limit=1`).set(bearer));
    const list = check(await http.get(`/api/v1/transactions?accountId=${accountId}&limit=50`).set(bearer));
    expect(list.body.length).to.be.at.least(5);
    check(await http.get(`/api/v1/transactions?accountId=${me.accountId}&from=2020-01-01&to=9999-12-31`).set(bearer));
    check(await http.get(`/api/v1/transactions?accountId=${payee.accountId}`).set(bearer));
    check(await http.get('/api/v1/transactions').set(bearer));
    for (const t of list.body as Array<{ uuid: string }>) check(await http.get(`/api/v1/transactions/${t.uuid}`).set(bearer));
    check(await http.get(`/api/v1/transactions/${randomUUID()}`).set(bearer));

    // Exchange.
    check(await http.get('/api/v1/exchanges/assets/public'));
    check(await http.post('/api/v1/exchanges/quote/public').send({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: 100 }));
    check(await http.post('/api/v1/exchanges/quote/public').send({ fromAsset: 'USDC', toAsset: 'XXX', fromAmount: 100 }));
    check(await http.post('/api/v1/user/exchange/calculate').set(bearer).send({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: '2.5' }));

    // Cards: application, the issuer's decisions, the card and its changes, the operator's cancel.
    check(await http.get('/api/v1/cards/application/status').set(bearer));
    check(await http.get('/api/v1/cards/application/status'));
    check(await http.get('/api/v1/cards/details').set(bearer));
    const applied = check(await http.post('/api/v1/cards/application').set(bearer).send({ cardType: 'physical', isTermsOfServiceAccepted: true }));
    check(await http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(p).send({}));
    const declined = check(await http.post('/api/v1/cards/application').set(payee.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true }));
    check(await http.post(`/sandbox/v1/cards/applications/${declined.body.data.application.id}/decline`).set(p).send({ reason: 'risk' }));
    const keyed = () => ({ ...bearer, 'x-idempotency-key': randomUUID() });
    const card = check(await http.post('/api/v1/cards').set(keyed()).send({}));
    check(await http.post('/api/v1/cards/activate').set(bearer).send({}));
    check(await http.get('/api/v1/cards/application/status').set(bearer));
    check(await http.get('/api/v1/cards/me?status=active').set(bearer));
    check(await http.get('/api/v1/cards/status').set(bearer));
    check(await http.get('/api/v1/cards/details').set(bearer));
    check(await http.get('/api/v1/cards/details/full?includeSecrets=true').set(bearer));
    check(await http.get('/api/v1/cards/secrets').set(bearer));
    check(await http.put('/api/v1/cards/pin').set(keyed()).send({ pin: '2580' }));
    check(await http.get('/api/v1/cards/pin').set(bearer));
    check(await http.patch('/api/v1/cards/limit').set(keyed()).send({ amount: 250.5, frequency: 'per7DayPeriod' }));
    check(await http.post('/api/v1/cards/lock').set(keyed()).send({}));
    check(await http.post('/api/v1/cards/lock').set(bearer).send({}));
    check(await http.get('/api/v1/cards/secrets').set(bearer));
    check(await http.post('/api/v1/cards/unlock').set(keyed()).send({}));
    // Card spends: an authorization, declined or approved, cleared or reversed; balance and card transactions.
    check(
      await http
        .post(`/sandbox/v1/cards/${card.body.data.id}/authorizations`)
        .set(p)
        .send({ amount: 1e9, currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5411' }),
    );
    const spends = [];
    for (const amount of ['1', '2'])
      spends.push(
        check(
          await http
            .post(`/sandbox/v1/cards/${card.body.data.id}/authorizations`)
            .set(p)
            .send({ amount, currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5411', localAmount: 4100, localCurrency: 'COP' }),
        ),
      );
    check(await http.post(`/sandbox/v1/card-transactions/${spends[0]?.body.data.id}/clear`).set(p).send({ amount: '0.5' }));
    check(await http.post(`/sandbox/v1/card-transactions/${spends[1]?.body.data.id}/reverse`).set(p).send());
    check(await http.post(`/sandbox/v1/card-transactions/${spends[1]?.body.data.id}/reverse`).set(p).send());
    check(await http.get('/api/v1/cards/balance').set(bearer));
    const firstPage = check(await http.get('/api/v1/cards/transactions?limit=1').set(bearer));
    check(await http.get(`/api/v1/cards/transactions?cursor=${firstPage.body.nextCursor}&cardId=${card.body.data.id}`).set(bearer));
    check(await http.post(`/admin/v1/cards/${card.body.data.id}/cancel`).set(admin).send());
    check(await http.post(`/admin/v1/cards/${card.body.data.id}/cancel`).set(admin).send());

    // The user's data export, once the user has a profile, KYC, money moved and a card.
    check(await http.get(`/api/v1/partner/users/${userId}/export`).set(p));
    check(await http.get(`/api/v1/partner/users/${randomUUID()}/export`).set(p));

    // Operator projections and user actions.
    const projections = check(await http.get('/admin/v1/projections').set(admin));
    check(await http.post(`/admin/v1/projections/${projections.body.data[0].name}/rebuild`).set(admin).send());
    check(await http.post('/admin/v1/projections/nope/rebuild').set(admin).send());
    const auditor = check(
      await http
        .post('/admin/v1/auditors')
        .set(admin)
        .send({ name: 'Docs auditors', expiresAt: new Date(Date.now() + 86_400_000).toISOString() }),
    );
    const auditorToken = { Authorization: `Bearer ${auditor.body.data.token}` };
    const checkpoint = check(await http.post('/admin/v1/checkpoints').set(admin));
    check(await http.get('/audit/v1/keys'));
    check(await http.get('/audit/v1/checkpoints?limit=1').set(auditorToken));
    check(await http.get(`/audit/v1/checkpoints/${checkpoint.body.data.id}`).set(auditorToken));
    check(
      await http
        .get(`/audit/v1/checkpoints/${checkpoint.body.data.id}/proof`)
        .query({ stream: `user-${payee.id}` })
        .set(auditorToken),
    );
    check(await http.get(`/audit/v1/checkpoints/${checkpoint.body.data.id}/proof`).query({ stream: 'user-none' }).set(auditorToken));
    check(await http.get(`/audit/v1/streams/account-${accountId}?at=${new Date().toISOString()}`).set(auditorToken));
    check(await http.get('/audit/v1/streams/nope').set(auditorToken));
    check(await http.get(`/audit/v1/accounts/${accountId}/balance`).set(auditorToken));
    check(await http.get('/audit/v1/accounts/999999/balance').set(auditorToken));
    check(await http.get(`/audit/v1/events?from=${new Date(Date.now() - 60_000).toISOString()}`).set(auditorToken));
    check(await http.delete(`/admin/v1/auditors/${auditor.body.data.id}`).set(admin));
    check(await http.get(`/audit/v1/accounts/${accountId}/balance`).set(auditorToken));
    check(await http.post(`/admin/v1/users/${payee.id}/suspend`).set(admin).send({ reason: 'review' }));
    check(await http.post(`/admin/v1/users/${payee.id}/reinstate`).set(admin).send({}));
    check(await http.post(`/admin/v1/users/${payee.id}/reinstate`).set(admin).send({}));
    check(await http.post(`/admin/v1/users/${payee.id}/ban`).set(admin).send({}));

    // Partner notifications: rotation, the delivery log (the flow's deposits made some) and a redelivery.
    check(await http.get('/api/v1/partner/webhooks').set(p));
    check(await http.post('/api/v1/partner/webhooks/secret/rotate').set(p).send());
    let deliveries = check(await http.get('/api/v1/partner/webhooks/deliveries?limit=5').set(p));
    for (let i = 0; i < 200 && deliveries.body.data.items.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      deliveries = check(await http.get('/api/v1/partner/webhooks/deliveries?limit=5').set(p));
    }
    check(await http.post(`/api/v1/partner/webhooks/deliveries/${deliveries.body.data.items[0].id}/redeliver`).set(p).send());
    check(await http.post(`/api/v1/partner/webhooks/deliveries/${randomUUID()}/redeliver`).set(p).send());
    // The events API: every notification made for the partner, and one of them by its id.
    const events = check(await http.get('/api/v1/partner/events?limit=5').set(p));
    check(await http.get(`/api/v1/partner/events/${events.body.data.items[0].id}`).set(p));
    check(await http.get(`/api/v1/partner/events/${randomUUID()}`).set(p));

    check(await http.post('/api/v1/partner/auth/logout').set(p).send({ refreshToken: refreshed.body.refreshToken }));

    // Erasure of two users without money: by the partner (then again: 404) and by the operator.
    for (const [path, auth] of [
      ['/api/v1/partner/users/{id}/erase', p],
      ['/admin/v1/users/{id}/erase', admin],
    ] as const) {
      const fresh = check(
        await http
          .post('/api/v1/partner/users')
          .set(p)
          .send({ email: `erase.${randomUUID()}@example.com`, countryCode: 'CO' }),
      );
      const erase = path.replace('{id}', fresh.body.data.user.id);
      check(await http.post(erase).set(auth).send());
      check(await http.post(erase).set(auth).send());
    }

    expect(failures, 'answers that do not match their documented schema').to.deep.equal([]);

    const unsampled: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops)) {
        const key = opKey(method, path);
        const statuses = [...(sampled.get(key) ?? [])];
        const declaresSuccess = Object.keys(op.responses).some(twoXx);
        const ok = declaresSuccess ? statuses.some((s) => twoXx(String(s))) : statuses.length > 0;
        if (!ok && !(key in UNSAMPLED)) unsampled.push(key);
      }
    expect(unsampled, 'documented operations without a validated success answer: add them to the flow').to.deep.equal([]);
  });
});
