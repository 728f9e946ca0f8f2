import type { AccountEvent } from '../domain/accounts/account';
import type { TransactionEvent } from '../domain/ledger/transaction';
import type { Projection } from './projection';

/** Accounts with their balances, and ledger transactions, as the account and transaction routes read them. */
export const ledgerProjection: Projection = {
  name: 'ledger',
  version: 1,
  tables: ['rm_accounts', 'rm_transactions'],
  eventTypes: ['AccountOpened', 'FundsCredited', 'FundsDebited', 'HoldPosted', 'TransactionCreated', 'TransactionStatusChanged', 'PayoutAccepted'],
  createTables: (t) => `
    CREATE TABLE ${t.rm_accounts} (
      account_id      bigint PRIMARY KEY,
      user_id         uuid NOT NULL UNIQUE,
      partner_id      uuid NOT NULL,
      asset           text NOT NULL,
      type            text NOT NULL,
      credits         numeric(38, 8) NOT NULL DEFAULT 0,
      debits          numeric(38, 8) NOT NULL DEFAULT 0,
      pending_debits  numeric(38, 8) NOT NULL DEFAULT 0,
      opened_at       timestamptz NOT NULL
    );
    CREATE TABLE ${t.rm_transactions} (
      id                 bigint PRIMARY KEY,
      uuid               uuid NOT NULL UNIQUE,
      kind               text NOT NULL,
      description        text NOT NULL,
      status             text NOT NULL,
      amount             numeric(38, 8) NOT NULL,
      debit_account_id   bigint,
      credit_account_id  bigint,
      user_id            uuid NOT NULL,
      partner_id         uuid NOT NULL,
      details            jsonb NOT NULL,
      created            timestamptz NOT NULL,
      updated            timestamptz NOT NULL
    );
    CREATE INDEX ${t.rm_transactions}_debit ON ${t.rm_transactions} (debit_account_id, created DESC, id DESC);
    CREATE INDEX ${t.rm_transactions}_credit ON ${t.rm_transactions} (credit_account_id, created DESC, id DESC);`,
  async apply(tx, events, t) {
    for (const recorded of events) {
      const e = { type: recorded.type, data: recorded.data } as AccountEvent | TransactionEvent;
      switch (e.type) {
        case 'AccountOpened':
          await tx.query(
            `INSERT INTO ${t.rm_accounts} (account_id, user_id, partner_id, asset, type, opened_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
            [e.data.accountId, e.data.userId, e.data.partnerId, e.data.asset, e.data.type, e.data.at],
          );
          break;
        case 'FundsCredited':
          await tx.query(`UPDATE ${t.rm_accounts} SET credits = credits + $2::numeric WHERE account_id = $1`, [e.data.accountId, e.data.amount]);
          break;
        case 'FundsDebited':
          await tx.query(
            `UPDATE ${t.rm_accounts} SET debits = debits + $2::numeric, pending_debits = pending_debits + CASE WHEN $3 THEN $2::numeric ELSE 0 END WHERE account_id = $1`,
            [e.data.accountId, e.data.amount, e.data.pending],
          );
          break;
        case 'HoldPosted':
          await tx.query(`UPDATE ${t.rm_accounts} SET pending_debits = pending_debits - $2::numeric WHERE account_id = $1`, [e.data.accountId, e.data.amount]);
          break;
        case 'TransactionCreated': {
          const d = e.data;
          await tx.query(
            `INSERT INTO ${t.rm_transactions} (id, uuid, kind, description, status, amount, debit_account_id, credit_account_id, user_id, partner_id, details, created, updated)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) ON CONFLICT DO NOTHING`,
            [
              d.id,
              d.uuid,
              d.kind,
              d.description,
              d.status,
              d.amount,
              d.debitAccountId,
              d.creditAccountId,
              d.userId,
              d.partnerId,
              JSON.stringify(d.details),
              d.at,
            ],
          );
          break;
        }
        case 'PayoutAccepted':
          await tx.query(
            `UPDATE ${t.rm_transactions} SET status = $2, updated = $3, details = details || jsonb_build_object('paymentId', $4::text) WHERE uuid = $1`,
            [e.data.uuid, e.data.to, e.data.at, e.data.paymentId],
          );
          break;
        case 'TransactionStatusChanged':
          await tx.query(`UPDATE ${t.rm_transactions} SET status = $2, updated = $3, details = details || $4::jsonb WHERE uuid = $1`, [
            e.data.uuid,
            e.data.to,
            e.data.at,
            JSON.stringify(e.data.details),
          ]);
          break;
      }
    }
  },
};
