import { type AccountEvent, type AccountState, type Limits, accountDecider, assertAccount } from './account';
import { DomainError } from '../../platform/decider';
import { keptRefusal, LEDGER_REFUSALS } from './refusals';
import { divideRoundUp8, fixed, money } from './money';
import { type TransactionEvent, type TransactionState, type TransactionStatus, transactionDecider } from './transaction';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A payout as asked for: `uuid` is the partner's transactionId, its idempotency key. */
export interface PayoutRequest {
  uuid: string;
  id: number;
  userId: string;
  partnerId: string;
  accountId: number;
  /** In the asset's own unit. */
  amount: string;
  asset: string;
  description?: string;
  provider: string;
  requestHash: string;
  /** What the provider is handed (source and destination), kept with the transaction. */
  handOver: { [key: string]: Json };
  at: string;
}

/** What a payout's decision needs besides the account and its transaction stream. */
export interface PayoutFacts {
  /** The asset's decimals, when it is one the rates know. */
  assetDecimals: number | undefined;
  /** USDC to the asset, null when the asset has no rate. */
  rate: string | null;
  providerKnown: boolean;
  limits: Limits;
}

/** What the transaction stream already holds under the key, when it holds something. */
export type StoredPayout =
  | { kind: 'refused'; refusal: DomainError }
  /** Held, its acceptance never recorded: hand it to the provider (again). */
  | { kind: 'held' }
  /** Taken by the provider (its paymentId; PROCESSING), or refused by it (no paymentId). */
  | { kind: 'accepted'; paymentId: string | null; status: TransactionStatus };

export type PayoutDecision =
  | { kind: 'stored'; stored: StoredPayout }
  /** Refused by a rule: the refusal is kept under the key, so the same retry gets the same refusal. */
  | { kind: 'refused'; transaction: TransactionEvent[]; refusal: DomainError }
  /** The USDC debit is held on the account until the provider settles or fails it. */
  | { kind: 'held'; debit: AccountEvent[]; transaction: TransactionEvent[] };

/** What is stored under the key answers a retry of the same request; another request under it is 409. */
export function storedPayout(txn: TransactionState, request: Pick<PayoutRequest, 'requestHash' | 'userId'>): StoredPayout | null {
  const sameRequest = (stored: { requestHash: string | null; userId: string }) =>
    stored.requestHash === request.requestHash && stored.userId === request.userId;
  if (txn.rejection) {
    if (!sameRequest(txn.rejection)) throw LEDGER_REFUSALS.transactionIdReused();
    return { kind: 'refused', refusal: keptRefusal(txn.rejection) };
  }
  const data = txn.created;
  if (!data) return null;
  if (data.kind !== 'PAYOUT' || !sameRequest(data)) throw LEDGER_REFUSALS.transactionIdReused();
  if (!txn.paymentId && txn.status !== 'FAILED') return { kind: 'held' };
  return { kind: 'accepted', paymentId: txn.paymentId, status: payoutStatusAtAcceptance(txn) };
}

/**
 * A payout's status as its acceptance answers it: PENDING while its funds are held and its provider
 * has not taken it, PROCESSING once the provider took it (whatever the provider called it, and
 * whatever happened to it since: GET transactions/{id} and the webhooks tell that).
 */
export function payoutStatusAtAcceptance(txn: Pick<TransactionState, 'paymentId'>): TransactionStatus {
  return txn.paymentId ? 'PROCESSING' : 'PENDING';
}

/** A payout: the first answer again, a refusal, or the USDC it converts to held on the account. */
export function decidePayout(txn: TransactionState, account: AccountState, request: PayoutRequest, facts: PayoutFacts): PayoutDecision {
  // An amount is sent in the asset's own unit: no fraction of its smallest one (0.001 COP).
  if (facts.assetDecimals !== undefined && (money(request.amount).decimalPlaces() ?? 0) > facts.assetDecimals)
    throw LEDGER_REFUSALS.amountTooPreciseForAsset(String(facts.assetDecimals), request.asset);
  const stored = storedPayout(txn, request);
  if (stored) return { kind: 'stored', stored };
  if (!facts.providerKnown) throw LEDGER_REFUSALS.unsupportedPayoutProvider(request.provider);
  if (facts.rate === null) throw LEDGER_REFUSALS.unsupportedAsset(request.asset);
  const debitUsdc = fixed(divideRoundUp8(money(request.amount), facts.rate));
  const { uuid, at } = request;
  let debit: AccountEvent[];
  try {
    debit = accountDecider.decide(
      { type: 'Debit', transactionId: uuid, amount: debitUsdc, reason: 'payout', pending: true, at, limits: facts.limits },
      account,
    );
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const rejected = transactionDecider.decide(
      { type: 'Reject', uuid, requestHash: request.requestHash, status: 400, error: error.message, code: error.code, userId: request.userId, at },
      txn,
    );
    return { kind: 'refused', transaction: rejected, refusal: error };
  }
  // The Debit decision asserted the account it leaves (assertAccount).
  const transaction = transactionDecider.decide(
    {
      type: 'Create',
      data: {
        uuid,
        id: request.id,
        kind: 'PAYOUT',
        status: 'PENDING',
        amount: debitUsdc,
        debitAccountId: request.accountId,
        creditAccountId: null,
        description: request.description ?? `Payout of ${request.amount} ${request.asset}`,
        userId: request.userId,
        partnerId: request.partnerId,
        requestHash: request.requestHash,
        details: { provider: request.provider, asset: request.asset, assetAmount: request.amount, rate: facts.rate, request: request.handOver },
        at,
      },
    },
    txn,
  );
  return { kind: 'held', debit, transaction };
}

/** A payout held on its account: the transaction it is, 404 otherwise. */
function heldPayout(txn: TransactionState) {
  const data = txn.created;
  if (data?.kind !== 'PAYOUT' || data.debitAccountId === null) throw LEDGER_REFUSALS.transactionNotFound();
  return { ...data, debitAccountId: data.debitAccountId };
}

/** The provider paid it: COMPLETED, and the held debit is posted. Nothing when already decided. */
export function decidePayoutSettled(
  txn: TransactionState,
  account: AccountState,
  report: { eventId: string; at: string },
): { transaction: TransactionEvent[]; debit: AccountEvent[] } {
  const data = heldPayout(txn);
  const transaction = transactionDecider.decide(
    { type: 'ChangeStatus', to: 'COMPLETED', reason: null, details: { providerEventId: report.eventId }, at: report.at },
    txn,
  );
  if (transaction.length === 0) return { transaction, debit: [] };
  const debit = accountDecider.decide({ type: 'PostHold', transactionId: data.uuid, at: report.at }, account);
  assertAccount(debit.reduce(accountDecider.evolve, account));
  return { transaction, debit };
}

/**
 * The provider refused or failed it: FAILED, and the held funds come back exactly once, as a
 * REVERSED credit of their own transaction (`reversal`: its uuid and number). The payout no longer
 * counts to its day's outgoing total (the daily limit).
 */
export function decidePayoutFailed(
  txn: TransactionState,
  account: AccountState,
  failure: { reason: string; details: Record<string, string>; at: string; reversal: { uuid: string; id: number } },
): { transaction: TransactionEvent[]; debit: AccountEvent[]; credit: AccountEvent[]; reversal: TransactionEvent[] } {
  const data = heldPayout(txn);
  const { at, reversal } = failure;
  const transaction = transactionDecider.decide({ type: 'ChangeStatus', to: 'FAILED', reason: failure.reason, details: failure.details, at }, txn);
  if (transaction.length === 0) return { transaction, debit: [], credit: [], reversal: [] };
  const debit = accountDecider.decide({ type: 'PostHold', transactionId: data.uuid, at, returnedDay: data.at.slice(0, 10) }, account);
  const posted = debit.reduce(accountDecider.evolve, account);
  const credit = accountDecider.decide({ type: 'Credit', transactionId: reversal.uuid, amount: data.amount, reason: 'payout_reversal', at }, posted);
  assertAccount(credit.reduce(accountDecider.evolve, posted));
  const reversed = transactionDecider.decide(
    {
      type: 'Create',
      data: {
        uuid: reversal.uuid,
        id: reversal.id,
        kind: 'REVERSAL',
        status: 'REVERSED',
        amount: data.amount,
        debitAccountId: null,
        creditAccountId: data.debitAccountId,
        description: `Reversal of payout ${data.uuid}`,
        userId: data.userId,
        partnerId: data.partnerId,
        requestHash: null,
        details: { reverses: data.uuid },
        at,
      },
    },
    transactionDecider.initialState(),
  );
  return { transaction, debit, credit, reversal: reversed };
}

/** A payout's transactionId names one payout: used before by another kind of command, it is refused (409). */
export function refuseTransactionIdMadeElsewhere(madeElsewhere: boolean): void {
  if (madeElsewhere) throw LEDGER_REFUSALS.transactionIdReused();
}
