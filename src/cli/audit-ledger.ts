import { type AccountEvent, type AccountState, accountDecider } from '../domain/ledger/account';
import { type CardEvent, type CardState, cardDecider } from '../domain/cards/card';
import { fixed, money, ZERO } from '../domain/ledger/money';
import type { TransactionEvent, TransactionKind, TransactionStatus } from '../domain/ledger/transaction';
import type { Tally } from '../compose/tally';
import type { AuditCheck, AuditFinding } from './audit-types';
import { logPages } from '../app/audit';

interface TxnFacts {
  kind: TransactionKind;
  amount: string;
  status: TransactionStatus;
}

/**
 * What the log says of each book the audit compares: accounts (an account's money in and out may sit
 * in two streams, account-N and accountin-N: both are folded), cards, ledger transactions.
 */
export async function foldBooks(tally: Tally) {
  const accounts = new Map<number, AccountState>();
  const cards = new Map<string, CardState>();
  const transactions = new Map<string, TxnFacts>();
  for await (const page of logPages(tally.store)) {
    for (const e of page) {
      const account = /^account(?:in)?-(\d+)$/.exec(e.stream);
      if (account) {
        const id = Number(account[1]);
        accounts.set(id, accountDecider.evolve(accounts.get(id) ?? accountDecider.initialState(), { type: e.type, data: e.data } as AccountEvent));
      } else if (e.stream.startsWith('card-')) {
        cards.set(e.stream, cardDecider.evolve(cards.get(e.stream) ?? cardDecider.initialState(), { type: e.type, data: e.data } as CardEvent));
      } else if (e.stream.startsWith('txn-')) {
        const t = { type: e.type, data: e.data } as TransactionEvent;
        if (t.type === 'TransactionCreated') transactions.set(t.data.uuid, { kind: t.data.kind, amount: t.data.amount, status: t.data.status });
        else if (t.type === 'TransactionStatusChanged' || t.type === 'PayoutAccepted') {
          const known = transactions.get(t.data.uuid);
          if (known) known.status = t.data.to;
        }
      }
    }
  }
  return { accounts, cards, transactions };
}

/**
 * The ledger's books, from the log alone:
 * - conservation: the sum of every account's balance (credits - debits, holds included) equals
 *   completed deposits minus payouts and card spends that left (settled or still held) - transfers
 *   net to zero, and a failed payout's or reversed card spend's hold (or the part of it a clearing
 *   did not take) is matched by its reversal;
 * - every account's read-model balance equals the fold of its stream.
 */
export const ledgerCheck: AuditCheck = {
  name: 'ledger',
  async run(tally: Tally) {
    const { accounts, transactions } = await foldBooks(tally);
    const findings: AuditFinding[] = [];
    let balances = ZERO;
    for (const state of accounts.values()) balances = balances.plus(state.creditsPosted).minus(state.debitsPosted).minus(state.debitsPending);
    let deposits = ZERO;
    let payouts = ZERO;
    for (const t of transactions.values()) {
      if (t.kind === 'DEPOSIT' && t.status === 'COMPLETED') deposits = deposits.plus(t.amount);
      // A payout's or card spend's debit stays unless it failed or was reversed (then a REVERSAL credit gives it back).
      if (t.kind === 'PAYOUT' || t.kind === 'CARD') payouts = payouts.plus(t.amount);
      if (t.kind === 'REVERSAL') payouts = payouts.minus(t.amount);
    }
    if (!balances.eq(deposits.minus(payouts))) {
      findings.push({
        subject: 'conservation',
        reason: `sum of balances ${fixed(balances)} != completed deposits ${fixed(deposits)} - payouts ${fixed(payouts)}`,
        details: { balances: fixed(balances), deposits: fixed(deposits), payouts: fixed(payouts) },
      });
    }
    const rows = await tally.ledger.reads.balances();
    const seen = new Set<number>();
    for (const row of rows) {
      const id = Number(row.account_id);
      seen.add(id);
      const state = accounts.get(id);
      const credits = fixed(state ? state.creditsPosted : ZERO);
      const debits = fixed(state ? state.debitsPosted.plus(state.debitsPending) : ZERO);
      if (!money(row.credits).eq(credits) || !money(row.debits).eq(debits)) {
        findings.push({
          subject: `account ${id}`,
          reason: `read model credits ${fixed(money(row.credits))} / debits ${fixed(money(row.debits))} != log ${credits} / ${debits}`,
          details: { accountId: id, credits, debits },
        });
      }
    }
    for (const [id, state] of accounts) {
      if (state.opened && !seen.has(id)) findings.push({ subject: `account ${id}`, reason: 'opened in the log but missing from the read model' });
    }
    return {
      checked: `${accounts.size} accounts, ${transactions.size} transactions; balances ${fixed(balances)} = deposits ${fixed(deposits)} - payouts ${fixed(payouts)}`,
      findings,
    };
  },
};
