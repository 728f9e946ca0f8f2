import { type Static, Type } from '@sinclair/typebox';
import { quote } from '../../providers/ledger/rates/quote';
import { amountRefusalList, LEDGER_REFUSALS as L } from '../../domain/ledger';
import { routeFor } from '../../platform/http/route';
import { Success } from '../schemas';
import { AmountField, asNumber, requireAmount } from './routes';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['config', 'providers'] as const;
type Services = Pick<AppServices, (typeof USES)[number]>;
const route = routeFor<AppServices>()(USES);

const QuoteBody = Type.Object({
  fromAsset: Type.String({
    minLength: 1,
    maxLength: 10,
    description: 'The asset to convert from: a code of GET /api/v1/exchanges/assets/public, as listed (`USDC`)',
  }),
  toAsset: Type.String({
    minLength: 1,
    maxLength: 10,
    description: 'The asset to convert to: a code of GET /api/v1/exchanges/assets/public, as listed (`COP`)',
  }),
  fromAmount: AmountField('fromAmount'),
});
const QuoteView = Type.Object(
  {
    id: Type.String({ description: 'A random UUID naming this quote; it is not stored' }),
    fromAsset: Type.String({ description: 'The asset converted from, as asked' }),
    toAsset: Type.String({ description: 'The asset converted to, as asked' }),
    fromAmount: Type.Number({ description: 'The amount given, in `fromAsset`’s units, as a JSON number' }),
    toAmount: Type.Number({ description: '`fromAmount` times `rate`, rounded down to `toAsset`’s decimals, as a JSON number' }),
    rate: Type.Number({
      description: 'Units of `toAsset` one unit of `fromAsset` buys, after the spread (`EXCHANGE_SPREAD_BPS`, 50 basis points by default), as a JSON number',
    }),
    expiresAt: Type.String({ description: 'When the quote expires, 30 seconds after it was made: ISO 8601 UTC' }),
  },
  { $id: 'Quote' },
);

/** A quote's refusals: its amount (`fromAmount`), an asset the rates do not know. */
const QUOTE_REFUSALS = [...amountRefusalList('fromAmount'), L.unsupportedAsset];

async function quoteReply(services: Services, body: Static<typeof QuoteBody>) {
  const fromAmount = requireAmount(body.fromAmount, 'fromAmount');
  const known = new Set(services.providers.rates.assets().map((a) => a.asset));
  for (const asset of [body.fromAsset, body.toAsset]) if (!known.has(asset)) throw L.unsupportedAsset(asset);
  const q = await quote({
    from: body.fromAsset,
    to: body.toAsset,
    fromAmount,
    spreadBps: services.config.exchangeSpreadBps,
    rates: services.providers.rates,
    now: new Date(),
  });
  if (!q) throw L.unsupportedAsset(body.toAsset);
  return {
    status: 200,
    body: { success: true, data: { ...q, fromAmount: asNumber(q.fromAmount), toAmount: asNumber(q.toAmount), rate: asNumber(q.rate) } },
  };
}

export const exchangeRoutes = [
  route({
    method: 'get',
    path: '/api/v1/exchanges/assets/public',
    auth: 'public',
    tag: 'Exchange',
    summary: 'Supported assets.',
    responses: {
      200: {
        description: 'Assets',
        schema: Success(
          Type.Array(
            Type.Object(
              {
                asset: Type.String({ description: 'The asset’s code (`USDC`, `COP`, ...), as quotes and payouts take it' }),
                name: Type.String({ description: 'The asset’s name in English (`USD Coin`)' }),
                decimals: Type.Integer({
                  description: 'Decimal places of the asset’s amounts (8 for USDC, 2 for the currencies); a payout in it has at most these',
                }),
              },
              { $id: 'Asset' },
            ),
          ),
        ),
      },
    },
    async handler({ services }) {
      return { status: 200, body: { success: true, data: services.providers.rates.assets() } };
    },
  }),
  route<Static<typeof QuoteBody>>({
    method: 'post',
    path: '/api/v1/exchanges/quote/public',
    auth: 'public',
    tag: 'Exchange',
    summary: 'An exchange quote between two assets (after spread); it lives 30 seconds.',
    body: QuoteBody,
    responses: { 200: { description: 'Quote', schema: Success(QuoteView) } },
    refuses: QUOTE_REFUSALS,
    async handler({ services, body }) {
      return quoteReply(services, body);
    },
  }),
  route<Static<typeof QuoteBody>>({
    method: 'post',
    path: '/api/v1/user/exchange/calculate',
    auth: 'bearer',
    tag: 'Exchange',
    summary: 'The public quote, for a logged-in user.',
    body: QuoteBody,
    responses: { 200: { description: 'Quote', schema: Success(QuoteView) } },
    refuses: QUOTE_REFUSALS,
    async handler({ services, body }) {
      return quoteReply(services, body);
    },
  }),
];
