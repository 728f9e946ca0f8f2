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
  fromAsset: Type.String({ minLength: 1, maxLength: 10 }),
  toAsset: Type.String({ minLength: 1, maxLength: 10 }),
  fromAmount: AmountField('fromAmount'),
});
const QuoteView = Type.Object(
  {
    id: Type.String(),
    fromAsset: Type.String(),
    toAsset: Type.String(),
    fromAmount: Type.Number(),
    toAmount: Type.Number(),
    rate: Type.Number(),
    expiresAt: Type.String(),
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
        schema: Success(Type.Array(Type.Object({ asset: Type.String(), name: Type.String(), decimals: Type.Integer() }, { $id: 'Asset' }))),
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
