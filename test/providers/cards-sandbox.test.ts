import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { PgliteSql } from '../../src/eventstore/sql';
import { isLuhnValid, type IssuerApplicationRequest } from '../../src/providers/cards/port';
import { SANDBOX_BIN, SandboxApplicationConflictError, SandboxCardIssuer, SandboxCardNotFoundError } from '../../src/providers/cards/sandbox';
import { CardVault } from '../../src/providers/cards/vault';
import { WebhookSignatureError } from '../../src/providers/errors';
import { signPayload } from '../../src/providers/signature';
import { testSealer } from '../support/sealing';

const SECRET = 'wbhsec_sandbox_cards_test';

/** A local webhook receiver that accepts everything it is sent. */
async function startReceiver() {
  const requests: Array<{ headers: http.IncomingHttpHeaders; body: Buffer }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks/cards/sandbox`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const request = (over: Partial<IssuerApplicationRequest> = {}): IssuerApplicationRequest => ({
  applicationId: randomUUID(),
  userId: randomUUID(),
  cardType: 'virtual',
  walletAddress: null,
  solanaAddress: null,
  tronAddress: null,
  chainId: null,
  contractAddress: null,
  identityShareToken: null,
  sourceKey: 'acme',
  ipAddress: null,
  occupation: 'engineer',
  annualSalary: '85000',
  accountPurpose: 'spending',
  expectedMonthlyVolume: '1500',
  isTermsOfServiceAccepted: true,
  ...over,
});

const LIMIT = { amount: '1000.00000000', frequency: 'per24HourPeriod' as const };

describe('sandbox card issuer', () => {
  let sql: PgliteSql;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let issuer: SandboxCardIssuer;
  before(async () => {
    sql = await PgliteSql.open();
    const vault = new CardVault(await testSealer(sql));
    receiver = await startReceiver();
    issuer = new SandboxCardIssuer({ sql, webhookSecret: SECRET, webhookUrl: () => receiver.url, vault, retryDelayMs: 1 });
    await issuer.prepare();
    await issuer.prepare();
  });

  after(async () => {
    await receiver.close();
    await sql.close();
  });

  async function approved(over: Partial<IssuerApplicationRequest> = {}) {
    const asked = request(over);
    const application = await issuer.submitApplication(asked);
    await issuer.decideApplication(asked.applicationId, 'approved');
    return { asked, application };
  }

  it('takes an application as pending, once per reference', async () => {
    const asked = request();
    const first = await issuer.submitApplication(asked);
    expect(first).to.include({ externalStatus: 'pending', status: 'pending', reason: null });
    expect(first.issuerApplicationId).to.match(/^iss_app_/);
    expect(await issuer.submitApplication(asked)).to.deep.equal(first);
    expect(await issuer.findApplication(asked.applicationId)).to.include({ userId: asked.userId, status: 'pending' });
  });

  it('reports a decision by a signed webhook that parses to the mapped status, and a second decision is refused', async () => {
    const asked = request();
    const { issuerApplicationId } = await issuer.submitApplication(asked);
    const eventId = await issuer.decideApplication(asked.applicationId, 'denied', 'too risky');
    const delivered = receiver.requests.at(-1);
    expect(delivered).to.not.equal(undefined);
    const event = issuer.parseWebhook(delivered?.body as Buffer, delivered?.headers ?? {});
    expect(event).to.include({ eventId, issuerApplicationId, externalStatus: 'denied', status: 'declined', reason: 'too risky' });
    expect(await issuer.getApplication(issuerApplicationId)).to.include({ status: 'declined', reason: 'too risky' });
    const again = await issuer.decideApplication(asked.applicationId, 'denied');
    expect(again).not.to.equal(eventId);
    let conflict: unknown;
    await issuer.decideApplication(asked.applicationId, 'approved').catch((error) => {
      conflict = error;
    });
    expect(conflict).to.be.instanceOf(SandboxApplicationConflictError);
  });

  it('refuses a webhook that is unsigned or signed with another secret', async () => {
    const body = Buffer.from(JSON.stringify({ id: 'evt_1', type: 'application.approved', createdAt: new Date().toISOString(), data: {} }));
    expect(() => issuer.parseWebhook(body, {})).to.throw(WebhookSignatureError);
    expect(() => issuer.parseWebhook(body, { 'x-signature': signPayload('another', body) })).to.throw(WebhookSignatureError);
  });

  it('issues a Luhn-valid card under the test BIN on an approved application, once per card id, its secrets sealed', async () => {
    const { asked, application } = await approved();
    const cardId = randomUUID();
    const card = await issuer.issueCard({ cardId, userId: asked.userId, issuerApplicationId: application.issuerApplicationId, type: 'virtual', limit: LIMIT });
    expect(card.last4).to.match(/^[0-9]{4}$/);
    expect(card.expirationMonth).to.match(/^(0[1-9]|1[0-2])$/);
    expect(Number(card.expirationYear)).to.equal((new Date().getUTCFullYear() + 3) % 100);
    const again = await issuer.issueCard({ cardId, userId: asked.userId, issuerApplicationId: application.issuerApplicationId, type: 'virtual', limit: LIMIT });
    expect(again).to.deep.equal(card);
    const secrets = await issuer.revealSecrets(card.reference);
    expect(isLuhnValid(secrets.cardNumber)).to.equal(true);
    expect(secrets.cardNumber.startsWith(SANDBOX_BIN) && secrets.cardNumber.endsWith(card.last4)).to.equal(true);
    expect(secrets.cvc).to.match(/^[0-9]{3}$/);
    const [row] = await sql.query<Record<string, unknown>>(`SELECT * FROM sandbox_cards WHERE card_id = $1`, [cardId]);
    expect(JSON.stringify(row)).not.to.contain(secrets.cardNumber);
    expect(String(row?.cvc_sealed)).to.match(/^v2\./);
  });

  it('keeps a PIN sealed and reveals it to the card it was set on', async () => {
    const { asked, application } = await approved();
    const card = await issuer.issueCard({
      cardId: randomUUID(),
      userId: asked.userId,
      issuerApplicationId: application.issuerApplicationId,
      type: 'physical',
      limit: LIMIT,
    });
    expect(await issuer.revealPin(card.reference)).to.equal(null);
    await issuer.setPin(card.reference, '2580');
    expect(await issuer.revealPin(card.reference)).to.equal('2580');
    const [row] = await sql.query<{ pin_sealed: string }>(`SELECT pin_sealed FROM sandbox_cards WHERE reference = $1`, [card.reference]);
    expect(row?.pin_sealed).to.match(/^v2\./).and.not.to.contain('2580');
  });

  it('refuses a card on an application that is not approved, and unknown cards', async () => {
    const asked = request();
    const application = await issuer.submitApplication(asked);
    let refused: unknown;
    await issuer
      .issueCard({ cardId: randomUUID(), userId: asked.userId, issuerApplicationId: application.issuerApplicationId, type: 'virtual', limit: LIMIT })
      .catch((error) => {
        refused = error;
      });
    expect((refused as Error).message).to.contain('is not approved');
    let unknown: unknown;
    await issuer.revealSecrets('iss_card_nope').catch((error) => {
      unknown = error;
    });
    expect(unknown).to.be.instanceOf(SandboxCardNotFoundError);
  });

  it('records the status and limit the issuer enforces', async () => {
    const { asked, application } = await approved();
    const card = await issuer.issueCard({
      cardId: randomUUID(),
      userId: asked.userId,
      issuerApplicationId: application.issuerApplicationId,
      type: 'virtual',
      limit: LIMIT,
    });
    await issuer.updateCard(card.reference, { status: 'locked', limit: { amount: '25.50000000', frequency: 'perAuthorization' } });
    const [row] = await sql.query<{ status: string; limit_amount: string; limit_frequency: string }>(
      `SELECT status, limit_amount::text, limit_frequency FROM sandbox_cards WHERE reference = $1`,
      [card.reference],
    );
    expect(row).to.deep.equal({ status: 'locked', limit_amount: '25.50000000', limit_frequency: 'perAuthorization' });
  });
});
