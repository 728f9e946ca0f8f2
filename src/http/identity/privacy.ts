import { type Static, Type } from '@sinclair/typebox';
import { cardOf, viewOfCard } from '../../app/cards';
import { IDENTITY_REFUSALS } from '../../domain/identity';
import { routeFor } from '../../platform/http/route';
import { Card } from '../cards';
import { Account, TransactionListItem } from '../ledger';
import { Success, User, UUID_RE } from '../schemas';
import type { AppServices } from '../services';
import { KycDocument, KycHistoryItem, StatusView } from './kyc';
import { ProfileView } from './profile';

/**
 * A user's own data, for the partner that answers the user's requests about it (the partner is the
 * controller of its users' data): the access request's export, and erasure (docs/privacy.md).
 */
const USES = ['users', 'profiles', 'kyc', 'ledger', 'cards', 'erasure'] as const;
const route = routeFor<AppServices>()(USES);

/** Transactions listed at once while the export gathers an account's. */
const TRANSACTIONS_PAGE = 100;

const UserIdParams = Type.Object({
  userId: Type.String({ description: 'The user’s id (a UUID); another partner’s user, or an unknown id, is 404 `User not found`' }),
});

const UserExport = Type.Object(
  {
    user: User,
    profile: Type.Union([ProfileView, Type.Null()], { description: 'The profile as GET user/profile shows it; null when none was created' }),
    kyc: Type.Object(
      {
        status: StatusView,
        history: Type.Array(KycHistoryItem, { description: 'Every verification, newest first, as GET kyc/history lists them' }),
        document: Type.Union([KycDocument, Type.Null()], {
          description: 'The latest verification’s identity document as GET kyc/document shows it; null before any verification',
        }),
      },
      { description: 'The user’s identity verification: its status view, its history and the document read' },
    ),
    accounts: Type.Array(Account, { description: 'The user’s accounts with their balances, as GET user/accounts lists them' }),
    cards: Type.Array(Card, { description: 'The user’s cards, newest first, masked as GET cards/me shows them (no full number, CVC or PIN)' }),
    transactions: Type.Array(TransactionListItem, {
      description: 'Every ledger transaction of the user’s accounts, newest first per account, as GET transactions lists them',
    }),
  },
  { $id: 'UserExport' },
);

const Erased = Type.Object(
  {
    userId: Type.String({ format: 'uuid', description: 'The erased user’s id' }),
    erasedAt: Type.String({ format: 'date-time', description: 'When the erasure was recorded (ISO 8601, UTC)' }),
  },
  { $id: 'UserErased' },
);

const ERASE_REFUSALS = [IDENTITY_REFUSALS.userNotFound, IDENTITY_REFUSALS.userHasBalance, IDENTITY_REFUSALS.userHasPendingTransactions];

const ERASE_RESPONSES = {
  200: { description: 'Erased: the user’s data key is destroyed, its sessions ended, its card canceled', schema: Success(Erased) },
  409: { description: 'Money is left on, or on its way to or from, one of the user’s accounts: nothing was erased' },
};

const ERASES =
  'Erase a user’s personal data for good (destroys its data key; ends its sessions; cancels its card; releases its email). Ledger transactions and balances stay.';

const erasure = (path: string, auth: 'partner' | 'admin', params: typeof UserIdParams) =>
  route<unknown, unknown, Static<typeof UserIdParams>>({
    method: 'post',
    path,
    auth,
    tag: auth === 'admin' ? 'Operator' : 'Users',
    summary: ERASES,
    params,
    responses: ERASE_RESPONSES,
    refuses: ERASE_REFUSALS,
    async handler({ services, params, partnerId, command }) {
      if (!UUID_RE.test(params.userId)) throw IDENTITY_REFUSALS.userNotFound();
      const scope = auth === 'admin' ? 'operator' : { partnerId };
      const data = await services.erasure.erase(params.userId.toLowerCase(), scope, command());
      return { status: 200, body: { success: true, data } };
    },
  });

const AnyUserIdParams = Type.Object({
  userId: Type.String({ description: 'The user’s id (a UUID), whichever partner’s; an unknown or erased user is 404 `User not found`' }),
});

export const privacyRoutes = [
  erasure('/api/v1/partner/users/{userId}/erase', 'partner', UserIdParams),
  erasure('/admin/v1/users/{userId}/erase', 'admin', AnyUserIdParams),
  route<unknown, unknown, Static<typeof UserIdParams>>({
    method: 'get',
    path: '/api/v1/partner/users/{userId}/export',
    auth: 'partner',
    tag: 'Users',
    summary: 'Everything the service holds about one user, as the reads show it: for the user’s request to access their data.',
    params: UserIdParams,
    readsAfterWrites: ['ledger', 'cards'],
    responses: { 200: { description: 'The user’s data', schema: Success(UserExport) } },
    refuses: [IDENTITY_REFUSALS.userNotFound],
    async handler({ services, params, partnerId }) {
      // Another partner's user, or a malformed id, is indistinguishable from a missing one.
      const user = UUID_RE.test(params.userId) ? await services.users.get(partnerId, params.userId) : null;
      if (!user) throw IDENTITY_REFUSALS.userNotFound();
      const [profile, status, history, document, accounts, cards] = await Promise.all([
        services.profiles.get(user.id),
        services.kyc.statusView(user.id, user.status),
        services.kyc.history(user.id),
        services.kyc.documentView(user.id),
        services.ledger.reads.accountsOf(user.id),
        services.cards.cards.cardsOf(user.id),
      ]);
      const transactions = [];
      for (const account of accounts) transactions.push(...(await everyTransaction(services, account.id)));
      return {
        status: 200,
        body: {
          success: true,
          data: {
            user,
            profile,
            kyc: { status, history: history.map((row) => services.kyc.historyItem(row)), document },
            accounts,
            cards: cards.reverse().map((c) => cardOf(viewOfCard(c))),
            transactions,
          },
        },
      };
    },
  }),
];

/** An account's transactions, every page of them, newest first. */
async function everyTransaction(services: Pick<AppServices, 'ledger'>, accountId: number) {
  const all = [];
  for (let page = 1; ; page++) {
    const items = await services.ledger.reads.listTransactions(accountId, { limit: TRANSACTIONS_PAGE, page });
    all.push(...items);
    if (items.length < TRANSACTIONS_PAGE) return all;
  }
}
