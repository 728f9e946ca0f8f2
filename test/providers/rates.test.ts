import { expect } from 'chai';
import type { RateSource } from '../../src/providers/ledger/rates/port';
import { QUOTE_LIFETIME_SECONDS, QuoteInputError, quote, quoteAtRate } from '../../src/providers/ledger/rates/quote';
import { DEFAULT_RATES, parseRateTable, TableRateSource } from '../../src/providers/ledger/rates/table';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-Error: ${String(error)}`);
  }
  throw new Error('expected the promise to reject');
}

describe('table rate source', () => {
  const table = new TableRateSource();

  it('is named table and lists the default assets with names and decimals, USDC with the ledger’s 8 places', () => {
    expect(table.name).to.equal('table');
    expect(DEFAULT_RATES).to.deep.equal({ USDC: '1', USD: '1', COP: '4000', MXN: '17.5', BRL: '5.4', EUR: '0.92', ARS: '950' });
    expect(table.assets()).to.deep.equal([
      { asset: 'USDC', name: 'USD Coin', decimals: 8 },
      { asset: 'USD', name: 'US Dollar', decimals: 2 },
      { asset: 'COP', name: 'Colombian Peso', decimals: 2 },
      { asset: 'MXN', name: 'Mexican Peso', decimals: 2 },
      { asset: 'BRL', name: 'Brazilian Real', decimals: 2 },
      { asset: 'EUR', name: 'Euro', decimals: 2 },
      { asset: 'ARS', name: 'Argentine Peso', decimals: 2 },
    ]);
  });

  it('gives table rates from USDC and their exact inverses', async () => {
    expect(await table.midRate('USDC', 'COP')).to.equal('4000');
    expect(await table.midRate('COP', 'USDC')).to.equal('0.00025');
    expect(await table.midRate('USDC', 'EUR')).to.equal('0.92');
    expect(await table.midRate('USDC', 'USDC')).to.equal('1');
    expect(await table.midRate('USD', 'USDC')).to.equal('1');
  });

  it('computes cross rates as exact decimal quotients', async () => {
    expect(await table.midRate('COP', 'MXN')).to.equal('0.004375');
    expect(await table.midRate('BRL', 'MXN')).to.equal('3.2407407407407407407');
    expect(await table.midRate('EUR', 'COP')).to.equal('4347.8260869565217391');
    expect(await table.midRate('ARS', 'COP')).to.equal('4.2105263157894736842');
  });

  it('rounds a non-terminating quotient half-up to 20 significant digits', async () => {
    expect(await table.midRate('MXN', 'COP')).to.equal('228.57142857142857143');
    const thirds = new TableRateSource({ rates: { XXX: '3', YYY: '2' } });
    expect(await thirds.midRate('XXX', 'USDC')).to.equal('0.33333333333333333333');
    expect(await thirds.midRate('XXX', 'YYY')).to.equal('0.66666666666666666667');
    expect(await thirds.midRate('YYY', 'XXX')).to.equal('1.5');
  });

  it('has no float artefacts where binary floating point has them', async () => {
    const tenths = new TableRateSource({ rates: { AAA: '0.1', BBB: '0.2', CCC: '0.3' } });
    expect(0.3 / 0.1).to.not.equal(3);
    expect(await tenths.midRate('AAA', 'CCC')).to.equal('3');
    expect(await tenths.midRate('AAA', 'BBB')).to.equal('2');
    expect(await tenths.midRate('CCC', 'AAA')).to.equal('0.33333333333333333333');
    expect(await tenths.midRate('USDC', 'CCC')).to.equal('0.3');
  });

  it('rounds on the true quotient even a hair above a rounding boundary', async () => {
    // The 21st significant digit is a 5 followed, 40 places later, by a 1: still above the boundary, so up.
    const source = new TableRateSource({ rates: { ZZZ: '1.0000000000000000000500000000000000000000000000000000000000001' } });
    expect(await source.midRate('USDC', 'ZZZ')).to.equal('1.0000000000000000001');
    const exact = new TableRateSource({ rates: { ZZZ: '1.00000000000000000005' } });
    expect(await exact.midRate('USDC', 'ZZZ')).to.equal('1.0000000000000000001');
    const below = new TableRateSource({ rates: { ZZZ: '1.00000000000000000004999' } });
    expect(await below.midRate('USDC', 'ZZZ')).to.equal('1');
  });

  it('answers null for an unknown asset, in either position and for the wrong case', async () => {
    expect(await table.midRate('USDC', 'GBP')).to.equal(null);
    expect(await table.midRate('GBP', 'USDC')).to.equal(null);
    expect(await table.midRate('cop', 'USDC')).to.equal(null);
    expect(await table.midRate('__proto__', 'USDC')).to.equal(null);
  });

  it('adds USDC at 1 when absent and refuses a table not quoted per 1 USDC or with a bad rate', () => {
    expect(new TableRateSource({ rates: { COP: '4000' } }).assets().map((a) => a.asset)).to.deep.equal(['USDC', 'COP']);
    expect(() => new TableRateSource({ rates: { USDC: '2', COP: '4000' } })).to.throw(/must be 1/);
    expect(new TableRateSource({ rates: { USDC: '1.000', COP: '4000' } }).rateOf('USDC')).to.equal('1');
    for (const rate of ['0', '-1', '1e3', 'abc', '']) expect(() => new TableRateSource({ rates: { COP: rate } }), rate).to.throw(/positive decimal/);
    expect(() => new TableRateSource({ rates: { cop: '1' } })).to.throw(/asset code/);
  });

  it('names an asset it has no info for by its code, with 2 decimals', () => {
    const source = new TableRateSource({ rates: { GBP: '0.79' } });
    expect(source.assets()).to.deep.include({ asset: 'GBP', name: 'GBP', decimals: 2 });
  });

  describe('parseRateTable', () => {
    it('reads ASSET=rate entries separated by commas, semicolons or spaces', () => {
      expect(parseRateTable('COP=4100,MXN=17.2')).to.deep.equal({ COP: '4100', MXN: '17.2' });
      expect(parseRateTable(' cop=4100 ;  gbp=0.79,\nEUR=0.9 ')).to.deep.equal({ COP: '4100', GBP: '0.79', EUR: '0.9' });
      expect(parseRateTable('')).to.deep.equal({});
    });

    it('refuses malformed entries, non-positive rates and a repeated asset', () => {
      for (const text of ['COP', '=4100', 'COP=', 'COP=abc', 'COP=0', 'COP=-1', 'COP=1e3', 'C=1', 'COP=1,COP=2']) {
        expect(() => parseRateTable(text), text).to.throw(Error);
      }
    });

    it('overrides the default table through fromEnv', async () => {
      const source = TableRateSource.fromEnv('COP=4100,GBP=0.79');
      expect(await source.midRate('USDC', 'COP')).to.equal('4100');
      expect(await source.midRate('USDC', 'MXN')).to.equal('17.5');
      expect(await source.midRate('GBP', 'USDC')).to.equal('1.2658227848101265823');
      expect(await TableRateSource.fromEnv(undefined).midRate('USDC', 'COP')).to.equal('4000');
    });
  });
});

describe('quote', () => {
  const rates = new TableRateSource();
  const now = new Date('2025-05-12T10:00:00.000Z');

  it('converts at the mid rate without spread, with the to asset’s decimals, expiring in 30 seconds', async () => {
    const q = await quote({ from: 'USDC', to: 'COP', fromAmount: '100', spreadBps: 0, rates, now });
    expect(q).to.not.equal(null);
    expect(q!.id).to.match(UUID_V4);
    expect(q).to.deep.equal({
      id: q!.id,
      fromAsset: 'USDC',
      toAsset: 'COP',
      fromAmount: '100',
      toAmount: '400000.00',
      rate: '4000',
      expiresAt: '2025-05-12T10:00:30.000Z',
    });
    expect(QUOTE_LIFETIME_SECONDS).to.equal(30);
  });

  it('applies the spread to the rate and the amount', async () => {
    const q = await quote({ from: 'USDC', to: 'COP', fromAmount: '100', spreadBps: 50, rates, now });
    expect(q).to.include({ rate: '3980', toAmount: '398000.00' });
    const usd = await quote({ from: 'COP', to: 'USDC', fromAmount: '1000', spreadBps: 25, rates, now });
    expect(usd).to.include({ rate: '0.000249375', toAmount: '0.24937500' });
  });

  it('rounds the received amount down, never up', async () => {
    // 1 / 0.92 = 1.08695...: 1.09 to the nearest cent, 1.08 rounded down.
    expect(await quote({ from: 'EUR', to: 'USD', fromAmount: '1', spreadBps: 0, rates, now })).to.include({
      rate: '1.0869565217391304348',
      toAmount: '1.08',
    });
    expect(await quote({ from: 'MXN', to: 'COP', fromAmount: '1', spreadBps: 0, rates, now })).to.include({ toAmount: '228.57' });
    expect(await quote({ from: 'COP', to: 'USD', fromAmount: '39.99', spreadBps: 0, rates, now })).to.include({ toAmount: '0.00' });
  });

  it('keeps the effective rate to 20 significant digits, rounded down', async () => {
    const q = await quote({ from: 'MXN', to: 'COP', fromAmount: '3', spreadBps: 30, rates, now });
    // 228.57142857142857143 x 0.997 = 227.88571428571428571571 -> 227.88571428571428571
    expect(q).to.include({ rate: '227.88571428571428571', toAmount: '683.65' });
  });

  it('has no float artefacts', async () => {
    const tenths = new TableRateSource({ rates: { AAA: '0.1', CCC: '0.3' } });
    expect(0.1 * 3).to.not.equal(0.3);
    expect(await quote({ from: 'AAA', to: 'CCC', fromAmount: '0.1', spreadBps: 0, rates: tenths, now })).to.include({ rate: '3', toAmount: '0.30' });
    expect(await quote({ from: 'USDC', to: 'USD', fromAmount: '0.00000001', spreadBps: 0, rates, now })).to.include({ toAmount: '0.00' });
    expect(await quote({ from: 'USD', to: 'USDC', fromAmount: '0.07', spreadBps: 10, rates, now })).to.include({ rate: '0.999', toAmount: '0.06993000' });
  });

  it('answers null for an unknown asset', async () => {
    expect(await quote({ from: 'USDC', to: 'GBP', fromAmount: '1', spreadBps: 0, rates, now })).to.equal(null);
    expect(await quote({ from: 'GBP', to: 'USDC', fromAmount: '1', spreadBps: 0, rates, now })).to.equal(null);
  });

  it('answers null when the source lists the assets but has no rate for the pair', async () => {
    const partial: RateSource = { name: 'partial', assets: () => rates.assets(), midRate: async () => null };
    expect(await quote({ from: 'USDC', to: 'COP', fromAmount: '1', spreadBps: 0, rates: partial, now })).to.equal(null);
  });

  it('refuses a bad amount or spread with QuoteInputError', async () => {
    for (const fromAmount of ['0', '-1', '1e3', 'abc', '', ' 1']) {
      expect(await rejection(quote({ from: 'USDC', to: 'COP', fromAmount, spreadBps: 0, rates, now })), fromAmount).to.be.instanceOf(QuoteInputError);
    }
    for (const spreadBps of [-1, 10_000, 1.5, Number.NaN]) {
      expect(await rejection(quote({ from: 'USDC', to: 'COP', fromAmount: '1', spreadBps, rates, now })), String(spreadBps)).to.be.instanceOf(QuoteInputError);
    }
  });

  it('quoteAtRate is deterministic given the id, rate and clock', () => {
    const input = { from: 'USDC', to: 'COP', fromAmount: '12.5', spreadBps: 100, midRate: '4000', toDecimals: 2, now, id: 'q-1' };
    const q = quoteAtRate(input);
    expect(q).to.deep.equal({
      id: 'q-1',
      fromAsset: 'USDC',
      toAsset: 'COP',
      fromAmount: '12.5',
      toAmount: '49500.00',
      rate: '3960',
      expiresAt: '2025-05-12T10:00:30.000Z',
    });
    expect(quoteAtRate(input)).to.deep.equal(q);
    expect(quoteAtRate({ ...input, id: undefined }).id).to.match(UUID_V4);
    expect(() => quoteAtRate({ ...input, midRate: '0' })).to.throw(QuoteInputError);
    expect(() => quoteAtRate({ ...input, toDecimals: -1 })).to.throw(QuoteInputError);
  });
});
