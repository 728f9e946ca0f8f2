import { fixed, money } from '../../domain/ledger/money';
import type { Sql } from '../../eventstore/sql';
import { LEDGER_REFUSALS } from '../../domain/ledger/refusals';

export interface TransactionView {
  id: number;
  uuid: string;
  description: string;
  status: string;
  amount: string;
  debitAccountId: number | null;
  creditAccountId: number | null;
  created: string;
  updated?: string;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;
const TXN_COLUMNS = `id::text, uuid::text, description, status, amount::text, debit_account_id::text, credit_account_id::text, user_id::text,
  to_char(created AT TIME ZONE 'UTC', ${ISO}) AS created, to_char(updated AT TIME ZONE 'UTC', ${ISO}) AS updated`;

interface TxnRow {
  id: string;
  uuid: string;
  description: string;
  status: string;
  amount: string;
  debit_account_id: string | null;
  credit_account_id: string | null;
  user_id: string;
  created: string;
  updated: string;
}

const toView = (r: TxnRow, withUpdated: boolean): TransactionView => ({
  id: Number(r.id),
  uuid: r.uuid,
  description: r.description,
  status: r.status,
  amount: fixed(money(r.amount)),
  debitAccountId: r.debit_account_id === null ? null : Number(r.debit_account_id),
  creditAccountId: r.credit_account_id === null ? null : Number(r.credit_account_id),
  created: r.created,
  ...(withUpdated ? { updated: r.updated } : {}),
});

/**
 * A transaction as GET transactions/:id shows it just after its creation, from the creation's own
 * facts: the row the ledger fold makes of it (created = updated = its instant), as toView reads it
 * back. The outbox builds a transfer's notification so, without reading the read model.
 */
export const createdView = (d: Omit<TransactionView, 'created' | 'updated'> & { at: string }): TransactionView => {
  const at = new Date(d.at).toISOString();
  return {
    id: d.id,
    uuid: d.uuid,
    description: d.description,
    status: d.status,
    amount: fixed(money(d.amount)),
    debitAccountId: d.debitAccountId,
    creditAccountId: d.creditAccountId,
    created: at,
    updated: at,
  };
};

/** What the sandbox's provider decisions read of a transaction. */
export interface PaymentOf {
  uuid: string;
  partner_id: string;
  kind: string;
  payment_id: string | null;
}

export interface AccountRow {
  id: number;
  asset: string;
  type: string;
  credits: string;
  debits: string;
}

/** What the routes read of the ledger read model: accounts with balances, transaction lists and single reads. */
export class LedgerQueries {
  constructor(private readonly sql: Sql) {}

  async accountsOf(userId: string): Promise<AccountRow[]> {
    const rows = await this.sql.query<{ account_id: string; asset: string; type: string; credits: string; debits: string }>(
      'SELECT account_id::text, asset, type, credits::text, debits::text FROM rm_accounts WHERE user_id = $1 ORDER BY account_id',
      [userId],
    );
    return rows.map((r) => ({ id: Number(r.account_id), asset: r.asset, type: r.type, credits: fixed(money(r.credits)), debits: fixed(money(r.debits)) }));
  }

  /** Whether a transaction moving money to or from the account is still PENDING (erasure waits for none). */
  async hasPending(accountId: number): Promise<boolean> {
    const [row] = await this.sql.query<{ pending: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM rm_transactions WHERE (debit_account_id = $1 OR credit_account_id = $1) AND status = 'PENDING') AS pending`,
      [accountId],
    );
    return row?.pending === true;
  }

  /** `from`: the first instant listed; `to`: the last one, or (not inclusive) the first one left out. */
  async listTransactions(
    accountId: number,
    query: { limit: number; page: number; from?: string; to?: { at: string; inclusive: boolean } },
  ): Promise<TransactionView[]> {
    const params: unknown[] = [accountId];
    const where = ['(debit_account_id = $1 OR credit_account_id = $1)'];
    if (query.from) {
      params.push(query.from);
      where.push(`created >= $${params.length}::timestamptz`);
    }
    if (query.to) {
      params.push(query.to.at);
      where.push(`created ${query.to.inclusive ? '<=' : '<'} $${params.length}::timestamptz`);
    }
    params.push(query.limit, (query.page - 1) * query.limit);
    const rows = await this.sql.query<TxnRow>(
      `SELECT ${TXN_COLUMNS} FROM rm_transactions WHERE ${where.join(' AND ')} ORDER BY created DESC, id DESC LIMIT $${params.length - 1} OFFSET $${params.length}`,
      params,
    );
    return rows.map((r) => toView(r, false));
  }

  /** A transaction as GET transactions/:id shows it, with its kind and partner (partner notifications); null when unknown. */
  async transaction(uuid: string): Promise<{ view: TransactionView; kind: string; partnerId: string } | null> {
    const [row] = await this.sql.query<TxnRow & { kind: string; partner_id: string }>(
      `SELECT ${TXN_COLUMNS}, kind, partner_id::text FROM rm_transactions WHERE uuid = $1`,
      [uuid],
    );
    return row ? { view: toView(row, true), kind: row.kind, partnerId: row.partner_id } : null;
  }

  /** Several transactions as transaction() answers each, by uuid (the notification outbox reads a batch of events so); unknown ones left out. */
  async transactions(uuids: string[]): Promise<Map<string, { view: TransactionView; kind: string; partnerId: string }>> {
    const rows = await this.sql.query<TxnRow & { kind: string; partner_id: string }>(
      `SELECT ${TXN_COLUMNS}, kind, partner_id::text FROM rm_transactions WHERE uuid = ANY($1::uuid[])`,
      [uuids],
    );
    return new Map(rows.map((row) => [row.uuid, { view: toView(row, true), kind: row.kind, partnerId: row.partner_id }]));
  }

  /** A transaction's partner, kind and provider payment id, by uuid or by that payment id (the sandbox's provider decisions); null when unknown. */
  async paymentOf(where: { uuid?: string; paymentId?: string }): Promise<PaymentOf | null> {
    const [row] = where.uuid
      ? await this.sql.query<PaymentOf>(`SELECT uuid::text, partner_id::text, kind, details->>'paymentId' AS payment_id FROM rm_transactions WHERE uuid = $1`, [
          where.uuid,
        ])
      : await this.sql.query<PaymentOf>(
          `SELECT uuid::text, partner_id::text, kind, details->>'paymentId' AS payment_id FROM rm_transactions WHERE details->>'paymentId' = $1`,
          [where.paymentId],
        );
    return row ?? null;
  }

  /**
   * Up to 100 payouts, oldest first, held for at least `olderThanSeconds` and never accepted by
   * their provider (no payment id): the uuids Payouts.resubmitStale hands over again.
   */
  async stalePayouts(olderThanSeconds: number): Promise<string[]> {
    const rows = await this.sql.query<{ uuid: string }>(
      `SELECT uuid::text FROM rm_transactions
        WHERE kind = 'PAYOUT' AND status = 'PENDING' AND NOT (details ? 'paymentId') AND updated <= now() - make_interval(secs => $1)
        ORDER BY created LIMIT 100`,
      [olderThanSeconds],
    );
    return rows.map((r) => r.uuid);
  }

  /** Every account's credits and debits as stored (decimal strings), for the audit. */
  async balances(): Promise<Array<{ account_id: string; credits: string; debits: string }>> {
    return this.sql.query<{ account_id: string; credits: string; debits: string }>('SELECT account_id::text, credits::text, debits::text FROM rm_accounts');
  }

  /** A transaction the token user is party to (owns its debit or credit account). */
  async getTransaction(uuid: string, user: { userId: string; partnerId: string }): Promise<TransactionView & { updated: string }> {
    const [row] = await this.sql.query<TxnRow & { partner_id: string }>(`SELECT ${TXN_COLUMNS}, partner_id::text FROM rm_transactions WHERE uuid = $1`, [uuid]);
    if (!row) throw LEDGER_REFUSALS.transactionNotFound();
    const mine = await this.sql.query('SELECT 1 FROM rm_accounts WHERE user_id = $1 AND account_id = ANY($2::bigint[])', [
      user.userId,
      [row.debit_account_id, row.credit_account_id].filter((x) => x !== null),
    ]);
    if (mine.length === 0) {
      // Another partner's transaction does not exist for this caller.
      const [other] = await this.sql.query<{ partner_id: string }>('SELECT partner_id::text FROM rm_accounts WHERE account_id = ANY($1::bigint[]) LIMIT 1', [
        [row.debit_account_id, row.credit_account_id].filter((x) => x !== null),
      ]);
      // Another partner's transaction does not exist for this caller; another user's is not theirs.
      if (other?.partner_id !== user.partnerId) throw LEDGER_REFUSALS.transactionNotFound();
      throw LEDGER_REFUSALS.transactionOfAnotherUser();
    }
    return { ...toView(row, false), updated: row.updated };
  }
}
