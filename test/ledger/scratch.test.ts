import { randomUUID } from 'node:crypto';
import { createPartner, startTestApp } from '../support/app';
import { customer, fund, PAYOUT_DESTINATION } from '../support/ledger';

describe('scratch', () => {
  it('probes', async () => {
    const app = await startTestApp();
    const acme = await createPartner(app.http, 'A');
    const a = await customer(app.http, acme);
    const b = await customer(app.http, acme);
    await fund(app.http, acme, a, '100');
    const t = await app.http.post('/api/v1/transactions/transfer').set(a.bearer).send({ toAccountId: b.accountId, amount: 0.0000001, description: 'x' });
    console.log('transfer 1e-7 as number', t.status, t.body);
    const d = await app.http.post('/api/v1/transactions/deposit').set(a.bearer).send({ toAccountId: a.accountId, amount: 0.00000001, currency: 'USDC', provider: 'mock', description: 'd', metadata: { payer: { documentType: 'CC', documentNumber: '1' } } });
    console.log('deposit 1e-8 as number', d.status, d.body);
    const id = randomUUID();
    const body = { transactionId: id, amount: 4000, asset: 'COP', provider: 'mock', source: { metadata: {} }, destination: PAYOUT_DESTINATION };
    const p1 = await app.http.post('/api/v1/user/payout').set(a.bearer).send(body);
    console.log('payout', p1.status, p1.body);
    const p2 = await app.http.post('/api/v1/user/payout').set(a.bearer).send({ ...body, transactionId: id.toUpperCase() });
    console.log('payout retry upper', p2.status, p2.body);
    const id2 = randomUUID().toUpperCase();
    const p3 = await app.http.post('/api/v1/user/payout').set(a.bearer).send({ ...body, transactionId: id2 });
    console.log('payout upper first', p3.status, p3.body);
    const p4 = await app.http.post('/api/v1/user/payout').set(a.bearer).send({ ...body, transactionId: id2 });
    console.log('payout upper again', p4.status, p4.body);
    const g = await app.http.get(`/api/v1/transactions/${id2}`).set(a.bearer);
    console.log('get upper', g.status, g.body.uuid);
    console.log(await app.http.get('/api/v1/user/accounts').set(a.bearer).then((r) => r.body.items));
    await app.close();
  });
});
