import type { AccountEvent } from '../../domain/ledger/account';
import BigNumber from 'bignumber.js';
import { type Amount, fixed, money, ZERO } from '../../domain/ledger/money';
import type { TransactionEvent } from '../../domain/ledger/transaction';
import type { Projection } from '../../platform/consumers/projection';
import { type Row, rowProjection } from '../../platform/consumers/rows';

/**
 * A running balance as the fold keeps it: an Amount from its first change in a batch on (written
 * as its decimal text; the column's numeric type holds it at 8 places), so a row changed by many
 * events of a batch is parsed once and formatted once. Text from the table is parsed by plus()
 * itself: each is read once, so money()'s memo of amount texts would only keep it alive.
 */
const balance = (a: Row[string] | undefined): Amount => (BigNumber.isBigNumber(a) ? (a as Amount) : ZERO.plus(String(a ?? 0)));
const add = (a: Row[string] | undefined, b: string) => balance(a).plus(money(b));
const sub = (a: Row[string] | undefined, b: string) => balance(a).minus(money(b));

/**
 * A transaction's details as its reads need them: a payout's `request` (the source and the bank
 * account handed to the provider, with the holder's name and document) is left in the log, sealed,
 * where the payout's hand-over reads it; no read shows it.
 */
function readDetails(details: Record<string, unknown>): Record<string, unknown> {
  const { request: _, ...kept } = details;
  return kept;
}

const EVENT_TYPES = ['AccountOpened', 'FundsCredited', 'FundsDebited', 'HoldPosted', 'TransactionCreated', 'TransactionStatusChanged', 'PayoutAccepted'];

/** Accounts with their balances, and ledger transactions, as the account and transaction routes read them. */
const rowLedger = rowProjection({
  name: 'ledger',
  // 3: rm_transactions.id lost its UNIQUE index (ids come from a sequence; only the order uses them).
  // 4: details without a payout's request (the bank account as the user gave it: personal data no read shows).
  version: 4,
  eventTypes: EVENT_TYPES,
  tables: {
    rm_accounts: {
      key: 'account_id',
      columns: {
        account_id: { type: 'bigint' },
        user_id: { type: 'uuid', notNull: true, unique: true },
        partner_id: { type: 'uuid', notNull: true },
        asset: { type: 'text', notNull: true },
        type: { type: 'text', notNull: true },
        credits: { type: 'numeric', notNull: true },
        debits: { type: 'numeric', notNull: true },
        pending_debits: { type: 'numeric', notNull: true },
        opened_at: { type: 'timestamptz', notNull: true },
      },
    },
    rm_transactions: {
      key: 'uuid',
      columns: {
        uuid: { type: 'uuid' },
        id: { type: 'bigint', notNull: true },
        kind: { type: 'text', notNull: true },
        description: { type: 'text', notNull: true },
        status: { type: 'text', notNull: true },
        amount: { type: 'numeric', notNull: true },
        debit_account_id: { type: 'bigint' },
        credit_account_id: { type: 'bigint' },
        user_id: { type: 'uuid', notNull: true },
        partner_id: { type: 'uuid', notNull: true },
        details: { type: 'jsonb', notNull: true },
        created: { type: 'timestamptz', notNull: true },
        updated: { type: 'timestamptz', notNull: true },
      },
      indexes: [
        ['debit_account_id', 'created DESC', 'id DESC'],
        ['credit_account_id', 'created DESC', 'id DESC'],
      ],
    },
  },
  creates: ['AccountOpened', 'TransactionCreated'],
  touches(recorded) {
    const e = recorded as unknown as AccountEvent | TransactionEvent;
    if (e.type === 'TransactionCreated' || e.type === 'TransactionStatusChanged' || e.type === 'PayoutAccepted')
      return [{ table: 'rm_transactions', key: e.data.uuid }];
    if (e.type === 'TransactionRejected') return [];
    return [{ table: 'rm_accounts', key: e.data.accountId }];
  },
  apply(rows, recorded) {
    const e = recorded as unknown as AccountEvent | TransactionEvent;
    switch (e.type) {
      case 'AccountOpened':
        if (!rows.get('rm_accounts', e.data.accountId)) {
          rows.put('rm_accounts', {
            account_id: e.data.accountId,
            user_id: e.data.userId,
            partner_id: e.data.partnerId,
            asset: e.data.asset,
            type: e.data.type,
            credits: fixed(money(0)),
            debits: fixed(money(0)),
            pending_debits: fixed(money(0)),
            opened_at: e.data.at,
          });
        }
        break;
      case 'FundsCredited': {
        const a = rows.get('rm_accounts', e.data.accountId);
        if (a) rows.put('rm_accounts', { ...a, credits: add(a.credits, e.data.amount) });
        break;
      }
      case 'FundsDebited': {
        const a = rows.get('rm_accounts', e.data.accountId);
        if (a)
          rows.put('rm_accounts', {
            ...a,
            debits: add(a.debits, e.data.amount),
            pending_debits: e.data.pending ? add(a.pending_debits, e.data.amount) : (a.pending_debits ?? fixed(ZERO)),
          });
        break;
      }
      case 'HoldPosted': {
        const a = rows.get('rm_accounts', e.data.accountId);
        if (a) rows.put('rm_accounts', { ...a, pending_debits: sub(a.pending_debits, e.data.amount) });
        break;
      }
      case 'TransactionCreated': {
        const d = e.data;
        if (rows.get('rm_transactions', d.uuid)) break;
        rows.put('rm_transactions', {
          uuid: d.uuid,
          id: d.id,
          kind: d.kind,
          description: d.description,
          status: d.status,
          amount: fixed(money(d.amount)),
          debit_account_id: d.debitAccountId,
          credit_account_id: d.creditAccountId,
          user_id: d.userId,
          partner_id: d.partnerId,
          details: readDetails(d.details),
          created: d.at,
          updated: d.at,
        });
        break;
      }
      case 'TransactionStatusChanged': {
        const t = rows.get('rm_transactions', e.data.uuid);
        if (t) rows.put('rm_transactions', { ...t, status: e.data.to, updated: e.data.at, details: { ...(t.details as object), ...e.data.details } });
        break;
      }
      case 'PayoutAccepted': {
        const t = rows.get('rm_transactions', e.data.uuid);
        if (t) rows.put('rm_transactions', { ...t, status: e.data.to, updated: e.data.at, details: { ...(t.details as object), paymentId: e.data.paymentId } });
        break;
      }
    }
  },
});

export const ledgerProjection: Projection = rowLedger;
