import { merchantCategoryOf } from '../../domain/cards/merchant-categories';
import { type Amount, fixed, money } from '../../domain/ledger';
import type { Sql } from '../../eventstore/sql';
import { holderJoin } from '../identity';

/** A card transaction as the interface shows it (2.10): amounts as JSON numbers, as it types them. */
export interface CardTransactionView {
  id: string;
  type: 'spend';
  spend: {
    amount: number;
    currency: string;
    localAmount: number | null;
    localCurrency: string | null;
    authorizedAmount: number | null;
    authorizationMethod: string | null;
    memo: string | null;
    receipt: boolean;
    merchantName: string;
    merchantCategory: string;
    merchantCategoryCode: string;
    merchantId: string | null;
    enrichedMerchantIcon: string | null;
    enrichedMerchantName: string | null;
    enrichedMerchantCategory: string | null;
    cardId: string;
    cardType: string;
    companyId: string;
    userId: string;
    userFirstName: string | null;
    userLastName: string | null;
    userEmail: string | null;
    status: 'pending' | 'completed' | 'declined' | 'reversed';
    declinedReason: string | null;
    authorizedAt: string;
    postedAt: string | null;
  };
}

/** What a card transaction is made of: its own facts (decimal strings), and its card holder's. */
export interface CardTransactionFacts {
  id: string;
  cardId: string;
  cardType: string;
  userId: string;
  partnerId: string;
  status: CardTransactionView['spend']['status'];
  declinedReason: string | null;
  amount: string;
  authorizedAmount: string;
  currency: string;
  localAmount: string | null;
  localCurrency: string | null;
  merchantName: string;
  merchantCategoryCode: string;
  authorizationMethod: string | null;
  authorizedAt: string;
  postedAt: string | null;
}

/** The names and email a card transaction shows: each null once the holder is erased (their personal data is gone). */
export interface CardHolder {
  firstName: string | null;
  lastName: string | null;
  email: string | null;
}

/** `companyId` is the partner the card's user belongs to; the enrichment fields stay null (no enrichment source). */
export function cardTransactionView(f: CardTransactionFacts, holder: CardHolder): CardTransactionView {
  return {
    id: f.id,
    type: 'spend',
    spend: {
      amount: Number(fixed(money(f.amount))),
      currency: f.currency,
      localAmount: f.localAmount === null ? null : Number(fixed(money(f.localAmount))),
      localCurrency: f.localCurrency,
      authorizedAmount: Number(fixed(money(f.authorizedAmount))),
      authorizationMethod: f.authorizationMethod,
      memo: null,
      receipt: false,
      merchantName: f.merchantName,
      merchantCategory: merchantCategoryOf(f.merchantCategoryCode),
      merchantCategoryCode: f.merchantCategoryCode,
      merchantId: null,
      enrichedMerchantIcon: null,
      enrichedMerchantName: null,
      enrichedMerchantCategory: null,
      cardId: f.cardId,
      cardType: f.cardType,
      companyId: f.partnerId,
      userId: f.userId,
      userFirstName: holder.firstName,
      userLastName: holder.lastName,
      userEmail: holder.email,
      status: f.status,
      declinedReason: f.declinedReason,
      authorizedAt: f.authorizedAt,
      postedAt: f.postedAt,
    },
  };
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
/** The holder's part of the row, as identity's read models give it. */
const HOLDER = holderJoin('t.user_id');
/**
 * The row with its holder: the users and profiles read models name and reach the user. Joined in
 * this one statement (identity's join, not a second query) so a page costs one round trip.
 */
const SELECT = `SELECT t.id::text, t.position, t.card_id::text, t.card_type, t.user_id::text, t.partner_id::text, t.status, t.declined_reason,
  t.amount::text, t.authorized_amount::text, t.currency, t.local_amount::text, t.local_currency, t.merchant_name, t.merchant_category_code,
  t.authorization_method, to_char(t.authorized_at AT TIME ZONE 'UTC', ${ISO}) AS authorized_at,
  to_char(t.posted_at AT TIME ZONE 'UTC', ${ISO}) AS posted_at,
  ${HOLDER.columns}
  FROM rm_card_transactions t ${HOLDER.joins}`;

interface Row {
  id: string;
  position: string;
  card_id: string;
  card_type: string;
  user_id: string;
  partner_id: string;
  status: CardTransactionFacts['status'];
  declined_reason: string | null;
  amount: string;
  authorized_amount: string;
  currency: string;
  local_amount: string | null;
  local_currency: string | null;
  merchant_name: string;
  merchant_category_code: string;
  authorization_method: string | null;
  authorized_at: string;
  posted_at: string | null;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
}

const viewOf = (r: Row): CardTransactionView =>
  cardTransactionView(
    {
      id: r.id,
      cardId: r.card_id,
      cardType: r.card_type,
      userId: r.user_id,
      partnerId: r.partner_id,
      status: r.status,
      declinedReason: r.declined_reason,
      amount: r.amount,
      authorizedAmount: r.authorized_amount,
      currency: r.currency,
      localAmount: r.local_amount,
      localCurrency: r.local_currency,
      merchantName: r.merchant_name,
      merchantCategoryCode: r.merchant_category_code,
      authorizationMethod: r.authorization_method,
      authorizedAt: r.authorized_at,
      postedAt: r.posted_at,
    },
    { firstName: r.first_name, lastName: r.last_name, email: r.email },
  );

/** A page's cursor: the position of its last item, opaque to partners. */
const encodeCursor = (position: string) => Buffer.from(JSON.stringify({ p: position })).toString('base64url');

export function decodeCursor(cursor: string): string | null {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { p?: unknown };
    return typeof parsed.p === 'string' && parsed.p.length > 0 && parsed.p.length <= 100 ? parsed.p : null;
  } catch {
    // Not base64url JSON: not a cursor this service made, which the caller answers 400.
    return null;
  }
}

/** What the card routes read of the cards read model. */
export class CardQueries {
  constructor(private readonly sql: Sql) {}

  /**
   * A page of the user's card transactions (of one card when `cardId`), newest first: the items
   * strictly below `after` (a position), and the cursor of the next page, null on the last one.
   */
  async list(userId: string, query: { cardId?: string; after?: string; limit: number }): Promise<{ items: CardTransactionView[]; nextCursor: string | null }> {
    const params: unknown[] = [userId];
    const where = ['t.user_id = $1'];
    if (query.cardId) {
      params.push(query.cardId);
      where.push(`t.card_id = $${params.length}`);
    }
    if (query.after) {
      params.push(query.after);
      where.push(`t.position COLLATE "C" < $${params.length}`);
    }
    params.push(query.limit + 1);
    const rows = await this.sql.query<Row>(`${SELECT} WHERE ${where.join(' AND ')} ORDER BY t.position COLLATE "C" DESC LIMIT $${params.length}`, params);
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return { items: page.map(viewOf), nextCursor: rows.length > query.limit && last ? encodeCursor(last.position) : null };
  }

  /** What the user's pending card transactions hold. */
  async pendingOf(userId: string): Promise<Amount> {
    const [row] = await this.sql.query<{ pending: string }>(
      `SELECT coalesce(sum(amount), 0)::text AS pending FROM rm_card_transactions WHERE user_id = $1 AND status = 'pending'`,
      [userId],
    );
    return money(row?.pending ?? '0');
  }

  /**
   * Card transactions by id, each with the partner it belongs to, in one round trip (the outbox
   * reads a batch's at once); an id the read model does not hold is absent.
   */
  async byIds(ids: readonly string[]): Promise<Map<string, { partnerId: string; view: CardTransactionView }>> {
    const found = new Map<string, { partnerId: string; view: CardTransactionView }>();
    if (ids.length === 0) return found;
    const rows = await this.sql.query<Row>(`${SELECT} WHERE t.id = ANY($1::uuid[])`, [ids]);
    for (const r of rows) found.set(r.id, { partnerId: r.partner_id, view: viewOf(r) });
    return found;
  }

  /** One card transaction of the partner's users, or null. */
  async get(partnerId: string, id: string): Promise<CardTransactionView | null> {
    const [row] = await this.sql.query<Row>(`${SELECT} WHERE t.id = $1 AND t.partner_id = $2`, [id, partnerId]);
    return row ? viewOf(row) : null;
  }
}
