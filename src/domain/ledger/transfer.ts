import { type AccountEvent, type AccountState, type Limits, accountDecider } from './account';
import { DomainError, invariant } from '../../platform/decider';
import { LEDGER_REFUSALS } from './refusals';
import { fixed, money } from './money';
import { type TransactionEvent, transactionDecider } from './transaction';

/** A transfer as asked for, with the ids it was given (its uuid names its transaction stream). */
export interface TransferRequest {
  uuid: string;
  /** The transaction's number in lists (from a sequence). */
  id: number;
  userId: string;
  partnerId: string;
  fromAccountId: number;
  toAccountId: number;
  /** A positive decimal string. */
  amount: string;
  description: string;
  /** Set when the request came with an idempotency key: what the key was used for. */
  requestHash: string | null;
  at: string;
}

/** What a transfer's decision needs besides the source account: the destination and the user's limits. */
export interface TransferFacts {
  /** The destination account's state (its owner, and whether it is closed; a credit needs nothing else of it). */
  destination: AccountState;
  limits: Limits;
}

/** The events of an accepted transfer, per stream kind. */
export interface TransferDecided {
  /** On the source account's stream, decided at its revision. */
  debit: AccountEvent[];
  /** On the destination's credit stream (a credit never makes a debit unsafe). */
  credit: AccountEvent[];
  /** The new transaction stream. */
  transaction: TransactionEvent[];
}

/**
 * An account this partner's users may move money between: opened, not closed, and the partner's. A
 * closed account (its user erased) is refused as an unknown one: its id tells nothing of its user.
 */
const openedFor = (account: AccountState, partnerId: string) => account.opened && !account.closed && account.partnerId === partnerId;

/** Who may move money from where: the same account, an unknown or foreign account, another user's. */
function checkParties(source: AccountState, request: TransferRequest, destination: AccountState): void {
  if (request.fromAccountId === request.toAccountId) throw LEDGER_REFUSALS.sameAccountTransfer();
  if (!openedFor(source, request.partnerId) || !openedFor(destination, request.partnerId)) throw LEDGER_REFUSALS.accountsNotFound();
  if (source.userId !== request.userId) throw LEDGER_REFUSALS.accountOfAnotherUser();
}

/** One transfer out of `source`: every rule of it, or a DomainError naming the one it breaks. */
export function decideTransfer(source: AccountState, request: TransferRequest, facts: TransferFacts): TransferDecided {
  checkParties(source, request, facts.destination);
  invariant(source.accountId === request.fromAccountId && facts.destination.accountId === request.toAccountId, 'the accounts are the ones asked for');
  const amount = fixed(money(request.amount));
  const { uuid, at } = request;
  const debit = accountDecider.decide({ type: 'Debit', transactionId: uuid, amount, reason: 'transfer', pending: false, at, limits: facts.limits }, source);
  const credit = accountDecider.decide({ type: 'Credit', transactionId: uuid, amount, reason: 'transfer', at }, facts.destination);
  const transaction = transactionDecider.decide(
    {
      type: 'Create',
      data: {
        uuid,
        id: request.id,
        kind: 'TRANSFER',
        status: 'COMPLETED',
        amount,
        debitAccountId: request.fromAccountId,
        creditAccountId: request.toAccountId,
        description: request.description,
        userId: request.userId,
        partnerId: request.partnerId,
        requestHash: request.requestHash,
        details: {},
        at,
      },
    },
    transactionDecider.initialState(),
  );
  const decided = { debit, credit, transaction };
  assertConserved(decided);
  return decided;
}

/**
 * Transfers out of one account, decided in order, each on the state the accepted ones before it
 * left: one that breaks a rule is refused alone (its DomainError in its place), the others go through.
 */
export function decideTransfers(
  source: AccountState,
  requests: ReadonlyArray<{ request: TransferRequest; facts: TransferFacts }>,
): { outcomes: Array<TransferDecided | DomainError>; state: AccountState } {
  let state = source;
  const outcomes = requests.map(({ request, facts }) => {
    try {
      const decided = decideTransfer(state, request, facts);
      state = decided.debit.reduce(accountDecider.evolve, state);
      return decided;
    } catch (error) {
      if (error instanceof DomainError) return error;
      throw error;
    }
  });
  // Each accepted debit was checked by assertAccount as it was decided (accountDecider, Debit).
  return { outcomes, state };
}

/**
 * Money is neither made nor lost: a transfer debits, credits and records one amount, once each (so
 * a batch of them credits what it debits). Amounts are compared in their one written form.
 */
function assertConserved({ debit, credit, transaction }: TransferDecided): void {
  const [d, c, t] = [debit[0], credit[0], transaction[0]];
  invariant(debit.length === 1 && credit.length === 1 && transaction.length === 1, 'a transfer is one debit, one credit, one transaction');
  invariant(d?.type === 'FundsDebited' && c?.type === 'FundsCredited' && t?.type === 'TransactionCreated', 'a transfer debits, credits and records');
  invariant(d.data.amount === c.data.amount && c.data.amount === t.data.amount, 'a transfer credits and records what it debits');
}
