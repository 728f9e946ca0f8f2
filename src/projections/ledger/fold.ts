import type { AccountEvent } from '../../domain/accounts/account';
import { fixed, money } from '../../domain/ledger/money';
import type { TransactionEvent } from '../../domain/ledger/transaction';
import { positionParts } from '../../eventstore/postgres';
import type { Projection, Tables } from '../projection';
import { type Row, rowProjection } from '../rows';

const add = (a: Row[string] | undefined, b: string) => fixed(money(String(a ?? 0)).plus(b));
const sub = (a: Row[string] | undefined, b: string) => fixed(money(String(a ?? 0)).minus(b));

const EVENT_TYPES = ['AccountOpened', 'FundsCredited', 'FundsDebited', 'HoldPosted', 'TransactionCreated', 'TransactionStatusChanged', 'PayoutAccepted'];

/**
 * The fold below in one statement, for a log in the same database (applyRange): what `apply` does
 * event by event, as sums and last values. Balances only add up, so an account's moves of the range
 * are summed (an account opened in the range starts from them); a transaction takes its last status
 * and time, and its details merged in log order (later keys win, as with object spread). Accounts
 * and transactions already in the tables are updated, new ones inserted, each row written once.
 * `data` is read as json whichever type the log's column has (json, or jsonb in a log made before).
 */
const foldStatement = (t: Tables) => `
WITH ev AS MATERIALIZED (
  SELECT e.transaction_id, e.global_position, e.type, e.data::json AS data,
         row_number() OVER (ORDER BY e.transaction_id, e.global_position) AS seq
    FROM (SELECT x.transaction_id, x.global_position, x.type, x.data FROM es_events x
           WHERE (x.transaction_id, x.global_position) > ($1::xid8, $2::bigint)
             AND (x.transaction_id, x.global_position) <= ($3::xid8, $4::bigint)
             AND x.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
             AND x.type = ANY($5::text[])
           ORDER BY x.transaction_id, x.global_position
           LIMIT $6) e),
acct AS (
  SELECT ev.seq, ev.type AS event, r."accountId" AS account_id, r."userId" AS user_id, r."partnerId" AS partner_id, r.asset,
         r."type" AS account_type, r.amount, coalesce(r.pending, false) AS pending, r.at
    FROM ev, json_to_record(ev.data) AS r("accountId" bigint, "userId" uuid, "partnerId" uuid, asset text, "type" text, amount numeric, pending boolean, at timestamptz)
   WHERE ev.type IN ('AccountOpened', 'FundsCredited', 'FundsDebited', 'HoldPosted')),
opened AS (SELECT DISTINCT ON (account_id) * FROM acct WHERE event = 'AccountOpened' ORDER BY account_id, seq),
moves AS (
  SELECT account_id,
         coalesce(sum(amount) FILTER (WHERE event = 'FundsCredited'), 0) AS credits,
         coalesce(sum(amount) FILTER (WHERE event = 'FundsDebited'), 0) AS debits,
         coalesce(sum(amount) FILTER (WHERE event = 'FundsDebited' AND pending), 0) - coalesce(sum(amount) FILTER (WHERE event = 'HoldPosted'), 0) AS pending_debits
    FROM acct WHERE event <> 'AccountOpened' GROUP BY account_id),
accounts_new AS (
  INSERT INTO ${t.rm_accounts} (account_id, user_id, partner_id, asset, type, credits, debits, pending_debits, opened_at)
  SELECT o.account_id, o.user_id, o.partner_id, o.asset, o.account_type, coalesce(m.credits, 0), coalesce(m.debits, 0), coalesce(m.pending_debits, 0), o.at
    FROM opened o LEFT JOIN moves m ON m.account_id = o.account_id
  ON CONFLICT (account_id) DO NOTHING),
accounts_moved AS (
  UPDATE ${t.rm_accounts} a SET credits = a.credits + m.credits, debits = a.debits + m.debits, pending_debits = a.pending_debits + m.pending_debits
    FROM moves m
   WHERE a.account_id = m.account_id AND NOT EXISTS (SELECT 1 FROM opened o WHERE o.account_id = m.account_id)),
created AS (
  SELECT ev.seq, c.*
    FROM ev, json_to_record(ev.data) AS c(uuid uuid, id bigint, kind text, description text, status text, amount numeric, "debitAccountId" bigint,
                                          "creditAccountId" bigint, "userId" uuid, "partnerId" uuid, details jsonb, at timestamptz)
   WHERE ev.type = 'TransactionCreated'),
changes AS (
  SELECT ev.seq, s.uuid, s."to" AS status, s.at,
         CASE WHEN ev.type = 'PayoutAccepted' THEN jsonb_build_object('paymentId', s."paymentId") ELSE coalesce(s.details, '{}'::jsonb) END AS details
    FROM ev, json_to_record(ev.data) AS s(uuid uuid, "to" text, at timestamptz, details jsonb, "paymentId" text)
   WHERE ev.type IN ('TransactionStatusChanged', 'PayoutAccepted')),
changed AS (
  SELECT c.uuid, (array_agg(c.status ORDER BY c.seq DESC))[1] AS status, (array_agg(c.at ORDER BY c.seq DESC))[1] AS at,
         coalesce(jsonb_object_agg(d.key, d.value ORDER BY c.seq) FILTER (WHERE d.key IS NOT NULL), '{}'::jsonb) AS details
    FROM changes c LEFT JOIN LATERAL jsonb_each(c.details) d ON true
   GROUP BY c.uuid),
transactions_new AS (
  INSERT INTO ${t.rm_transactions} (uuid, id, kind, description, status, amount, debit_account_id, credit_account_id, user_id, partner_id, details, created, updated)
  SELECT c.uuid, c.id, c.kind, c.description, coalesce(f.status, c.status), c.amount, c."debitAccountId", c."creditAccountId", c."userId", c."partnerId",
         coalesce(c.details, '{}'::jsonb) || coalesce(f.details, '{}'::jsonb), c.at, coalesce(f.at, c.at)
    FROM created c LEFT JOIN changed f ON f.uuid = c.uuid
  ON CONFLICT (uuid) DO NOTHING),
transactions_changed AS (
  UPDATE ${t.rm_transactions} x SET status = f.status, updated = f.at, details = x.details || f.details
    FROM changed f
   WHERE x.uuid = f.uuid AND NOT EXISTS (SELECT 1 FROM created c WHERE c.uuid = f.uuid))
-- The data-modifying CTEs above run whether or not this reads them.
SELECT count(*)::int AS applied,
       max(lpad(transaction_id::text, 20, '0') || ':' || lpad(global_position::text, 20, '0')) AS reached
  FROM ev`;

/** Accounts with their balances, and ledger transactions, as the account and transaction routes read them. */
const rowLedger = rowProjection({
  name: 'ledger',
  // 3: rm_transactions.id lost its UNIQUE index (ids come from a sequence; only the order uses them).
  version: 3,
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
            pending_debits: e.data.pending ? add(a.pending_debits, e.data.amount) : (a.pending_debits ?? '0'),
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
          details: d.details,
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

export const ledgerProjection: Projection = {
  ...rowLedger,
  async applyRange(tx, { after, upTo, limit }, t) {
    const [afterXid, afterGp] = positionParts(after);
    const [toXid, toGp] = positionParts(upTo);
    const [row] = await tx.query<{ applied: number; reached: string | null }>(foldStatement(t), [afterXid, afterGp, toXid, toGp, EVENT_TYPES, limit]);
    const applied = row?.applied ?? 0;
    // Fewer than asked: every event up to upTo is folded.
    return { applied, reached: applied < limit ? upTo : (row?.reached ?? upTo) };
  },
};
