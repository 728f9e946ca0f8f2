import { expect } from 'chai';
import BigNumber from 'bignumber.js';
import { createPartner, startTestApp } from '../support/app';
import { customer } from '../support/ledger';

describe('exchange quotes over HTTP', () => {
  let app: Awaited<ReturnType<typeof startTestApp>>;
  let bearer: { Authorization: string };

  before(async () => {
    app = await startTestApp();
    bearer = (await customer(app.http, await createPartner(app.http))).bearer;
  });
  after(() => app?.close());

  it('lists the assets with their decimals', async () => {
    const res = await app.http.get('/api/v1/exchanges/assets/public');
    expect(res.status).to.equal(200);
    const cop = res.body.data.find((a: { asset: string }) => a.asset === 'COP');
    expect(cop).to.include({ asset: 'COP', decimals: 2 });
  });

  it('quotes publicly and for a logged-in user alike: toAmount = fromAmount x rate, a rate after the spread, a short life', async () => {
    for (const send of [
      () => app.http.post('/api/v1/exchanges/quote/public').send({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: '10' }),
      () => app.http.post('/api/v1/user/exchange/calculate').set(bearer).send({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: '10' }),
    ]) {
      const res = await send();
      expect(res.status).to.equal(200);
      const q = res.body.data;
      expect(q).to.include({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: 10 });
      expect(q.id).to.be.a('string');
      // 4,000 COP per USDC by default, less the 50 bps spread.
      expect(q.rate).to.be.below(4_000).and.above(3_900);
      expect(new BigNumber(q.toAmount).minus(new BigNumber(q.fromAmount).times(q.rate)).abs().lte(0.01)).to.equal(true);
      const lifeMs = Date.parse(q.expiresAt) - Date.now();
      expect(lifeMs).to.be.within(0, 31_000);
    }
  });

  it('refuses an unknown asset and an amount that is not positive, with the decided messages', async () => {
    const quote = (body: Record<string, unknown>) => app.http.post('/api/v1/exchanges/quote/public').send(body);
    const unknown = await quote({ fromAsset: 'USDC', toAsset: 'XYZ', fromAmount: '1' });
    expect(unknown.status).to.equal(400);
    expect(unknown.body).to.include({ error: 'Unsupported asset: XYZ', code: 'unsupported_asset' });
    const zero = await quote({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: '0' });
    expect(zero.status).to.equal(400);
    expect(zero.body).to.include({ error: 'Amount must be greater than 0', code: 'amount_not_positive', param: 'fromAmount' });
    // The amount rules name the field they refuse.
    const word = await quote({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: 'ten' });
    expect(word.body).to.include({ error: 'fromAmount must be a number', code: 'amount_not_a_number', param: 'fromAmount' });
    const fine = await quote({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: '0.000000001' });
    expect(fine.body).to.include({ error: 'fromAmount must have at most 8 decimal places', code: 'amount_too_precise', param: 'fromAmount' });
    expect((await app.http.post('/api/v1/user/exchange/calculate').send({ fromAsset: 'USDC', toAsset: 'COP', fromAmount: '1' })).status).to.equal(401);
  });
});
