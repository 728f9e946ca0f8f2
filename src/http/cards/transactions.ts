import { type Static, Type } from '@sinclair/typebox';
import { CARD_REFUSALS, DECLINED_REASONS } from '../../domain/cards';
import { AMOUNT_REFUSALS, fixed, LEDGER_REFUSALS, money, ZERO } from '../../domain/ledger';
import { decodeCursor } from '../../projections/cards';
import { HttpError } from '../../platform/http/errors';
import { routeFor } from '../../platform/http/route';
import { StringEnum, Success, UUID_RE } from '../schemas';
import { AmountField, requireAmount } from '../ledger';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['cards', 'ledger'] as const;
const route = routeFor<AppServices>()(USES);

const Nullable = <T extends ReturnType<typeof Type.String | typeof Type.Number>>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });
/** What nothing supplies yet (docs/decisions.md, "Cards"). */
const NOT_SUPPLIED = 'Always null: nothing supplies it yet';

/** A card transaction (docs/interface.md, "Resources"): its three top-level fields always present. */
export const CardTransaction = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The card transaction’s id (a UUID); an approved one’s `CARD` ledger transaction has the same uuid' }),
    type: Type.Literal('spend', { description: 'Always `spend`: the only kind of card transaction' }),
    spend: Type.Object(
      {
        amount: Type.Number({
          description: 'In the billing currency (USD), a JSON number: the authorized amount, the cleared amount once completed',
        }),
        currency: Type.String({ description: 'The billing currency, ISO 4217: `USD`' }),
        localAmount: Nullable(Type.Number(), 'The amount in the merchant’s currency, as the card network sent it; null when it sent none'),
        localCurrency: Nullable(Type.String(), 'The merchant’s currency (ISO 4217), as the card network sent it; null when it sent none'),
        authorizedAmount: Nullable(Type.Number(), 'What was authorized, in USD: the cleared amount may differ'),
        authorizationMethod: Nullable(Type.String(), 'How the card was used, as the card network reported it; null when it did not say'),
        memo: Nullable(Type.String(), NOT_SUPPLIED),
        receipt: Type.Boolean({ description: 'Always false: no receipt is kept' }),
        merchantName: Type.String({ description: 'The merchant’s name, as the card network sent it' }),
        merchantCategory: Type.String({ description: 'Label of the merchant category code' }),
        merchantCategoryCode: Type.String({ description: 'ISO 18245 MCC' }),
        merchantId: Nullable(Type.String(), NOT_SUPPLIED),
        enrichedMerchantIcon: Nullable(Type.String({ format: 'uri' }), NOT_SUPPLIED),
        enrichedMerchantName: Nullable(Type.String(), NOT_SUPPLIED),
        enrichedMerchantCategory: Nullable(Type.String(), NOT_SUPPLIED),
        cardId: Type.String({ format: 'uuid', description: 'The card it was spent with' }),
        cardType: StringEnum(['virtual', 'physical'] as const, { description: 'That card’s kind: `virtual` or `physical`' }),
        companyId: Type.String({ description: 'The partner the card holder belongs to' }),
        userId: Type.String({ format: 'uuid', description: 'The card holder' }),
        userFirstName: Nullable(Type.String(), 'The holder’s first name, from their profile (empty when it has none); null once the holder is erased'),
        userLastName: Nullable(Type.String(), 'The holder’s last name, from their profile; null when it has none, and once the holder is erased'),
        userEmail: Nullable(Type.String(), 'The holder’s email address; null once the holder is erased'),
        status: StringEnum(['pending', 'completed', 'declined', 'reversed'] as const, {
          description: '`pending` (authorized, its amount held), `completed` (cleared), `declined` (nothing held) or `reversed` (the hold returned)',
        }),
        declinedReason: Type.Union([StringEnum(DECLINED_REASONS), Type.Null()], { description: 'Set only when status is declined' }),
        authorizedAt: Type.String({ format: 'date-time', description: 'When the authorization was decided (ISO 8601, UTC)' }),
        postedAt: Nullable(Type.String({ format: 'date-time' }), 'When it was cleared (ISO 8601, UTC); null unless completed'),
      },
      { description: 'What was spent, where, and how it stands' },
    ),
  },
  { $id: 'CardTransaction' },
);

const CardParams = Type.Object({
  cardId: Type.String({ maxLength: 100, description: 'The card’s id (a UUID); unknown or another partner’s is 404' }),
});
const TransactionParams = Type.Object({
  id: Type.String({ maxLength: 100, description: 'The card transaction’s id (a UUID), from its authorization’s answer; unknown or another partner’s is 404' }),
});
const CURRENCY = { pattern: '^[A-Z]{3}$', 'x-error': 'localCurrency must be an ISO 4217 code (three capital letters)' };
const AuthorizationBody = Type.Object({
  amount: {
    ...AmountField('amount'),
    description: 'The amount to authorize, in USD: a decimal string such as "2.50" or a JSON number; held on the account when approved',
  },
  currency: StringEnum(['USD'] as const, { description: 'The billing currency: a card spends USD from the USDC account, 1:1' }),
  merchantName: Type.String({ minLength: 1, maxLength: 200, description: 'The merchant’s name, shown on the card transaction' }),
  merchantCategoryCode: Type.String({
    pattern: '^[0-9]{4}$',
    'x-error': 'merchantCategoryCode must be four digits (ISO 18245)',
    description: 'The merchant category code: four digits (ISO 18245)',
  }),
  localAmount: Type.Optional({
    ...AmountField('localAmount'),
    description: 'Optional: the amount in the merchant’s currency: recorded, not converted or compared with `amount`',
  }),
  localCurrency: Type.Optional(Type.String({ ...CURRENCY, description: 'Optional: the merchant’s currency, an ISO 4217 code (three capital letters)' })),
  authorizationMethod: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'Optional: how the card was used, kept as sent' })),
});
const ClearBody = Type.Object({
  amount: Type.Optional({
    ...AmountField('amount'),
    description:
      'Optional: what the merchant takes, in USD (a decimal string or a JSON number); without it, the authorized amount. More needs the balance for the difference, less returns the rest',
  }),
});

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
  cardId: Type.Optional(
    Type.String({
      format: 'uuid',
      'x-error': 'cardId must be a UUID',
      description: 'Only this card’s transactions (one of the user’s cards); without it, all the user’s cards',
    }),
  ),
  type: Type.Optional(Type.String({ maxLength: 40, description: 'Only this type: `spend` is the only one, any other gives an empty page' })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Items per page, 1-100 (default 50)' }),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The previous page’s `nextCursor` (opaque); leave it out for the first page' })),
});
const Balance = Type.Object(
  {
    currency: Type.Literal('USD', { description: 'Always `USD`: the card spends the USDC account 1:1' }),
    available: Type.String({
      description: 'What the card can still spend: the USDC account’s credits minus debits, pending holds already taken out; a decimal string with 8 places',
    }),
    pending: Type.String({ description: 'What pending card transactions hold, in USD; a decimal string with 8 places' }),
  },
  { $id: 'CardBalance' },
);

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
      200: {
        description: 'A page',
        schema: Type.Object({
          items: Type.Array(CardTransaction, { description: 'The card transactions, newest first' }),
          nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Send it as `cursor` for the next page; null on the last page' }),
        }),
      },
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
