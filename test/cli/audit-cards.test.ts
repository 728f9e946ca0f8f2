import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { auditVerify } from '../../src/cli/audit';
import { readEvents } from '../../src/cli/events';
import type { CardState } from '../../src/domain/cards/card';
import { createPartner, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer, fund } from '../support/ledger';
import { capture, cliConfig, rawSql } from './support';
import { allSpends } from '../../src/domain/cards/spend-book';

describe('tally audit verify and events read: cards', function () {
  this.timeout(120_000);
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let partner: PartnerCredentials;
  let ada: Customer;
  let cardId: string;
  let pendingId: string;
  let config: ReturnType<typeof cliConfig>;

  const authorize = async (amount: string) => {
    const res = await app.http
      .post(`/sandbox/v1/cards/${cardId}/authorizations`)
      .set(partner.headers)
      .send({ amount, currency: 'USD', merchantName: 'Shop', merchantCategoryCode: '5411' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as string;
  };
  const settle = async (id: string, action: 'clear' | 'reverse', body: Record<string, unknown> = {}) => {
    const res = await app.http.post(`/sandbox/v1/card-transactions/${id}/${action}`).set(partner.headers).send(body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
  };

  beforeEach(async () => {
    app = await startTestApp();
    config = cliConfig({ databaseUrl: app.config.databaseUrl, dataDir: app.config.dataDir });
    partner = await createPartner(app.http);
    ada = await customer(app.http, partner);
    const applied = await app.http.post('/api/v1/cards/application').set(ada.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
    await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
    cardId = (await app.http.post('/api/v1/cards').set(ada.bearer).set('x-idempotency-key', randomUUID()).send({})).body.data.id;
    await fund(app.http, partner, ada, '100');
    pendingId = await authorize('10');
    await settle(await authorize('20'), 'clear');
    await settle(await authorize('30'), 'clear', { amount: '25' });
    await settle(await authorize('15'), 'clear', { amount: '18' });
    await settle(await authorize('5'), 'reverse');
    // Declined: over the balance left (27).
    await authorize('500');
  });
  afterEach(async () => {
    await app.close();
  });

  it('finds card holds matching the accounts’ pending debits, and the books balanced with card spends', async () => {
    const io = capture();
    const report = await auditVerify(config, io);
    expect(report.ok, io.text()).to.equal(true);
    expect(io.lines).to.include('OK   card holds: 1 cards, 5 approved card transactions, 1 accounts checked');
    // 100 deposited; 10 held, 20 + 25 + 18 cleared, 5 reversed: 27 left (9 ledger transactions: the deposit, 5 spends, 2 returns, 1 extra debit).
    expect(io.lines, io.text()).to.include(
      'OK   ledger: 1 accounts, 9 transactions; balances 27.00000000 = deposits 100.00000000 - payouts 73.00000000 checked',
    );
  });

  it('reports a card transaction whose amount no longer matches its hold', async () => {
    await rawSql(
      app.config.databaseUrl!,
      `UPDATE es_events SET data = jsonb_set(data::jsonb, '{amount}', '"11.00000000"') WHERE type = 'CardSpendAuthorized' AND data->>'transactionId' = $1`,
      [pendingId],
    );
    const report = await auditVerify(config, capture());
    expect(report.ok).to.equal(false);
    const holds = report.checks.find((c) => c.name === 'card holds');
    expect(holds?.findings.map((f) => [f.subject, f.reason])).to.deep.equal([
      [`card ${cardId} transaction ${pendingId}`, `pending for 11.00000000 but account ${ada.accountId} holds 10.00000000 for it`],
    ]);
  });

  it('reports a hold left on the account after its card transaction was settled', async () => {
    await rawSql(
      app.config.databaseUrl!,
      `DELETE FROM es_events WHERE type = 'HoldPosted' AND data->>'transactionId' = (
      SELECT data->>'transactionId' FROM es_events WHERE type = 'CardSpendReversed' LIMIT 1)`,
    );
    const report = await auditVerify(config, capture());
    const holds = report.checks.find((c) => c.name === 'card holds');
    expect(holds?.findings.map((f) => f.reason)).to.deep.equal([`reversed but account ${ada.accountId} still holds 5.00000000 for it`]);
  });

  it('`events read card-<id>` shows the card’s history and its spends, nothing secret', async () => {
    const io = capture();
    const { cardNumber, cvc } = (await app.http.get('/api/v1/cards/secrets').set(ada.bearer)).body.data;
    const result = await readEvents(config, `card-${cardId}`, {}, io);
    expect(result.events.map((e) => e.type)).to.deep.equal([
      'CardIssued',
      'CardSpendAuthorized',
      'CardSpendAuthorized',
      'CardSpendCleared',
      'CardSpendAuthorized',
      'CardSpendCleared',
      'CardSpendAuthorized',
      'CardSpendCleared',
      'CardSpendAuthorized',
      'CardSpendReversed',
      'CardSpendDeclined',
    ]);
    const state = result.state as CardState;
    expect(state.card).to.include({ cardId, status: 'active' });
    expect(allSpends(state.spends).map((s) => [s.status, s.amount])).to.deep.equal([
      ['pending', '10.00000000'],
      ['completed', '20.00000000'],
      ['completed', '25.00000000'],
      ['completed', '18.00000000'],
      ['reversed', '5.00000000'],
    ]);
    expect(io.text()).to.contain('CardSpendDeclined').and.not.to.contain(cardNumber);
    expect(io.text()).not.to.contain(`"cvc": "${cvc}"`);
  });
});
