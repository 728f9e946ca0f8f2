import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { CommandContext } from '../../src/platform/commands/commands';
import { cardStream } from '../../src/domain/cards/card';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { customer, fund } from '../support/ledger';

type App = Awaited<ReturnType<typeof startTestApp>>;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const T0 = Date.parse('2026-11-25T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe('card authorizations on the command path (app layer, real Postgres, injected clock)', function () {
  this.timeout(120_000);
  let app: App;
  let acme: PartnerCredentials;
  const ctx = (): CommandContext => ({ commandId: randomUUID(), unkeyed: true, metadata: { actor: { kind: 'partner', id: acme.id } } });
  const spending = () => app.tally.cards.spending;
  const at = (ms: number) => {
    spending().clock = () => iso(ms);
  };
  const authorize = (cardId: string, amount: string) =>
    spending().authorize(acme.id, cardId, { amount, currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5999' }, ctx());
  const outcome = async (cardId: string, amount: string) => {
    const { spend } = await authorize(cardId, amount);
    return spend.declinedReason ?? spend.status;
  };

  /** A customer of acme with an active virtual card, `balance` on the account and the given limit. */
  async function card(balance: string, limit?: { amount: number; frequency: string }): Promise<string> {
    const who = await customer(app.http, acme);
    const user = { userId: who.id, partnerId: acme.id };
    const application = await app.tally.cards.applications.apply(user, { cardType: 'virtual', isTermsOfServiceAccepted: true, ipAddress: null }, ctx());
    await app.tally.providers.sandbox?.cards.decideApplication(application.id, 'approved');
    const issued = await app.tally.cards.cards.issue(user, ctx(), randomUUID());
    if (limit) await app.tally.cards.cards.setLimit(user, limit, ctx(), randomUUID());
    await fund(app.http, acme, who, balance);
    return issued.data.id;
  }

  before(async () => {
    app = await startTestApp();
    acme = await createPartner(app.http);
  });

  after(async () => {
    spending().clock = () => new Date().toISOString();
    await app.close();
  });

  it('per24HourPeriod: an authorization exactly 24 hours old has left the window, a millisecond younger has not', async () => {
    const cardId = await card('5000');
    at(T0);
    expect(await outcome(cardId, '1000')).to.equal('pending');
    at(T0 + DAY_MS - 1);
    expect(await outcome(cardId, '0.01')).to.equal('SPEND_LIMIT_EXCEEDED');
    at(T0 + DAY_MS);
    expect(await outcome(cardId, '1000')).to.equal('pending');
  });

  it('per7DayPeriod and perYearPeriod (365 days) count what their windows hold at the authorization', async () => {
    const weekly = await card('5000', { amount: 300, frequency: 'per7DayPeriod' });
    at(T0);
    expect(await outcome(weekly, '200')).to.equal('pending');
    at(T0 + 6 * DAY_MS);
    expect(await outcome(weekly, '100')).to.equal('pending');
    at(T0 + 7 * DAY_MS - 1);
    expect(await outcome(weekly, '100')).to.equal('SPEND_LIMIT_EXCEEDED');
    at(T0 + 7 * DAY_MS);
    expect(await outcome(weekly, '200')).to.equal('pending');
    const yearly = await card('5000', { amount: 500, frequency: 'perYearPeriod' });
    at(T0);
    expect(await outcome(yearly, '500')).to.equal('pending');
    at(T0 + 365 * DAY_MS - 1);
    expect(await outcome(yearly, '1')).to.equal('SPEND_LIMIT_EXCEEDED');
    at(T0 + 365 * DAY_MS);
    expect(await outcome(yearly, '500')).to.equal('pending');
  });

  it('allTime counts every approved spend since issuance; a reversal gives its amount back to the window', async () => {
    const cardId = await card('5000', { amount: 100, frequency: 'allTime' });
    at(T0);
    const first = await authorize(cardId, '60');
    at(T0 + 400 * DAY_MS);
    expect(await outcome(cardId, '41')).to.equal('SPEND_LIMIT_EXCEEDED');
    expect((await spending().reverse(acme.id, first.id, ctx())).spend.status).to.equal('reversed');
    expect(await outcome(cardId, '100')).to.equal('pending');
  });

  it('decides concurrent authorizations on one card in order: exactly the limit is approved, never more', async () => {
    spending().clock = () => new Date().toISOString();
    const cardId = await card('5000', { amount: 1000, frequency: 'per24HourPeriod' });
    const outcomes = await Promise.all(Array.from({ length: 25 }, () => outcome(cardId, '100')));
    expect(outcomes.filter((o) => o === 'pending')).to.have.length(10);
    expect(outcomes.filter((o) => o === 'SPEND_LIMIT_EXCEEDED')).to.have.length(15);
    const events = await app.tally.store.readStream(cardStream(cardId));
    const decided = events.filter((e) => e.type === 'CardSpendAuthorized' || e.type === 'CardSpendDeclined').map((e) => e.type);
    // In the stream's order, the ten approvals come first: each decision saw every one before it.
    expect(decided).to.deep.equal([...Array(10).fill('CardSpendAuthorized'), ...Array(15).fill('CardSpendDeclined')]);
  });
});
