import { isIP } from 'node:net';
import { type Static, Type } from '@sinclair/typebox';
import { CARD_REFUSALS, CARD_STATUS_REFUSALS, CARD_STATUSES, LIMIT_FREQUENCIES, revealable } from '../../domain/cards';
import { viewOfCard } from '../../app/cards';
import { applicationOf, cardOf, cardSummaryOf } from '../../app/cards/views';
import { maskPan } from '../../providers/cards/port';
import { type RequestContext, routeFor } from '../../platform/http/route';
import { StringEnum, Success } from '../schemas';
import { AMOUNT_REFUSALS, LEDGER_REFUSALS } from '../../domain/ledger';
import { AmountField, asNumber, idempotencyKeyOf, REPLAYED, requireAmount } from '../ledger';
import type { AppServices } from '../services';

/** What any call under an idempotency key may be refused for, besides its own rules. */
const KEYED = [CARD_REFUSALS.idempotencyKeyReused, LEDGER_REFUSALS.idempotencyKeysDiffer, LEDGER_REFUSALS.duplicateRequestInProgress] as const;

/** The services these routes use. */
const USES = ['cards'] as const;
const route = routeFor<AppServices>()(USES);

const me = (ctx: RequestContext) => ({ userId: ctx.userId, partnerId: ctx.partnerId });

/**
 * The key of lock, unlock, limit and PUT pin: required, under either name (docs/interface.md,
 * "Idempotency"; docs/decisions.md, "Errors"). The schema requires `x-idempotency-key`, and the request
 * path reads it from `Idempotency-Key` when only that is sent (`x-alias`): a request with neither is
 * 400 `x-idempotency-key header is required`.
 */
const RequiredKeyHeader = Type.Object({
  'x-idempotency-key': Type.String({
    format: 'uuid',
    'x-error': 'x-idempotency-key must be a UUID',
    'x-required-error': 'x-idempotency-key header is required',
    'x-alias': 'idempotency-key',
    description: 'Required on this operation (or send the same key as `Idempotency-Key`): the same request again answers the first answer.',
  }),
  'idempotency-key': Type.Optional(
    Type.String({
      format: 'uuid',
      'x-error': 'Idempotency-Key must be a UUID',
      description: 'The IETF name of the same key: taken for `x-idempotency-key` when that is not sent; when both are sent they must be equal.',
    }),
  ),
});

/**
 * The key of POST /api/v1/cards and activate: optional (docs/interface.md, "Idempotency"); with it,
 * the same request again gets the first answer.
 */
const OptionalKeyHeader = Type.Object({
  'x-idempotency-key': Type.Optional(
    Type.String({
      format: 'uuid',
      'x-error': 'x-idempotency-key must be a UUID',
      description: 'Optional: with it (or `Idempotency-Key`, the same key), the same request again answers the first answer.',
    }),
  ),
  'idempotency-key': Type.Optional(
    Type.String({ format: 'uuid', 'x-error': 'Idempotency-Key must be a UUID', description: 'Optional: the same key as `x-idempotency-key`.' }),
  ),
});

/** Lock, unlock, limit and PUT pin take a key: the schema required it (RequiredKeyHeader); both names sent must agree. */
function requiredKey(headers: Record<string, string | undefined>): string {
  return idempotencyKeyOf(headers) as string;
}

/** What a limit's `frequency` means (docs/decisions.md, "Cards"). */
const FREQUENCY =
  'The window the amount caps, rolling and ending at each authorization: 24 hours, 7, 30 or 365 days; `perAuthorization` caps one authorization alone, `allTime` the sum since issuance';
const Limit = Type.Object(
  {
    amount: Type.Number({ description: 'The most the card may spend in one window, in USD (the card spends USDC 1:1), as a JSON number' }),
    frequency: StringEnum(LIMIT_FREQUENCIES, { description: FREQUENCY }),
  },
  { $id: 'CardLimit' },
);
/** A card's status, as every answer shows it. */
const STATUS = '`notActivated` (a physical card until activated), `active`, `locked` (a temporary block) or `canceled` (final)';
const cardFields = {
  id: Type.String({ format: 'uuid', description: 'The card’s id (a UUID)' }),
  type: StringEnum(['virtual', 'physical'] as const, { description: 'The kind of card, as the application asked: `virtual` or `physical`' }),
  status: StringEnum(CARD_STATUSES, { description: STATUS }),
  last4: Type.String({ description: 'The last four digits of the card number' }),
  expirationMonth: Type.String({ description: 'The expiry month, two digits' }),
  expirationYear: Type.String({ description: 'The expiry year, its last two digits' }),
  limit: Limit,
};
const cardTimes = {
  createdAt: Type.String({ format: 'date-time', description: 'When the card was issued (ISO 8601, UTC)' }),
  updatedAt: Type.String({ format: 'date-time', description: 'When the card last changed: its status, limit or PIN (ISO 8601, UTC); spends do not change it' }),
};
const CardSummary = Type.Object(cardFields, { $id: 'CardSummary' });
export const Card = Type.Object({ ...cardFields, ...cardTimes }, { $id: 'Card' });
/** Present only when `includeSecrets=true` was asked and the card is neither locked nor canceled. */
const REVEALED = 'Only with `includeSecrets=true` on a card neither locked nor canceled';
const CardFull = Type.Object(
  {
    ...cardFields,
    ...cardTimes,
    tokenWallets: Type.Array(Type.String(), { description: 'Digital wallets holding a token of the card: always empty for now' }),
    cardNumber: Type.Optional(Type.String({ description: `${REVEALED}: the card number masked, its first six and last four digits shown` })),
    cvc: Type.Optional(Type.String({ description: `${REVEALED}: the card verification code, from the issuer` })),
  },
  { $id: 'CardFullDetails' },
);
const CardStatusBody = Success(
  Type.Object(
    {
      id: Type.String({ format: 'uuid', description: 'The card’s id' }),
      status: StringEnum(CARD_STATUSES, { description: `The card’s status now: ${STATUS}` }),
    },
    { $id: 'CardStatus' },
  ),
);
const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
/** An application field the profile gave when the user applied. */
const fromProfile = (what: string) => Type.String({ description: `${what}, from the user’s profile when they applied` });
const NOT_COLLECTED = 'Not collected: always null';
export const Application = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The application’s id (a UUID)' }),
    accountId: Type.Integer({ description: 'The id of the user’s USDC account (a number), which the card spends from' }),
    userId: Type.String({ format: 'uuid', description: 'The user who applied' }),
    issuerApplicationId: Type.String({ description: 'The card issuer’s own id of the application' }),
    identityShareToken: Type.Null({ description: 'Single use and a credential: never kept, always null here' }),
    walletAddress: Nullable(Type.String(), 'The wallet address sent with the application; null when none was sent'),
    solanaAddress: Nullable(Type.String(), NOT_COLLECTED),
    tronAddress: Nullable(Type.String(), NOT_COLLECTED),
    chainId: Nullable(Type.String(), NOT_COLLECTED),
    contractAddress: Nullable(Type.String(), NOT_COLLECTED),
    sourceKey: Type.String({ description: 'The partner the application came through' }),
    ipAddress: Nullable(Type.String(), 'The IP address the application was sent from (`TRUST_PROXY` applies); null when the caller’s address was not one'),
    occupation: fromProfile('The user’s occupation'),
    annualSalary: fromProfile('The user’s annual salary, as text'),
    accountPurpose: fromProfile('What the user means to use the account for'),
    expectedMonthlyVolume: fromProfile('The volume the user expects a month, as text'),
    isTermsOfServiceAccepted: Type.Boolean({ description: 'Whether the user accepted the card terms: always true (an application without it is refused)' }),
    hasExistingDocuments: Type.Boolean({ description: 'Whether the user’s approved KYC holds an identity document' }),
    cardType: StringEnum(['virtual', 'physical'] as const, { description: 'The card asked for: `virtual` or `physical`' }),
    isActive: Type.Boolean({ description: 'False once declined' }),
    applicationStatus: StringEnum(['pending', 'approved', 'declined'] as const, {
      description: '`pending` until the issuer decides, then `approved` or `declined`',
    }),
    applicationReason: Nullable(Type.String(), 'The reason the issuer gave with its decision (a decline’s); null while pending or when it gave none'),
    createdAt: Type.String({ format: 'date-time', description: 'When the application was submitted (ISO 8601, UTC)' }),
    updatedAt: Type.String({ format: 'date-time', description: 'When the application last changed, decided or its issuer status moved (ISO 8601, UTC)' }),
  },
  { $id: 'CardApplication' },
);

const ApplyBody = Type.Object({
  cardType: StringEnum(['virtual', 'physical'] as const, {
    description: 'The card to issue once approved: `virtual` (active at once) or `physical` (to activate with `POST /api/v1/cards/activate`)',
  }),
  isTermsOfServiceAccepted: Type.Boolean({
    'x-error': 'isTermsOfServiceAccepted must be a boolean',
    description: 'Must be true: the user accepted the card terms',
  }),
  walletAddress: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Optional: a wallet address to record with the application' })),
});
const LimitBody = Type.Object({
  amount: {
    ...AmountField('amount'),
    description:
      'The new limit in USD (the card spends USDC 1:1): a decimal string such as "500.00" or a JSON number, greater than 0, at most 8 decimal places',
  },
  frequency: StringEnum(LIMIT_FREQUENCIES, { description: FREQUENCY }),
});
const PinBody = Type.Object({
  pin: Type.String({ maxLength: 10, 'x-error': 'pin must be exactly 4 digits', description: 'The new PIN: exactly four digits, as a string' }),
});
const ListQuery = Type.Object({
  status: Type.Optional(StringEnum(CARD_STATUSES, { description: 'Only the cards in this status' })),
  q: Type.Optional(Type.String({ maxLength: 100, description: 'Only the cards whose last four digits, type or status contain this text (any case)' })),
});
const FullQuery = Type.Object({
  includeSecrets: Type.Optional(
    StringEnum(['true', 'false'] as const, {
      description: '`true` adds the masked number and the CVC, unless the card is locked or canceled; default `false`',
    }),
  ),
});

/** Application status and the application itself. */
const applicationRoutes = [
  route({
    method: 'get',
    path: '/api/v1/cards/application/status',
    auth: 'bearer',
    bearerError: 'x-user-id header required',
    tag: 'Cards',
    summary: "The token user's card application, card and whether a card may be issued; statusSummary compares our status with the issuer's.",
    responses: {
      200: {
        description: 'Application status',
        schema: Success(
          Type.Object({
            application: Type.Union([Application, Type.Null()], { description: 'The user’s latest card application; null when they never applied' }),
            card: Type.Union([CardSummary, Type.Null()], { description: 'The user’s latest card; null when none was issued' }),
            hasApplication: Type.Boolean({ description: 'Whether the user has an application, in any status' }),
            canCreateCard: Type.Boolean({
              description: 'True when the application is approved and no card, or only a canceled one, exists: `POST /api/v1/cards` may issue',
            }),
            statusSummary: Type.Object(
              {
                local: Type.String({ description: 'Our `applicationStatus`; `not_started` with no application' }),
                external: Type.String({
                  description:
                    'The issuer’s own status word, read live (`denied` for our `declined`); the last one it reported when it cannot be asked; `not_started` with no application',
                }),
                synced: Type.Boolean({ description: 'Whether the issuer’s status maps to ours; false also when the issuer could not be asked' }),
              },
              { description: 'Our application status beside the card issuer’s' },
            ),
          }),
        ),
      },
      401: { description: 'x-user-id header required' },
    },
    async handler({ services, userId }) {
      const application = await services.cards.applications.current(userId);
      const cards = await services.cards.cards.cardsOf(userId);
      const card = cards[cards.length - 1];
      const canCreateCard = application?.applicationStatus === 'approved' && (!card || card.status === 'canceled');
      const data = {
        application: application ? applicationOf(application) : null,
        card: card ? cardSummaryOf(viewOfCard(card)) : null,
        hasApplication: application !== null,
        canCreateCard,
        statusSummary: await services.cards.applications.statusSummary(application),
      };
      return { status: 200, body: { success: true, data } };
    },
  }),
  route<Static<typeof ApplyBody>>({
    method: 'post',
    path: '/api/v1/cards/application',
    auth: 'bearer',
    tag: 'Cards',
    summary: 'Apply for a card: needs approved KYC and accepted terms; the rest comes from the profile. The issuer decides later.',
    body: ApplyBody,
    responses: {
      201: { description: 'Pending', schema: Success(Type.Object({ application: Application })) },
      409: { description: 'An application is pending or approved already' },
    },
    // Not kycNotApproved nor profileIncomplete: a bearer token's user is active, so approved with a
    // complete profile; the decider keeps both rules for whatever else applies.
    refuses: [CARD_REFUSALS.termsNotAccepted, CARD_REFUSALS.applicationExists],
    async handler(ctx) {
      const ipAddress = isIP(ctx.clientIp) ? ctx.clientIp : null;
      const application = await ctx.services.cards.applications.apply(me(ctx), { ...ctx.body, ipAddress }, ctx.command());
      return { status: 201, body: { success: true, data: { application: applicationOf(application) } } };
    },
  }),
];

/** The card and its changes: the primary card is the token user's latest. */
const cardRoutes = [
  route({
    method: 'post',
    path: '/api/v1/cards',
    auth: 'bearer',
    tag: 'Cards',
    summary: 'Issue the card on the approved application: virtual starts active, physical notActivated until activated.',
    description: 'With `x-idempotency-key` (or `Idempotency-Key`), the same request again answers the first card, with `Idempotent-Replayed: true`.',
    headers: OptionalKeyHeader,
    responses: {
      201: { description: 'Issued', schema: Success(Card) },
      404: { description: 'No card application' },
      409: { description: 'The application is not approved, or a card that is not canceled exists' },
      422: { description: 'The idempotency key was used with another request' },
    },
    refuses: [CARD_REFUSALS.applicationNotFound, CARD_REFUSALS.applicationNotApproved, CARD_REFUSALS.cardAlreadyIssued, ...KEYED],
    async handler(ctx) {
      const issued = await ctx.services.cards.cards.issue(me(ctx), ctx.command(), idempotencyKeyOf(ctx.headers));
      return { status: 201, ...(issued.replayed ? { headers: REPLAYED } : {}), body: { success: true, data: cardOf(issued.data) } };
    },
  }),
  statusChange('activate', false),
  statusChange('lock', true),
  statusChange('unlock', true),
  route<Static<typeof LimitBody>>({
    method: 'patch',
    path: '/api/v1/cards/limit',
    auth: 'bearer',
    tag: 'Cards',
    summary: "Set the card's spending limit over one of its six frequencies (rolling windows ending at each authorization).",
    headers: RequiredKeyHeader,
    body: LimitBody,
    responses: {
      200: {
        description: 'The new limit',
        schema: Type.Object({ id: Type.String({ format: 'uuid', description: 'The card’s id' }), limit: Limit }, { $id: 'CardLimitChanged' }),
      },
      404: { description: 'No card' },
      409: { description: 'The card is canceled' },
      422: { description: 'The idempotency key was used with another request' },
    },
    // The amount is read by the ledger's rules first (requireAmount): the card decider's own amount
    // checks are a safety net no request reaches.
    refuses: [CARD_REFUSALS.cardNotFound, CARD_REFUSALS.limitForbidden, ...AMOUNT_REFUSALS, ...KEYED],
    async handler(ctx) {
      const key = requiredKey(ctx.headers);
      const amount = requireAmount(ctx.body.amount);
      const set = await ctx.services.cards.cards.setLimit(me(ctx), { amount, frequency: ctx.body.frequency }, ctx.command(), key);
      const { id, limit } = set.data;
      return {
        status: 200,
        ...(set.replayed ? { headers: REPLAYED } : {}),
        body: { id, limit: { amount: asNumber(limit.amount), frequency: limit.frequency } },
      };
    },
  }),
  route<Static<typeof PinBody>>({
    method: 'put',
    path: '/api/v1/cards/pin',
    auth: 'bearer',
    tag: 'Cards',
    summary: "Set the card's PIN (4 digits). It goes to the issuer only; nothing of it is kept here.",
    headers: RequiredKeyHeader,
    body: PinBody,
    responses: {
      200: { description: 'Set', schema: Success(Type.Object({ id: Type.String({ format: 'uuid', description: 'The card’s id' }) }, { $id: 'CardPinSet' })) },
      404: { description: 'No card' },
      409: { description: 'The card is canceled' },
      422: { description: 'The idempotency key was used with another request' },
    },
    refuses: [CARD_REFUSALS.invalidPin, CARD_REFUSALS.cardNotFound, CARD_REFUSALS.pinSetForbidden, ...KEYED],
    async handler(ctx) {
      const key = requiredKey(ctx.headers);
      const set = await ctx.services.cards.cards.setPin(me(ctx), ctx.body.pin, ctx.command(), key);
      return { status: 200, ...(set.replayed ? { headers: REPLAYED } : {}), body: { success: true, data: set.data } };
    },
  }),
];

/** Activate (key optional), lock and unlock (key required): `{success, data: {id, status}}`. */
function statusChange(action: 'activate' | 'lock' | 'unlock', keyRequired: boolean) {
  return route({
    method: 'post',
    path: `/api/v1/cards/${action}`,
    auth: 'bearer',
    tag: 'Cards',
    summary: { activate: 'Activate a physical card.', lock: 'Lock the card (a temporary block).', unlock: 'Unlock a locked card.' }[action],
    headers: keyRequired ? RequiredKeyHeader : OptionalKeyHeader,
    responses: {
      200: { description: 'The card after the change', schema: CardStatusBody },
      400: { description: keyRequired ? 'x-idempotency-key header is required, or a copy is still running' : 'A copy is still running' },
      404: { description: 'No card' },
      409: { description: 'The card’s status forbids it' },
      422: { description: 'The idempotency key was used with another request' },
    },
    refuses: [CARD_REFUSALS.cardNotFound, CARD_STATUS_REFUSALS[action], ...KEYED],
    async handler(ctx) {
      const key = keyRequired ? requiredKey(ctx.headers) : idempotencyKeyOf(ctx.headers);
      const changed = await ctx.services.cards.cards.changeStatus(me(ctx), action, ctx.command(), key);
      return { status: 200, ...(changed.replayed ? { headers: REPLAYED } : {}), body: { success: true, data: changed.data } };
    },
  });
}

/** Reads of the card: from the write side for now (a card read model comes with card transactions). */
const readRoutes = [
  route<unknown, Static<typeof ListQuery>>({
    method: 'get',
    path: '/api/v1/cards/me',
    auth: 'bearer',
    tag: 'Cards',
    summary: "The token user's cards, newest first; `status` filters, `q` matches the last four digits, type or status.",
    query: ListQuery,
    responses: { 200: { description: 'Cards', schema: Type.Array(Card) } },
    async handler({ services, userId, query }) {
      const q = query.q?.trim().toLowerCase();
      const cards = (await services.cards.cards.cardsOf(userId))
        .filter((c) => !query.status || c.status === query.status)
        .filter((c) => !q || [c.last4, c.type, c.status].some((field) => field.toLowerCase().includes(q)));
      return { status: 200, body: cards.reverse().map((c) => cardOf(viewOfCard(c))) };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/cards/status',
    auth: 'bearer',
    tag: 'Cards',
    summary: "The card's status.",
    responses: { 200: { description: 'Status', schema: CardStatusBody }, 404: { description: 'No card' } },
    refuses: [CARD_REFUSALS.cardNotFound],
    async handler({ services, userId }) {
      const card = await services.cards.cards.primaryCard(userId);
      return { status: 200, body: { success: true, data: { id: card.cardId, status: card.status } } };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/cards/details',
    auth: 'bearer',
    tag: 'Cards',
    summary: 'The card (no number, CVC or PIN).',
    responses: { 200: { description: 'The card', schema: Success(Card) }, 404: { description: 'No card' } },
    refuses: [CARD_REFUSALS.cardNotFound],
    async handler({ services, userId }) {
      return { status: 200, body: { success: true, data: cardOf(viewOfCard(await services.cards.cards.primaryCard(userId))) } };
    },
  }),
  route<unknown, Static<typeof FullQuery>>({
    method: 'get',
    path: '/api/v1/cards/details/full',
    auth: 'bearer',
    tag: 'Cards',
    summary: 'The card with its token wallets; with `includeSecrets=true` and the card not locked, the masked number and the CVC.',
    query: FullQuery,
    responses: { 200: { description: 'The card', schema: CardFull }, 404: { description: 'No card' } },
    refuses: [CARD_REFUSALS.cardNotFound],
    async handler({ services, userId, query }) {
      const card = await services.cards.cards.primaryCard(userId);
      const full = { ...cardOf(viewOfCard(card)), tokenWallets: [] as string[] };
      if (query.includeSecrets !== 'true' || !revealable(card)) return { status: 200, body: full };
      const secrets = await services.cards.cards.secrets(userId);
      return { status: 200, body: { ...full, cardNumber: maskPan(secrets.cardNumber), cvc: secrets.cvc } };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/cards/secrets',
    auth: 'bearer',
    tag: 'Cards',
    summary: "The card's full number, CVC and expiry, from the issuer; never while the card is locked (409).",
    responses: {
      200: {
        description: 'Secrets',
        schema: Success(
          Type.Object(
            {
              cardNumber: Type.String({ description: 'The full card number, from the issuer' }),
              cvc: Type.String({ description: 'The card verification code, from the issuer' }),
              expirationMonth: Type.String({ description: 'The expiry month, two digits' }),
              expirationYear: Type.String({ description: 'The expiry year, its last two digits' }),
            },
            { $id: 'CardSecrets' },
          ),
        ),
      },
      404: { description: 'No card' },
      409: { description: 'The card is locked or canceled' },
    },
    refuses: [CARD_REFUSALS.cardNotFound, CARD_REFUSALS.secretsRevealForbidden],
    async handler({ services, userId }) {
      return { status: 200, body: { success: true, data: await services.cards.cards.secrets(userId) } };
    },
  }),
  route({
    method: 'get',
    path: '/api/v1/cards/pin',
    auth: 'bearer',
    tag: 'Cards',
    summary: "The card's PIN, from the issuer (null while none was set); as the secrets, never while the card is locked (409).",
    responses: {
      200: {
        description: 'PIN',
        schema: Success(
          Type.Object(
            { pin: Type.Union([Type.String(), Type.Null()], { description: 'The card’s four-digit PIN, from the issuer; null while none was set' }) },
            { $id: 'CardPin' },
          ),
        ),
      },
      404: { description: 'No card' },
      409: { description: 'The card is locked or canceled' },
    },
    refuses: [CARD_REFUSALS.cardNotFound, CARD_REFUSALS.pinRevealForbidden],
    async handler({ services, userId }) {
      const { pin } = await services.cards.cards.pin(userId);
      return { status: 200, body: { success: true, data: { pin } } };
    },
  }),
];

export const cardsRoutes = [...applicationRoutes, ...cardRoutes, ...readRoutes];
