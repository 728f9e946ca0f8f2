import { type Static, Type } from '@sinclair/typebox';
import type { RequestContext } from '../../platform/http/route';
import {
  AMOUNT_REFUSALS,
  type Amount,
  type AmountProblem,
  amountRefusalsFor,
  checkAmount,
  isImpreciseNumber,
  LEDGER_REFUSALS as L,
  parseAmount,
} from '../../domain/ledger';
import { PAYOUT_REFUSED } from '../../app/ledger';
import { HttpError } from '../../platform/http/errors';
import { toErrorReply } from '../../platform/http/error-reply';
import { routeFor } from '../../platform/http/route';
import { FilledText, MAX_ID, PageMeta, PageQuery, pageMeta, instantOf, parseInstant, StringEnum, UUID_RE } from '../schemas';
import type { AppServices } from '../services';

/** The services these routes use. */
const USES = ['ledger'] as const;
const route = routeFor<AppServices>()(USES);

/** Amounts arrive as JSON numbers (the interface) or decimal strings; either way never through float math. */
export const AmountField = (name: string) =>
  Type.Union(
    [
      Type.String({ maxLength: 40, description: 'A decimal string, e.g. "10.50": exact, and the way to send it' }),
      Type.Number({ description: 'A JSON number, taken when it has at most 15 significant digits' }),
    ],
    {
      'x-error': `${name} must be a number`,
      description: 'A decimal amount in the asset’s units (never smallest units): a decimal string such as "10.50", or a JSON number',
    },
  );

/** The refusal of each amount problem (domain/ledger/refusals.ts, amountRefusalsFor). */
const AMOUNT_PROBLEM = {
  not_a_number: 'amountNotANumber',
  not_positive: 'amountNotPositive',
  too_many_decimals: 'amountTooPrecise',
  too_large: 'amountTooLarge',
} as const satisfies Record<AmountProblem, string>;

/** An amount as a request sent it, as a plain decimal; refused (amountRefusalsFor(name)) naming the field `name`. */
export function requireAmount(value: unknown, name = 'amount'): string {
  const refusals = amountRefusalsFor(name);
  if (isImpreciseNumber(value)) throw refusals.amountImpreciseNumber();
  const amount = parseAmount(value);
  const problem = checkAmount(amount);
  if (problem) throw refusals[AMOUNT_PROBLEM[problem]]();
  return (amount as Amount).toFixed();
}

/** What every keyed money call (transfer, deposit) can be refused for, besides its own rules. */
const KEYED_REFUSALS = [...AMOUNT_REFUSALS, L.idempotencyKeysDiffer, L.duplicateRequestInProgress, L.idempotencyKeyReused] as const;

/** The interface types these as JSON numbers; the value is exact for amounts of up to 15 significant digits. */
export const asNumber = (decimal: string): number => Number(decimal);

const AccountId = (name: string, options: Record<string, string> = {}) =>
  Type.Integer({ minimum: 1, maximum: MAX_ID, 'x-error': `${name} must be an account id (a positive integer)`, ...options });

export const Account = Type.Object(
  {
    id: Type.Integer({ description: 'The account number: what `toAccountId`, `fromAccountId` and `accountId` take' }),
    asset: Type.String({ description: 'The account’s asset: `USDC`, the asset of every account' }),
    type: Type.String({ description: 'The account’s type: `LIABILITY`, the type of every user account' }),
    credits: Type.String({ description: 'Everything credited to the account, in USDC: a decimal string with 8 places' }),
    debits: Type.String({
      description:
        'Everything debited from the account, holds included (payouts not yet settled, pending card spends), in USDC: a decimal string with 8 places. The balance is credits minus debits',
    }),
  },
  { $id: 'Account' },
);
export const Transaction = Type.Object(
  {
    id: Type.Integer({ description: 'The transaction’s number in the ledger, an integer (routes name a transaction by its `uuid`)' }),
    uuid: Type.String({
      format: 'uuid',
      description:
        'The transaction’s id, what GET /api/v1/transactions/{id} takes: a deposit’s `transactionId`, a payout’s `transactionId`, a card spend’s card transaction id',
    }),
    description: Type.String({
      description:
        'The description sent with the request, or one the ledger wrote, e.g. `Payout of <amount> <asset>`, `Card purchase at <merchant>`, `Reversal of payout <uuid>`',
    }),
    status: StringEnum(['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'REVERSED'] as const, {
      description:
        '`PENDING`: a deposit not yet confirmed, a payout held but not yet taken by its provider, a card spend not yet cleared; `PROCESSING`: a payout its provider took; `COMPLETED`: done (a confirmed deposit, a transfer, a settled payout, a cleared card spend); `FAILED`: a deposit or payout that failed; `REVERSED`: a reversed card spend, or the credit that returns funds (of a failed payout, a reversed card spend)',
    }),
    amount: Type.String({
      description: 'The amount in USDC, a decimal string with 8 places (a payout’s is the USDC debited for it, not the amount sent in its asset)',
    }),
    debitAccountId: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The account the amount left; null when it came from outside the ledger (a deposit, a credit returning funds)',
    }),
    creditAccountId: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The account the amount went to; null when it left the ledger (a payout, a card spend)',
    }),
    created: Type.String({ description: 'When the transaction was made: ISO 8601 UTC, with milliseconds' }),
    /** When it last changed: always in the single read (GET transactions/{id}); lists leave it out. */
    updated: Type.String({
      description:
        'When the transaction last changed (its status), else when it was made: ISO 8601 UTC, with milliseconds. Only in the single read; lists leave it out',
    }),
  },
  { $id: 'Transaction' },
);
/** In lists: without `updated`. */
export const TransactionListItem = Type.Omit(Transaction, ['updated'], { $id: 'TransactionListItem' });

const BalanceQuery = Type.Object({
  ...PageQuery,
  at: Type.Optional(
    Type.String({
      format: 'date-time',
      'x-error': 'at must be an ISO 8601 date-time',
      description: 'An ISO 8601 date-time: the balances as they were at that instant, computed from the event log. Left out, the balances now',
    }),
  ),
});

const PAYER_REQUIRED = 'Payer information is required for deposits';
const PAYER_FIELDS_REQUIRED = 'Payer document type and number are required for deposits';
/** Not empty, not only whitespace: a provider refuses a blank document. */
const PayerField = (maxLength: number, description: string) =>
  Type.String({ minLength: 1, maxLength, pattern: '\\S', 'x-error': PAYER_FIELDS_REQUIRED, 'x-required-error': PAYER_FIELDS_REQUIRED, description });
const DepositBody = Type.Object({
  toAccountId: AccountId('toAccountId', { description: 'The token user’s account to credit once the provider confirms the payment' }),
  amount: AmountField('amount'),
  currency: Type.String({ minLength: 1, maxLength: 10, description: 'The deposit’s currency: `USDC`, the account’s asset (anything else is 400)' }),
  provider: Type.String({
    minLength: 1,
    maxLength: 50,
    description: 'The payment provider that hosts the payment page: `mock`, the sandbox’s (the only one today)',
  }),
  description: Type.String({
    maxLength: 500,
    'x-error': 'description must be a string',
    'x-required-error': 'description must be a string',
    description: 'Free text for the deposit’s transaction, also handed to the payment provider; at most 500 characters, may be empty',
  }),
  metadata: Type.Object(
    {
      payer: Type.Object(
        {
          documentType: PayerField(20, 'The payer’s identity document type, e.g. `CC`: 1-20 characters, not only spaces'),
          documentNumber: PayerField(50, 'The payer’s identity document number: 1-50 characters, not only spaces'),
        },
        { 'x-error': PAYER_REQUIRED, 'x-required-error': PAYER_REQUIRED, description: 'Who pays, handed to the payment provider' },
      ),
    },
    { 'x-error': PAYER_REQUIRED, 'x-required-error': PAYER_REQUIRED, description: 'The deposit’s payer: `payer` is required' },
  ),
});

/**
 * A list bound as an instant, inclusive. A date alone is its first instant, UTC, for either bound (as
 * on every route that filters by date: docs/decisions.md), so day D is from=D&to=D+1. A date-time
 * without an offset is UTC. A date that does not exist (2024-02-30, hour 25) or lies outside
 * 1970-9999 is a 400, not the database's error.
 */
export function dateBound(value: string, name: 'from' | 'to'): { at: string; inclusive: boolean } {
  return { at: new Date(parseInstant(value, name).ms).toISOString(), inclusive: true };
}

const DateParam = (name: string, description: string) =>
  Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}([T ][0-9:.]+(Z|[+-]\\d{2}:?\\d{2})?)?$', 'x-error': `${name} must be an ISO 8601 date`, description });
const TransactionsQuery = Type.Object({
  accountId: AccountId('accountId', {
    'x-required-error': 'accountId is required',
    description: 'One of the token user’s accounts, whose transactions are listed',
  }),
  ...PageQuery,
  from: Type.Optional(
    DateParam(
      'from',
      'Lists transactions made at or after this instant: an ISO 8601 date-time (UTC when it has no offset), or a date alone (its first instant, UTC)',
    ),
  ),
  to: Type.Optional(
    DateParam(
      'to',
      'Lists transactions made up to this instant, inclusive: an ISO 8601 date-time (UTC when it has no offset), or a date alone (its first instant, UTC: day D is from=D&to=D+1)',
    ),
  ),
});
const TransactionParams = Type.Object({
  id: Type.String({
    maxLength: 100,
    description: 'The transaction’s `uuid` (a deposit’s or payout’s `transactionId`): one unknown or another partner’s is 404, another user’s is 403',
  }),
});

/**
 * Optional on the routes that take it: the card routes' header, as docs/decisions.md ("Errors") words its messages,
 * or the IETF one (`Idempotency-Key`); both name the same key.
 */
export const IdempotencyHeader = Type.Object({
  'x-idempotency-key': Type.Optional(
    Type.String({
      format: 'uuid',
      'x-error': 'x-idempotency-key must be a UUID',
      description:
        'A UUID you make for this request, per partner: the same request sent again answers the first one, with `Idempotent-Replayed: true`. The same key as `Idempotency-Key`',
    }),
  ),
  'idempotency-key': Type.Optional(
    Type.String({
      format: 'uuid',
      'x-error': 'Idempotency-Key must be a UUID',
      description: 'The IETF name of `x-idempotency-key`: the same key. Both sent must be the same UUID (else 400)',
    }),
  ),
});

/** The request's idempotency key from either header; 400 when both are sent and differ. */
export function idempotencyKeyOf(headers: Record<string, string | undefined>): string | undefined {
  const ietf = headers['idempotency-key'];
  const legacy = headers['x-idempotency-key'];
  if (ietf !== undefined && legacy !== undefined && ietf.toLowerCase() !== legacy.toLowerCase()) throw L.idempotencyKeysDiffer();
  return ietf ?? legacy;
}

/** The code of a payout's 502: its provider refused it, and its held funds were returned. */
export const PAYOUT_REFUSED_BY_PROVIDER = 'payout_refused_by_provider';

/** On an answer given again for a request made before (IETF idempotency draft, as Stripe sends it). */
export const REPLAYED = { 'Idempotent-Replayed': 'true' };

const TransferBody = Type.Object({
  fromAccountId: Type.Optional(AccountId('fromAccountId', { description: 'The token user’s account to move funds from; left out, the user’s account' })),
  toAccountId: AccountId('toAccountId', { description: 'The account to credit: an account of a user of the same partner, not the source account' }),
  amount: AmountField('amount'),
  description: Type.String({
    maxLength: 500,
    'x-error': 'description must be a string',
    'x-required-error': 'description must be a string',
    description: 'Free text for the transfer’s transaction: at most 500 characters, may be empty',
  }),
});

const PayoutBody = Type.Object({
  transactionId: Type.String({
    format: 'uuid',
    'x-error': 'transactionId must be a UUID',
    description: 'A UUID you make for this payout: its idempotency key, and its ledger transaction’s `uuid` (GET /api/v1/transactions/{id})',
  }),
  amount: AmountField('amount'),
  asset: Type.String({
    minLength: 1,
    maxLength: 10,
    description:
      'The asset paid out, a code of GET /api/v1/exchanges/assets/public (`COP`, `USD`, ...); the USDC debited is amount / the USDC-to-asset mid rate (no spread), rounded up to 8 places',
  }),
  description: Type.Optional(
    Type.String({
      maxLength: 500,
      description:
        'Free text for the payout’s transaction, handed to the provider too; at most 500 characters. Left out, the transaction reads `Payout of <amount> <asset>`',
    }),
  ),
  provider: Type.String({ minLength: 1, maxLength: 50, description: 'The payout provider: `mock`, the sandbox’s (the only one today)' }),
  source: Type.Object(
    { metadata: Type.Object({}, { additionalProperties: true, description: 'Keys the payout provider defines, handed to it as sent (may be empty)' }) },
    {
      additionalProperties: true,
      description: 'Where the payout comes from, as the provider wants it: an object handed to it as sent; `metadata` is required',
    },
  ),
  destination: Type.Object(
    {
      accountNumber: { ...FilledText('destination.accountNumber', 50), description: 'The bank account number: 1-50 characters, not only spaces' },
      accountType: StringEnum(['H', 'C'] as const, { description: 'The bank account’s type: `H` savings (ahorros) or `C` checking (corriente)' }),
      bankName: Type.Optional(Type.String({ maxLength: 100, description: 'The bank’s name, at most 100 characters' })),
      bankNumber: Type.Optional(Type.String({ maxLength: 20, description: 'The bank’s code, at most 20 characters' })),
      ownerName: { ...FilledText('destination.ownerName', 200), description: 'The account holder’s name: 1-200 characters, not only spaces' },
      ownerDocumentType: StringEnum(['CC', 'CE', 'NIT', 'PA', 'PPT'] as const, {
        description:
          'The holder’s identity document type: `CC` (cédula de ciudadanía), `CE` (cédula de extranjería), `NIT` (tax id), `PA` (passport), `PPT` (Permiso por Protección Temporal)',
      }),
      ownerDocumentNumber: {
        ...FilledText('destination.ownerDocumentNumber', 50),
        description: 'The holder’s identity document number: 1-50 characters, not only spaces',
      },
    },
    { description: 'The bank account to pay' },
  ),
});

const me = (ctx: RequestContext) => ({ userId: ctx.userId, partnerId: ctx.partnerId });

export const ledgerRoutes = [
  route({
    method: 'get',
    path: '/api/v1/user/accounts',
    auth: 'bearer',
    tag: 'Accounts',
    summary: "The token user's accounts (one USDC account, opened at first login).",
    responses: {
      200: {
        description: 'Accounts',
        schema: Type.Object({
          items: Type.Array(Account, { description: 'The token user’s accounts, by account number' }),
          meta: Type.Object(
            {
              totalItems: Type.Integer({ description: 'How many accounts the user has (one today)' }),
              currentPage: Type.Integer({ description: 'Always 1: this list is not paged' }),
            },
            { description: 'The list’s size' },
          ),
        }),
      },
    },
    readsAfterWrites: 'ledger',
    async handler({ services, userId }) {
      const items = await services.ledger.reads.accountsOf(userId);
      return { status: 200, body: { items, meta: { totalItems: items.length, currentPage: 1 } } };
    },
  }),
  route({
    method: 'post',
    path: '/api/v1/user/accounts',
    auth: 'bearer',
    tag: 'Accounts',
    deprecated: true,
    summary: 'Deprecated: accounts are created automatically at first login.',
    responses: { 410: { description: 'Gone' } },
    refuses: [L.accountsCreatedAtLogin],
    async handler() {
      throw L.accountsCreatedAtLogin();
    },
  }),
  route<unknown, Static<typeof BalanceQuery>>({
    method: 'get',
    path: '/api/v1/user/balance',
    auth: 'bearer',
    tag: 'Accounts',
    summary: 'Balances (credits and debits); with `at`, as they were at that instant, computed from the log.',
    query: BalanceQuery,
    responses: {
      200: {
        description: 'Balances',
        schema: Type.Object({
          items: Type.Array(Account, { description: 'The token user’s accounts on this page, by account number; with `at`, their balances at that instant' }),
          meta: PageMeta,
        }),
      },
    },
    readsAfterWrites: 'ledger',
    async handler({ services, userId, query }) {
      let items = await services.ledger.reads.accountsOf(userId);
      if (query.at) {
        const at = new Date(instantOf(query.at, 'at'));
        items = await Promise.all(items.map(async (a) => ({ ...a, ...(await services.ledger.accounts.balanceAt(a.id, at)) })));
      }
      const page = items.slice((query.page - 1) * query.limit, query.page * query.limit);
      return { status: 200, body: { items: page, meta: pageMeta(items.length, query.page, query.limit) } };
    },
  }),
  route<Static<typeof DepositBody>>({
    method: 'post',
    path: '/api/v1/transactions/deposit',
    auth: 'bearer',
    tag: 'Transactions',
    summary: 'Create a hosted payment link; the balance is credited only when the provider confirms.',
    description:
      'With `Idempotency-Key` or `x-idempotency-key` (a UUID, per partner), the same request sent again answers the first deposit and its payment link, ' +
      'with `Idempotent-Replayed: true`: what to send when an answer was lost or was a 503. The same key with another body (or used by a transfer) is 422; ' +
      'while the first is still running, 400; both headers with different keys, 400.',
    headers: IdempotencyHeader,
    body: DepositBody,
    responses: {
      201: {
        description: 'Payment link',
        schema: Type.Object(
          {
            transactionId: Type.String({
              format: 'uuid',
              description: 'The deposit’s transaction `uuid`: follow it with GET /api/v1/transactions/{id} and the `deposit.*` notifications',
            }),
            status: Type.Literal('PENDING', { description: 'Always `PENDING`: the account is credited once the provider confirms the payment' }),
            inferredTransactionType: Type.Literal('DEPOSIT', { description: 'Always `DEPOSIT`' }),
            paymentLink: Type.String({
              description:
                'The provider’s hosted page where the payer pays or cancels; the mock provider’s is a path relative to the service: `/api/pay/<paymentId>?transactionId=<uuid>&amount=<amount>&currency=USDC`',
            }),
            message: Type.String({ description: 'A sentence for people; the same on every deposit' }),
          },
          { $id: 'DepositCreated' },
        ),
      },
      403: { description: 'The account is not the token user’s' },
      422: { description: 'The idempotency key was used with another request' },
    },
    refuses: [...KEYED_REFUSALS, L.currencyMismatch, L.unsupportedPaymentProvider, L.accountNotFound, L.accountOfAnotherUser],
    async handler(ctx) {
      const { body, services } = ctx;
      const amount = requireAmount(body.amount);
      if (body.currency !== 'USDC') throw L.currencyMismatch();
      const { replayed, ...created } = await services.ledger.deposits.deposit(
        me(ctx),
        { toAccountId: body.toAccountId, amount, currency: body.currency, provider: body.provider, description: body.description, payer: body.metadata.payer },
        ctx.command(),
        idempotencyKeyOf(ctx.headers),
      );
      return {
        status: 201,
        ...(replayed ? { headers: REPLAYED } : {}),
        body: {
          ...created,
          status: 'PENDING',
          inferredTransactionType: 'DEPOSIT',
          message: 'Deposit created; the balance is credited once the payment is confirmed',
        },
      };
    },
  }),
  route<unknown, Static<typeof TransactionsQuery>>({
    method: 'get',
    path: '/api/v1/transactions',
    auth: 'bearer',
    tag: 'Transactions',
    summary: 'Transactions of one of the token user’s accounts, newest first.',
    query: TransactionsQuery,
    readsAfterWrites: 'ledger',
    responses: {
      200: { description: 'A plain array of transactions', schema: Type.Array(TransactionListItem) },
      403: { description: 'The account is not the token user’s' },
    },
    refuses: [L.accountNotFound, L.accountOfAnotherUser],
    async handler(ctx) {
      const { services, query } = ctx;
      const from = query.from === undefined ? undefined : dateBound(query.from, 'from').at;
      const to = query.to === undefined ? undefined : dateBound(query.to, 'to');
      const accountId = await services.ledger.accounts.ownAccount(ctx.userId, ctx.partnerId, query.accountId);
      return { status: 200, body: await services.ledger.reads.listTransactions(accountId, { limit: query.limit, page: query.page, from, to }) };
    },
  }),
  route<unknown, unknown, Static<typeof TransactionParams>>({
    method: 'get',
    path: '/api/v1/transactions/{id}',
    auth: 'bearer',
    tag: 'Transactions',
    summary: 'One transaction by its uuid, with `updated`.',
    params: TransactionParams,
    readsAfterWrites: 'ledger',
    responses: { 200: { description: 'The transaction', schema: Transaction }, 403: { description: 'The transaction is not the token user’s' } },
    refuses: [L.transactionNotFound, L.transactionOfAnotherUser],
    async handler(ctx) {
      if (!UUID_RE.test(ctx.params.id)) throw L.transactionNotFound();
      return { status: 200, body: await ctx.services.ledger.reads.getTransaction(ctx.params.id.toLowerCase(), me(ctx)) };
    },
  }),
  route<Static<typeof TransferBody>>({
    method: 'post',
    path: '/api/v1/transactions/transfer',
    auth: 'bearer',
    tag: 'Transactions',
    summary: 'Move funds to another account of the same partner; COMPLETED at once.',
    description:
      'With `Idempotency-Key` or `x-idempotency-key` (a UUID, per partner), the same request sent again answers the first transfer and moves no money again, ' +
      'with `Idempotent-Replayed: true`: what to send when an answer was lost or was a 503. The same key with another body (or used by a deposit) is 422; ' +
      'while the first is still running, 400; both headers with different keys, 400.',
    headers: IdempotencyHeader,
    body: TransferBody,
    responses: {
      201: {
        description: 'Completed',
        schema: Type.Object(
          {
            id: Type.Integer({ description: 'The transaction’s number in the ledger, an integer' }),
            uuid: Type.String({ format: 'uuid', description: 'The transfer’s transaction id: what GET /api/v1/transactions/{id} takes' }),
            status: Type.Literal('COMPLETED', { description: 'Always `COMPLETED`: a transfer is done at once' }),
            amount: Type.Number({ description: 'The amount moved, in USDC, as a JSON number (exact up to 15 significant digits)' }),
            description: Type.String({ description: 'The description sent' }),
          },
          { $id: 'Transfer' },
        ),
      },
      403: { description: 'The source account is not the token user’s' },
      422: { description: 'The idempotency key was used with another request' },
    },
    refuses: [
      ...KEYED_REFUSALS,
      L.insufficientBalance,
      L.accountsNotFound,
      L.sameAccountTransfer,
      L.amountExceedsMaximum,
      L.dailyLimitExceeded,
      L.accountNotFound,
      L.accountOfAnotherUser,
    ],
    async handler(ctx) {
      const { body, services } = ctx;
      const amount = requireAmount(body.amount);
      const { transfer: done, replayed } = await services.ledger.transfers.transfer(
        me(ctx),
        { fromAccountId: body.fromAccountId, toAccountId: body.toAccountId, amount, description: body.description },
        ctx.command(),
        idempotencyKeyOf(ctx.headers),
      );
      return {
        status: 201,
        ...(replayed ? { headers: REPLAYED } : {}),
        body: { id: done.id, uuid: done.uuid, status: done.status, amount: asNumber(done.amount), description: done.description },
      };
    },
  }),
  route<Static<typeof PayoutBody>>({
    method: 'post',
    path: '/api/v1/user/payout',
    auth: 'bearer',
    tag: 'Transactions',
    summary: 'Send funds to a bank account. `transactionId` is the idempotency key; the USDC debit is held at acceptance.',
    description:
      'The same request again under its `transactionId` gets the first answer, with `Idempotent-Replayed: true`, and moves no money again; ' +
      'another request under it is 409. `amount` has at most the asset’s decimals (GET exchanges/assets/public).',
    body: PayoutBody,
    responses: {
      200: {
        description: 'Accepted (not settled)',
        schema: Type.Object(
          {
            success: Type.Literal(true, { description: 'Always true' }),
            paymentId: Type.String({
              description: 'The payout provider’s id for the payout (`po_mock_...` in the sandbox), what the sandbox’s settle and fail routes take',
            }),
            status: Type.String({
              description:
                '`PROCESSING`: the provider took the payout. Its end, `COMPLETED` or `FAILED`, is read with GET /api/v1/transactions/{transactionId} or the `payout.updated` notifications',
            }),
            message: Type.String({ description: '`Payout accepted`, for people' }),
          },
          { $id: 'PayoutAccepted' },
        ),
      },
      409: { description: 'transactionId already used with different parameters' },
      502: { description: 'The payout provider refused the payout; the funds are returned' },
    },
    refuses: [
      ...AMOUNT_REFUSALS,
      L.amountTooPreciseForAsset,
      L.insufficientBalance,
      L.amountExceedsMaximum,
      L.dailyLimitExceeded,
      L.unsupportedAsset,
      L.unsupportedPayoutProvider,
      L.transactionIdReused,
      L.accountNotFound,
    ],
    async handler(ctx) {
      const { body, services } = ctx;
      const amount = requireAmount(body.amount);
      const answer = await services.ledger.payouts.payout(
        me(ctx),
        { ...body, amount, source: body.source as { metadata: Record<string, unknown> } },
        ctx.command(`payout:${body.transactionId.toLowerCase()}`),
      );
      const replayed = answer.replayed ? REPLAYED : {};
      if (answer.outcome === 'accepted') return { status: 200, headers: replayed, body: answer.body };
      // A refusal given again, or the provider's: the error envelope, as a refusal thrown answers it.
      const error = answer.outcome === 'refused' ? answer.refusal : new HttpError(502, PAYOUT_REFUSED, { code: PAYOUT_REFUSED_BY_PROVIDER });
      const reply = toErrorReply(error);
      return { status: reply.status, headers: { ...reply.headers, ...replayed }, body: { ...reply.body, requestId: ctx.requestId } };
    },
  }),
];
