import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { CommandContext } from '../../src/platform/commands/commands';
import { DomainError } from '../../src/platform/decider';
import { isLuhnValid } from '../../src/providers/cards/port';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { kycStartedUser } from '../support/identity';
import { customer } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

const ctxOf = (userId: string): CommandContext => ({ commandId: randomUUID(), unkeyed: true, metadata: { actor: { kind: 'user', id: userId } } });

async function refusal(promise: Promise<unknown>): Promise<[string, string]> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return [error.kind, error.message];
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('cards on the command path (app layer, real Postgres)', function () {
  this.timeout(120_000);
  let app: App;
  let acme: PartnerCredentials;

  const userOf = (who: { id: string }) => ({ userId: who.id, partnerId: acme.id });
  const cards = () => app.tally.cards;
  const sandbox = () => {
    const issuer = app.tally.providers.sandbox?.cards;
    if (!issuer) throw new Error('the sandbox card issuer is on in tests');
    return issuer;
  };
  const apply = (who: { id: string }, cardType: 'virtual' | 'physical' = 'virtual', terms = true) =>
    cards().applications.apply(userOf(who), { cardType, isTermsOfServiceAccepted: terms, ipAddress: '203.0.113.7' }, ctxOf(who.id));

  /** A customer with an application the sandbox issuer approved (through its signed webhook), and a card issued on it. */
  async function withCard(cardType: 'virtual' | 'physical' = 'virtual') {
    const who = await customer(app.http, acme);
    const application = await apply(who, cardType);
    await sandbox().decideApplication(application.id, 'approved');
    const issued = await cards().cards.issue(userOf(who), ctxOf(who.id), randomUUID());
    return { who, user: userOf(who), card: issued.data };
  }

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http);
  });

  after(async () => {
    await app.close();
  });

  describe('applications', () => {
    it('records a pending application with the profile fields, the account and the issuer reference', async () => {
      const ada = await customer(app.http, acme);
      const application = await cards().applications.apply(
        userOf(ada),
        { cardType: 'physical', isTermsOfServiceAccepted: true, walletAddress: '0x742d35Cc6634C0532925a3b844Bc9e7595f0bEb0', ipAddress: '203.0.113.7' },
        ctxOf(ada.id),
      );
      expect(application).to.include({
        accountId: ada.accountId,
        userId: ada.id,
        cardType: 'physical',
        applicationStatus: 'pending',
        applicationReason: null,
        occupation: 'Engineer',
        annualSalary: '85000.5',
        accountPurpose: 'savings',
        expectedMonthlyVolume: '2500',
        walletAddress: '0x742d35Cc6634C0532925a3b844Bc9e7595f0bEb0',
        solanaAddress: null,
        sourceKey: acme.id,
        ipAddress: '203.0.113.7',
        isTermsOfServiceAccepted: true,
        hasExistingDocuments: true,
        issuer: 'sandbox',
      });
      expect(application.issuerApplicationId).to.match(/^iss_app_/);
      expect(await cards().applications.statusSummary(application)).to.deep.equal({ local: 'pending', external: 'pending', synced: true });
      expect(await refusal(apply(ada))).to.deep.equal(['conflict', 'Card application already exists with status: pending']);
    });

    it("moves to approved on the issuer's signed webhook, and the summary says both sides agree", async () => {
      const ada = await customer(app.http, acme);
      const application = await apply(ada);
      await sandbox().decideApplication(application.id, 'approved');
      const current = await cards().applications.current(ada.id);
      expect(current).to.include({ id: application.id, applicationStatus: 'approved', externalStatus: 'approved' });
      expect(await cards().applications.statusSummary(current)).to.deep.equal({ local: 'approved', external: 'approved', synced: true });
      expect(await cards().applications.statusSummary(null)).to.deep.equal({ local: 'not_started', external: 'not_started', synced: true });
    });

    it('moves to declined with the reason, after which the user may apply again', async () => {
      const ada = await customer(app.http, acme);
      const first = await apply(ada);
      await sandbox().decideApplication(first.id, 'denied', 'Sanctions screening match');
      expect(await cards().applications.current(ada.id)).to.include({
        applicationStatus: 'declined',
        applicationReason: 'Sanctions screening match',
        externalStatus: 'denied',
      });
      expect(await refusal(cards().cards.issue(userOf(ada), ctxOf(ada.id)))).to.deep.equal(['conflict', 'Card application is declined']);
      const second = await apply(ada);
      expect(second.id).not.to.equal(first.id);
      expect(second.applicationStatus).to.equal('pending');
    });

    it('is refused without accepted terms, and for a user whose KYC is not approved', async () => {
      const ada = await customer(app.http, acme);
      expect(await refusal(apply(ada, 'virtual', false))).to.deep.equal(['invalid', 'isTermsOfServiceAccepted must be true']);
      const pending = await kycStartedUser(app.http, acme);
      expect(await refusal(apply(pending))).to.deep.equal(['forbidden', 'KYC must be approved to apply for a card']);
    });
  });

  describe('issuing', () => {
    it('is 404 without an application and 409 while it is pending', async () => {
      const ada = await customer(app.http, acme);
      expect(await refusal(cards().cards.issue(userOf(ada), ctxOf(ada.id)))).to.deep.equal(['not_found', 'Card application not found']);
      await apply(ada);
      expect(await refusal(cards().cards.issue(userOf(ada), ctxOf(ada.id)))).to.deep.equal(['conflict', 'Card application is pending']);
    });

    it('issues a virtual card active with the default limit; the same key answers it again; a second card is 409', async () => {
      const ada = await customer(app.http, acme);
      const application = await apply(ada);
      await sandbox().decideApplication(application.id, 'approved');
      const key = randomUUID();
      const first = await cards().cards.issue(userOf(ada), ctxOf(ada.id), key);
      expect(first.replayed).to.equal(false);
      expect(first.data).to.include({ type: 'virtual', status: 'active' });
      expect(first.data.limit).to.deep.equal({ amount: '1000.00000000', frequency: 'per24HourPeriod' });
      expect(first.data.last4).to.match(/^[0-9]{4}$/);
      const again = await cards().cards.issue(userOf(ada), ctxOf(ada.id), key);
      expect(again).to.deep.equal({ data: first.data, replayed: true });
      expect(await refusal(cards().cards.issue(userOf(ada), ctxOf(ada.id), randomUUID()))).to.deep.equal(['conflict', 'Card already issued']);
      const secrets = await cards().cards.secrets(ada.id);
      expect(isLuhnValid(secrets.cardNumber) && secrets.cardNumber.endsWith(first.data.last4)).to.equal(true);
      expect([secrets.expirationMonth, secrets.expirationYear]).to.deep.equal([first.data.expirationMonth, first.data.expirationYear]);
    });

    it('issues a physical card notActivated, and activates it once', async () => {
      const { who, user, card } = await withCard('physical');
      expect(card.status).to.equal('notActivated');
      const activated = await cards().cards.changeStatus(user, 'activate', ctxOf(who.id), randomUUID());
      expect(activated.data).to.deep.equal({ id: card.id, status: 'active' });
      expect(await refusal(cards().cards.changeStatus(user, 'activate', ctxOf(who.id)))).to.deep.equal(['conflict', 'Cannot activate a card in status active']);
    });
  });

  describe('changes under an idempotency key', () => {
    it('locks and unlocks; the same key answers the first answer again, another call under it is 422', async () => {
      const { who, user, card } = await withCard();
      const key = randomUUID();
      const locked = await cards().cards.changeStatus(user, 'lock', ctxOf(who.id), key);
      expect(locked).to.deep.equal({ data: { id: card.id, status: 'locked' }, replayed: false });
      expect(await refusal(cards().cards.secrets(who.id))).to.deep.equal(['conflict', 'Cannot reveal the secrets of a card in status locked']);
      expect(await refusal(cards().cards.changeStatus(user, 'lock', ctxOf(who.id), randomUUID()))).to.deep.equal([
        'conflict',
        'Cannot lock a card in status locked',
      ]);
      const unlocked = await cards().cards.changeStatus(user, 'unlock', ctxOf(who.id), randomUUID());
      expect(unlocked.data.status).to.equal('active');
      // The first answer, though the card has moved since.
      expect(await cards().cards.changeStatus(user, 'lock', ctxOf(who.id), key)).to.deep.equal({ data: { id: card.id, status: 'locked' }, replayed: true });
      expect((await cards().cards.primaryCard(who.id)).status).to.equal('active');
      expect(await refusal(cards().cards.changeStatus(user, 'unlock', ctxOf(who.id), key))).to.deep.equal([
        'unprocessable',
        'Idempotency key reused with different parameters',
      ]);
    });

    it('refuses a copy sent while the first is still running (400), and makes the change once', async () => {
      const { who, user, card } = await withCard();
      const key = randomUUID();
      const outcomes = await Promise.allSettled([
        cards().cards.setLimit(user, { amount: 300, frequency: 'per7DayPeriod' }, ctxOf(who.id), key),
        cards().cards.setLimit(user, { amount: 300, frequency: 'per7DayPeriod' }, ctxOf(who.id), key),
      ]);
      const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
      expect(refused).to.have.length(1);
      expect([refused[0].kind, refused[0].message]).to.deep.equal(['invalid', 'Duplicate request in progress']);
      const [changed] = await app.tally.sql.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM es_events WHERE stream_id = $1 AND type = 'CardLimitChanged'`,
        [`card-${card.id}`],
      );
      expect(changed?.n).to.equal('1');
    });

    it('sets a limit as a decimal and refuses one that is not positive', async () => {
      const { who, user, card } = await withCard();
      const set = await cards().cards.setLimit(user, { amount: 250.5, frequency: 'perAuthorization' }, ctxOf(who.id), randomUUID());
      expect(set.data).to.deep.equal({ id: card.id, limit: { amount: '250.50000000', frequency: 'perAuthorization' } });
      expect(await refusal(cards().cards.setLimit(user, { amount: 0, frequency: 'allTime' }, ctxOf(who.id)))).to.deep.equal([
        'invalid',
        'Amount must be greater than 0',
      ]);
      expect((await cards().cards.primaryCard(who.id)).limit).to.deep.equal({ amount: '250.50000000', frequency: 'perAuthorization' });
    });

    it('keys a transfer and a card call in one space: a key a ledger transaction was made under is 422 here', async () => {
      const { who, user } = await withCard();
      const key = randomUUID();
      const deposit = await app.http
        .post('/api/v1/transactions/deposit')
        .set(who.bearer)
        .set('Idempotency-Key', key)
        .send({
          toAccountId: who.accountId,
          amount: 5,
          currency: 'USDC',
          provider: 'mock',
          description: 'top up',
          metadata: { payer: { documentType: 'CC', documentNumber: '1' } },
        });
      expect(deposit.status).to.equal(201);
      expect(await refusal(cards().cards.changeStatus(user, 'lock', ctxOf(who.id), key))).to.deep.equal([
        'unprocessable',
        'Idempotency key reused with different parameters',
      ]);
    });
  });

  describe('secrets', () => {
    it('sends the PIN to the issuer only: the log records that it changed, and no event holds a number, CVC or PIN', async () => {
      const { who, user, card } = await withCard();
      expect((await cards().cards.pin(who.id)).pin).to.equal(null);
      const set = await cards().cards.setPin(user, '2580', ctxOf(who.id), randomUUID());
      expect(set.data).to.deep.equal({ id: card.id });
      expect(await cards().cards.pin(who.id)).to.deep.equal({ id: card.id, pin: '2580' });
      expect(await refusal(cards().cards.setPin(user, '12345', ctxOf(who.id)))).to.deep.equal(['invalid', 'pin must be exactly 4 digits']);
      const secrets = await cards().cards.secrets(who.id);
      const events = await app.tally.sql.query<{ stream_id: string; type: string; data: Record<string, unknown> }>(
        `SELECT stream_id, type, data FROM es_events WHERE stream_id LIKE 'card%'`,
      );
      const text = JSON.stringify(events);
      expect(text).not.to.contain(secrets.cardNumber);
      for (const e of events) expect(Object.keys(e.data), e.type).not.to.include.members(['pin', 'cvc', 'cardNumber', 'pan']);
      const pinChanged = events.find((e) => e.type === 'CardPinChanged' && e.stream_id === `card-${card.id}`);
      expect(Object.keys(pinChanged?.data ?? {}).sort()).to.deep.equal(['at', 'cardId']);
    });
  });

  describe("the operator's cancel", () => {
    it('is final: every action is 409 after it, and a new card may be issued', async () => {
      const { who, user, card } = await withCard();
      expect(await cards().cards.cancel(card.id, ctxOf('operator'))).to.deep.equal({ id: card.id, status: 'canceled' });
      for (const action of ['lock', 'unlock', 'activate'] as const) {
        expect(await refusal(cards().cards.changeStatus(user, action, ctxOf(who.id)))).to.deep.equal([
          'conflict',
          `Cannot ${action} a card in status canceled`,
        ]);
      }
      expect(await refusal(cards().cards.cancel(card.id, ctxOf('operator')))).to.deep.equal(['conflict', 'Cannot cancel a card in status canceled']);
      expect(await refusal(cards().cards.secrets(who.id))).to.deep.equal(['conflict', 'Cannot reveal the secrets of a card in status canceled']);
      const next = await cards().cards.issue(user, ctxOf(who.id), randomUUID());
      expect(next.data.id).not.to.equal(card.id);
      expect((await cards().cards.primaryCard(who.id)).cardId).to.equal(next.data.id);
      expect((await cards().cards.cardsOf(who.id)).map((c) => c.status)).to.deep.equal(['canceled', 'active']);
    });

    it('is 404 for a card that does not exist', async () => {
      expect(await refusal(cards().cards.cancel(randomUUID(), ctxOf('operator')))).to.deep.equal(['not_found', 'Card not found']);
    });
  });
});
