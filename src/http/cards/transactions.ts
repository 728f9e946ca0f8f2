import { type Static, Type } from '@sinclair/typebox';
import { CARD_REFUSALS, DECLINED_REASONS } from '../../domain/cards';
import { AMOUNT_REFUSALS, fixed, LEDGER_REFUSALS, money, ZERO } from '../../domain/ledger';
import { decodeCursor } from '../../projections/cards';
import { HttpError } from '../../platform/http/errors';
import { routeFor } from '../../platform/http/route';
import { IsoDateTime, StringEnum, Success, UUID_RE, Uuid } from '../schemas';
import { AmountField, requireAmount } from '../ledger';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['cards', 'ledger'] as const;
const route = routeFor<AppServices>()(USES);

const Nullable = <T extends ReturnType<typeof Type.String | typeof Type.Number>>(schema: T) => Type.Union([schema, Type.Null()]);

/** A card transaction (docs/interface.md, "Resources"): its three top-level fields always present. */
export const CardTransaction = Type.Object(
  {
    id: Uuid,
    type: Type.Literal('spend'),
    spend: Type.Object({
      amount: Type.Number({ description: 'In the billing currency (USD)' }),
      currency: Type.String({ description: 'ISO 4217' }),
      localAmount: Nullable(Type.Number()),
      localCurrency: Nullable(Type.String()),
      authorizedAmount: Nullable(Type.Number({ description: 'What was authorized: the cleared amount may differ' })),
      authorizationMethod: Nullable(Type.String()),
      memo: Nullable(Type.String()),
      receipt: Type.Boolean(),
      merchantName: Type.String(),
      merchantCategory: Type.String({ description: 'Label of the merchant category code' }),
      merchantCategoryCode: Type.String({ description: 'ISO 18245 MCC' }),
      merchantId: Nullable(Type.String()),
      enrichedMerchantIcon: Nullable(Type.String({ format: 'uri' })),
      enrichedMerchantName: Nullable(Type.String()),
      enrichedMerchantCategory: Nullable(Type.String()),
      cardId: Uuid,
      cardType: StringEnum(['virtual', 'physical'] as const),
      companyId: Type.String({ description: 'The partner the card holder belongs to' }),
      userId: Uuid,
      userFirstName: Type.String(),
      userLastName: Nullable(Type.String()),
      userEmail: Type.String(),
      status: StringEnum(['pending', 'completed', 'declined', 'reversed'] as const),
      declinedReason: Type.Union([StringEnum(DECLINED_REASONS), Type.Null()], { description: 'Set only when status is declined' }),
      authorizedAt: IsoDateTime,
      postedAt: Nullable(IsoDateTime),
    }),
  },
  { $id: 'CardTransaction' },
);

const CardParams = Type.Object({ cardId: Type.String({ maxLength: 100 }) });
const TransactionParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
const CURRENCY = { pattern: '^[A-Z]{3}$', 'x-error': 'localCurrency must be an ISO 4217 code (three capital letters)' };
const AuthorizationBody = Type.Object({
  amount: AmountField('amount'),
  currency: StringEnum(['USD'] as const, { description: 'The billing currency: a card spends USD from the USDC account, 1:1' }),
  merchantName: Type.String({ minLength: 1, maxLength: 200 }),
  merchantCategoryCode: Type.String({ pattern: '^[0-9]{4}$', 'x-error': 'merchantCategoryCode must be four digits (ISO 18245)' }),
  localAmount: Type.Optional(AmountField('localAmount')),
  localCurrency: Type.Optional(Type.String(CURRENCY)),
  authorizationMethod: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
});
const ClearBody = Type.Object({ amount: Type.Optional(AmountField('amount')) });

/** The sandbox card network: authorizations on a partner's cards, and their clearing or reversal. */
export const sandboxCardTransactionRoutes = [
  route<Static<typeof AuthorizationBody>, unknown, Static<typeof CardParams>>({
    method: 'post',
    path: '/sandbox/v1/cards/{cardId}/authorizations',
    auth: 'partner',
    tag: 'Sandbox',
    summary:
      'An authorization on one of the partner’s cards, decided in order: card status, available balance, spending limit. ' +
      'Approved: pending, its amount held on the account; otherwise declined with its declinedReason.',
    params: CardParams,
    body: AuthorizationBody,
    responses: {
      201: { description: 'The card transaction, pending or declined', schema: Success(CardTransaction) },
      404: { description: 'No such card of the partner' },
    },
    refuses: [CARD_REFUSALS.cardNotFound, ...AMOUNT_REFUSALS],
    async handler({ services, params, body, partnerId, command }) {
      if (!UUID_RE.test(params.cardId)) throw CARD_REFUSALS.cardNotFound();
      const { amount, localAmount, ...rest } = body;
      const input = {
        ...rest,
        amount: requireAmount(amount),
        ...(localAmount === undefined ? {} : { localAmount: requireAmount(localAmount, 'localAmount') }),
      };
      const view = await services.cards.spending.authorize(partnerId, params.cardId.toLowerCase(), input, command());
      return { status: 201, body: { success: true, data: view } };
    },
  }),
  settlement('clear'),
  settlement('reverse'),
];

function settlement(action: 'clear' | 'reverse') {
  return route<Static<typeof ClearBody>, unknown, Static<typeof TransactionParams>>({
    method: 'post',
    path: `/sandbox/v1/card-transactions/{id}/${action}`,
    auth: 'partner',
    tag: 'Sandbox',
    summary:
      action === 'clear'
        ? 'The merchant clears a pending card transaction, for its authorized amount or `amount`: more needs the balance for the difference, less returns the rest.'
        : 'A pending card transaction is reversed: its hold comes back to the account.',
    params: TransactionParams,
    ...(action === 'clear' ? { body: ClearBody } : {}),
    // A declined one is known from the read model only (it holds nothing on the ledger): it has the partner's authorizations.
    readsAfterWrites: 'cards',
    responses: {
      200: { description: 'The card transaction after it', schema: Success(CardTransaction) },
      400: { description: 'Cleared above the authorization without the balance for the difference' },
      404: { description: 'No such card transaction of the partner' },
      409: { description: 'Already cleared or reversed, or declined' },
    },
    refuses: [
      CARD_REFUSALS.transactionNotFound,
      ...(action === 'clear' ? [CARD_REFUSALS.clearForbidden, LEDGER_REFUSALS.insufficientBalance, ...AMOUNT_REFUSALS] : [CARD_REFUSALS.reverseForbidden]),
    ],
    async handler({ services, params, body, partnerId, command }) {
      if (!UUID_RE.test(params.id)) throw CARD_REFUSALS.transactionNotFound();
      const id = params.id.toLowerCase();
      const spending = services.cards.spending;
      const view =
        action === 'clear'
          ? await spending.clear(partnerId, id, body?.amount === undefined ? undefined : requireAmount(body.amount), command())
          : await spending.reverse(partnerId, id, command());
      return { status: 200, body: { success: true, data: view } };
    },
  });
}

const TransactionsQuery = Type.Object({
  cardId: Type.Optional(Type.String({ format: 'uuid', 'x-error': 'cardId must be a UUID' })),
  type: Type.Optional(Type.String({ maxLength: 40 })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
});
const Balance = Type.Object({ currency: Type.Literal('USD'), available: Type.String(), pending: Type.String() }, { $id: 'CardBalance' });

/** The token user's card money: balance and card transactions. */
export const cardTransactionRoutes = [
  route({
    method: 'get',
    path: '/api/v1/cards/balance',
    auth: 'bearer',
    tag: 'Cards',
    summary: 'What the card can spend, by currency: available (the USDC account’s balance, 1:1 in USD) and pending (held by pending card transactions).',
    readsAfterWrites: ['ledger', 'cards'],
    responses: { 200: { description: 'Balances', schema: Success(Type.Array(Balance)) }, 404: { description: 'No card' } },
    refuses: [CARD_REFUSALS.cardNotFound],
    async handler({ services, userId }) {
      await services.cards.cards.primaryCard(userId);
      // Available as the account shows it (credits - debits, holds included): what a card can still spend.
      const [account] = await services.ledger.reads.accountsOf(userId);
      const pending = await services.cards.spending.queries.pendingOf(userId);
      const available = account ? money(account.credits).minus(account.debits) : ZERO;
      return { status: 200, body: { success: true, data: [{ currency: 'USD', available: fixed(available), pending: fixed(pending) }] } };
    },
  }),
  route<unknown, Static<typeof TransactionsQuery>>({
    method: 'get',
    path: '/api/v1/cards/transactions',
    auth: 'bearer',
    tag: 'Cards',
    summary: 'The user’s card transactions, newest first (of one card with `cardId`); `cursor` from the previous page walks every item exactly once.',
    query: TransactionsQuery,
    readsAfterWrites: 'cards',
    responses: {
      200: { description: 'A page', schema: Type.Object({ items: Type.Array(CardTransaction), nextCursor: Type.Union([Type.String(), Type.Null()]) }) },
      400: { description: 'A cursor this service did not hand out' },
      403: { description: '`cardId` is another user’s card (of the same partner)' },
      404: { description: 'No card, or `cardId` is no card of the partner’s' },
    },
    refuses: [CARD_REFUSALS.cardNotOwned, CARD_REFUSALS.cardNotFound],
    async handler({ services, userId, partnerId, query }) {
      const cardId = query.cardId?.toLowerCase();
      if (cardId) await services.cards.cards.requireOwnCard(cardId, { userId, partnerId });
      else await services.cards.cards.primaryCard(userId);
      const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
      if (after === null) throw new HttpError(400, 'cursor is not valid', { code: 'validation_error', details: [{ field: 'cursor', rule: 'format' }] });
      // `spend` is the only type of card transaction there is.
      if (query.type !== undefined && query.type !== 'spend') return { status: 200, body: { items: [], nextCursor: null } };
      const page = await services.cards.spending.queries.list(userId, { ...(cardId ? { cardId } : {}), ...(after ? { after } : {}), limit: query.limit });
      return { status: 200, body: page };
    },
  }),
];
