import { type AccountEvent, type AccountState, accountDecider } from '../domain/accounts/account';
import { type CardEvent, type CardState, cardDecider } from '../domain/cards/card';
import { fixed, money, ZERO } from '../domain/ledger/money';
import type { TransactionEvent, TransactionKind, TransactionStatus } from '../domain/ledger/transaction';
import type { AuditCheck, AuditFinding } from './audit-checks';
import { logPages } from './events';

/** What the log says of each book the check compares: accounts (both streams), cards, ledger transactions. */
async function foldBooks(tally: Parameters<AuditCheck['run']>[0]) {
  const accounts = new Map<number, AccountState>();
  const cards = new Map<string, CardState>();
  const transactions = new Map<string, { kind: TransactionKind; status: TransactionStatus }>();
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
        if (t.type === 'TransactionCreated') transactions.set(t.data.uuid, { kind: t.data.kind, status: t.data.status });
        else if (t.type === 'TransactionStatusChanged' || t.type === 'PayoutAccepted') {
          const known = transactions.get(t.data.uuid);
          if (known) known.status = t.data.to;
        }
      }
    }
  }
  return { accounts, cards, transactions };
}

/** The ledger status a card spend's transaction has while the spend is in each status. */
const LEDGER_STATUS = { pending: 'PENDING', completed: 'COMPLETED', reversed: 'REVERSED' } as const;

/**
 * Card holds, from the log alone: each approved card spend is held on its account exactly while it
 * is pending (for its authorized amount), and its ledger transaction says the same (PENDING,
 * COMPLETED once cleared, REVERSED once reversed); no account holds money for a card transaction that
 * is not pending or that no card knows; and each account's holds sum to its pending debits.
 */
export const cardHoldsCheck: AuditCheck = {
  name: 'card holds',
  async run(tally) {
    const { accounts, cards, transactions } = await foldBooks(tally);
    const findings: AuditFinding[] = [];
    const known = new Set<string>();
    let spends = 0;
    for (const { card, spends: bySpend } of cards.values()) {
      if (!card) continue;
      const holds = accounts.get(card.accountId)?.holds ?? {};
      for (const spend of Object.values(bySpend)) {
        spends++;
        const subject = `card ${card.cardId} transaction ${spend.transactionId}`;
        const held = holds[spend.transactionId];
        const status = spend.status as keyof typeof LEDGER_STATUS;
        known.add(spend.transactionId);
        if (spend.status === 'pending') {
          if (held === undefined || !money(held).eq(money(spend.authorizedAmount)))
            findings.push({ subject, reason: `pending for ${spend.authorizedAmount} but account ${card.accountId} holds ${held ?? 'nothing'} for it` });
        } else if (held !== undefined) findings.push({ subject, reason: `${spend.status} but account ${card.accountId} still holds ${held} for it` });
        const ledger = transactions.get(spend.transactionId);
        if (ledger?.kind !== 'CARD' || ledger.status !== LEDGER_STATUS[status])
          findings.push({ subject, reason: `${spend.status} but its ledger transaction is ${ledger ? `${ledger.kind} ${ledger.status}` : 'missing'}` });
      }
    }
    findings.push(...pendingDebitFindings(accounts, transactions, known));
    return { checked: `${cards.size} cards, ${spends} approved card transactions, ${accounts.size} accounts`, findings };
  },
};

/**
 * Every card hold on an account is a spend some card knows (whether it should still be held is
 * checked per card), and the holds together are the account's pending debits.
 */
function pendingDebitFindings(
  accounts: Map<number, AccountState>,
  transactions: Map<string, { kind: TransactionKind; status: TransactionStatus }>,
  knownSpends: Set<string>,
): AuditFinding[] {
  const findings: AuditFinding[] = [];
  for (const [id, account] of accounts) {
    let held = ZERO;
    for (const [transactionId, amount] of Object.entries(account.holds)) {
      held = held.plus(money(amount));
      const kind = transactions.get(transactionId)?.kind;
      if (kind === 'CARD' && !knownSpends.has(transactionId))
        findings.push({ subject: `account ${id}`, reason: `holds ${amount} for card transaction ${transactionId}, which no card knows` });
    }
    if (!held.eq(account.debitsPending))
      findings.push({ subject: `account ${id}`, reason: `holds sum to ${fixed(held)} but its pending debits are ${fixed(account.debitsPending)}` });
  }
  return findings;
}
