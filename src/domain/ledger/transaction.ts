import type { DomainError } from '../../platform/decider';
import { type Decider, invariant } from '../../platform/decider';
import { LEDGER_REFUSALS } from './refusals';

/** Ledger transactions: what partners see in lists, with the statuses of the interface (3.3). */
export const TRANSACTION_STATUSES = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'REVERSED'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];
/** `CARD`: a card spend, held on its account while pending (src/domain/cards/authorization.ts). */
export type TransactionKind = 'DEPOSIT' | 'TRANSFER' | 'PAYOUT' | 'REVERSAL' | 'CARD';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export interface TransactionCreatedData {
  uuid: string;
  id: number;
  kind: TransactionKind;
  status: TransactionStatus;
  amount: string;
  debitAccountId: number | null;
  creditAccountId: number | null;
  description: string;
  /** The user who asked for it (for ownership checks). */
  userId: string;
  partnerId: string;
  /** Hash of the request, for idempotent retries by key (payouts). */
  requestHash: string | null;
  /** Kind-specific: provider, payment id, payout asset and amount, rate, ... */
  details: { [key: string]: Json };
  at: string;
  [key: string]: Json;
}

export type TransactionEvent =
  | { type: 'TransactionCreated'; data: TransactionCreatedData }
  | {
      type: 'TransactionStatusChanged';
      data: { uuid: string; from: TransactionStatus; to: TransactionStatus; reason: string | null; details: { [key: string]: Json }; at: string };
    }
  /** The provider took the payout: its payment id, and the status it reported. */
  | { type: 'PayoutAccepted'; data: { uuid: string; paymentId: string; from: TransactionStatus; to: TransactionStatus; at: string } }
  /** A payout refused by a rule: kept under its key, so the same retry gets the same refusal. */
  /** `code`: the refusal's (absent from refusals recorded before codes were). */
  | { type: 'TransactionRejected'; data: { uuid: string; requestHash: string; status: number; error: string; code?: string; userId: string; at: string } };

export type TransactionCommand =
  | { type: 'Create'; data: TransactionCreatedData }
  | { type: 'Reject'; uuid: string; requestHash: string; status: number; error: string; code: string; userId: string; at: string }
  | { type: 'ChangeStatus'; to: TransactionStatus; reason: string | null; details?: { [key: string]: Json }; at: string }
  /** The provider took the payout (whatever status it reports, it is PROCESSING from then on). */
  | { type: 'RecordAcceptance'; paymentId: string; at: string };

export interface TransactionState {
  created: TransactionCreatedData | null;
  status: TransactionStatus | null;
  rejection: { requestHash: string; status: number; error: string; code: string | null; userId: string } | null;
  /** The payout provider's id, once it accepted. */
  paymentId: string | null;
  /** The status the payout's transaction had once its provider took it (PROCESSING, or a later one it had already reached). */
  acceptedAs: TransactionStatus | null;
}

export const transactionStream = (uuid: string) => `txn-${uuid}`;

const NEXT: Record<TransactionKind, Partial<Record<TransactionStatus, TransactionStatus[]>>> = {
  DEPOSIT: { PENDING: ['COMPLETED', 'FAILED'] },
  TRANSFER: {},
  PAYOUT: { PENDING: ['PROCESSING', 'COMPLETED', 'FAILED'], PROCESSING: ['COMPLETED', 'FAILED'] },
  REVERSAL: {},
  CARD: { PENDING: ['COMPLETED', 'REVERSED'] },
};

export const transactionDecider: Decider<TransactionState, TransactionCommand, TransactionEvent> = {
  initialState: () => ({ created: null, status: null, rejection: null, paymentId: null, acceptedAs: null }),

  evolve(state, event) {
    switch (event.type) {
      case 'TransactionCreated':
        return { ...state, created: event.data, status: event.data.status };
      case 'TransactionStatusChanged':
        return { ...state, status: event.data.to };
      case 'PayoutAccepted':
        return { ...state, status: event.data.to, paymentId: event.data.paymentId, acceptedAs: event.data.to };
      case 'TransactionRejected':
        return {
          ...state,
          rejection: {
            requestHash: event.data.requestHash,
            status: event.data.status,
            error: event.data.error,
            code: event.data.code ?? null,
            userId: event.data.userId,
          },
        };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'Create':
        if (state.created || state.rejection) throw LEDGER_REFUSALS.transactionExists();
        return [{ type: 'TransactionCreated', data: command.data }];
      case 'Reject':
        if (state.created || state.rejection) throw LEDGER_REFUSALS.transactionExists();
        return [
          {
            type: 'TransactionRejected',
            data: {
              uuid: command.uuid,
              requestHash: command.requestHash,
              status: command.status,
              error: command.error,
              code: command.code,
              userId: command.userId,
              at: command.at,
            },
          },
        ];
      case 'RecordAcceptance': {
        if (!state.created || !state.status) throw LEDGER_REFUSALS.transactionNotFound();
        if (state.paymentId) return [];
        // Taken by the provider: PROCESSING (a payout already settled or failed meanwhile stays so).
        const to = (NEXT[state.created.kind][state.status] ?? []).includes('PROCESSING') ? 'PROCESSING' : state.status;
        return [{ type: 'PayoutAccepted', data: { uuid: state.created.uuid, paymentId: command.paymentId, from: state.status, to, at: command.at } }];
      }
      case 'ChangeStatus': {
        if (!state.created || !state.status) throw LEDGER_REFUSALS.transactionNotFound();
        if (state.status === command.to) return [];
        // Only the transitions of the interface; a late or repeated provider report changes nothing.
        if (!(NEXT[state.created.kind][state.status] ?? []).includes(command.to)) return [];
        return [
          {
            type: 'TransactionStatusChanged',
            data: { uuid: state.created.uuid, from: state.status, to: command.to, reason: command.reason, details: command.details ?? {}, at: command.at },
          },
        ];
      }
    }
  },
};

/**
 * The transaction an idempotency key names, when one was made under it: the same request again is
 * answered with it; another request under the key (another kind, body or user) is refused with
 * `reused`. Null when nothing was made under the key yet.
 */
export function storedUnderKey(
  txn: TransactionState,
  request: { kind: TransactionKind; requestHash: string },
  reused: DomainError = LEDGER_REFUSALS.idempotencyKeyReused(),
): TransactionCreatedData | null {
  const created = txn.created;
  if (!created) return null;
  if (created.kind !== request.kind || created.requestHash !== request.requestHash) throw reused;
  return created;
}

/** The transaction a Create decided. */
export function createdBy(events: TransactionEvent[]): TransactionCreatedData {
  const created = events.find((e) => e.type === 'TransactionCreated');
  invariant(created?.type === 'TransactionCreated', 'a created transaction has its TransactionCreated');
  return created.data;
}
