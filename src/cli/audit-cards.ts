import { fixed, money, ZERO } from '../domain/ledger/money';
import type { AuditCheck, AuditFinding } from './audit-types';
import { foldBooks } from './audit-ledger';
import { allSpends } from '../domain/cards/spend-book';
import { emptyBucketMap, entriesOf, getIn } from '../platform/bucket-map';

type Books = Awaited<ReturnType<typeof foldBooks>>;

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
      const holds = accounts.get(card.accountId)?.holds ?? emptyBucketMap<string>();
      for (const spend of allSpends(bySpend)) {
        spends++;
        const subject = `card ${card.cardId} transaction ${spend.transactionId}`;
        const held = getIn(holds, spend.transactionId);
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
    findings.push(...pendingDebitFindings({ accounts, cards, transactions }, known));
    return { checked: `${cards.size} cards, ${spends} approved card transactions, ${accounts.size} accounts`, findings };
  },
};

/**
 * Every card hold on an account is a spend some card knows (whether it should still be held is
 * checked per card), and the holds together are the account's pending debits.
 */
function pendingDebitFindings({ accounts, transactions }: Books, knownSpends: Set<string>): AuditFinding[] {
  const findings: AuditFinding[] = [];
  for (const [id, account] of accounts) {
    let held = ZERO;
    for (const [transactionId, amount] of entriesOf(account.holds)) {
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
