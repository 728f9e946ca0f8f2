import type { NotificationType } from '../../domain/notifications/endpoint';
import type { RecordedEvent } from '../../eventstore/port';
import { createdView, type LedgerQueries } from '../../projections/ledger';
import type { TransactionCreatedData } from '../../domain/ledger';
import {
  CARD_APPLICATION_EVENTS,
  CARD_EVENTS,
  CARD_TRANSACTION_EVENTS,
  type CardTransactionReads,
  cardApplicationUpdated,
  cardTransaction,
  cardTransactionIds,
  cardUpdated,
} from './card-builders';
import type { Notification, NotificationSources } from './notification';

/** The events the outbox turns into notifications. */
export const NOTIFYING_EVENTS = [
  'UserStatusChanged',
  'KycStatusChanged',
  'TransactionCreated',
  'TransactionStatusChanged',
  'PayoutAccepted',
  ...CARD_APPLICATION_EVENTS,
  ...CARD_EVENTS,
  ...CARD_TRANSACTION_EVENTS,
];

/** The read models a notification's data is read from: the outbox waits for them to pass its events. */
export const READ_MODELS = ['users', 'kyc', 'ledger', 'cards', 'profiles'];

/**
 * The notification an event makes, with its data read as the API answers it (a deposit.completed
 * carries the transaction as GET transactions/:id shows it). The read model may already be past
 * the event (it is read once the projections passed it): the status field is the event's own, so
 * every notified transition says which one it was.
 */
export async function notificationFor(sources: NotificationSources, event: RecordedEvent, batch: BatchReads = NO_BATCH): Promise<Notification | null> {
  const d = event.data as Record<string, unknown>;
  const read = async (uuid: string) => batch.transactions.get(uuid) ?? (await sources.ledger.reads.transaction(uuid));
  switch (event.type) {
    case 'UserStatusChanged':
      return userStatus(sources, event, batch, String(d.userId), String(d.to));
    case 'KycStatusChanged':
      return kycStatus(sources, event, batch, String(d.userId), String(d.to));
    case 'TransactionCreated':
      return d.kind === 'TRANSFER' ? transferCompleted(event) : null;
    case 'TransactionStatusChanged':
    case 'PayoutAccepted': {
      if (d.from === d.to) return null;
      const to = String(d.to);
      const txn = await found(read, event, String(d.uuid));
      if (txn.kind === 'PAYOUT') return withStatus(txn, event, 'payout.updated', to);
      if (txn.kind === 'DEPOSIT' && (to === 'COMPLETED' || to === 'FAILED'))
        return withStatus(txn, event, to === 'COMPLETED' ? 'deposit.completed' : 'deposit.failed', to);
      return null;
    }
    default:
      if (CARD_APPLICATION_EVENTS.includes(event.type)) return cardApplicationUpdated(sources, event);
      if (CARD_EVENTS.includes(event.type)) return cardUpdated(sources, event);
      if (CARD_TRANSACTION_EVENTS.includes(event.type)) return cardTransaction(sources, event, batch.cardTransactions);
      return null;
  }
}

async function partnerOfUser(sources: NotificationSources, batch: BatchReads, userId: string, event: RecordedEvent): Promise<string> {
  const known = batch.userPartners.get(userId);
  if (known) return known;
  const partnerId = await sources.userQueries.partnerOf(userId);
  if (!partnerId) throw new Error(`user ${userId} of event ${event.id} is not in the users read model`);
  return partnerId;
}

async function userStatus(sources: NotificationSources, event: RecordedEvent, batch: BatchReads, userId: string, to: string): Promise<Notification> {
  const partnerId = await partnerOfUser(sources, batch, userId, event);
  const user = await sources.users.evenErased(partnerId, userId);
  if (!user) throw new Error(`user ${userId} of event ${event.id} is not in the users read model`);
  return { partnerId, type: 'user.status.updated', eventId: event.id, data: { user: { ...user, status: to } } };
}

async function kycStatus(sources: NotificationSources, event: RecordedEvent, batch: BatchReads, userId: string, to: string): Promise<Notification> {
  const partnerId = await partnerOfUser(sources, batch, userId, event);
  const user = await sources.users.evenErased(partnerId, userId);
  if (!user) throw new Error(`user ${userId} of event ${event.id} is not in the users read model`);
  const view = await sources.kyc.statusView(userId, user.status);
  return { partnerId, type: 'kyc.status.updated', eventId: event.id, data: { ...view, kyc: { ...view.kyc, status: to } } };
}

type FoundTransaction = NonNullable<Awaited<ReturnType<LedgerQueries['transaction']>>>;

/**
 * What a batch of events is read ahead for, in one query each: their transactions (by uuid), their
 * users' partners and their card transactions (by id).
 */
export interface BatchReads {
  transactions: Map<string, FoundTransaction>;
  userPartners: Map<string, string>;
  cardTransactions: CardTransactionReads;
}

const NO_BATCH: BatchReads = { transactions: new Map(), userPartners: new Map(), cardTransactions: new Map() };

/** Whether notificationFor reads the event's transaction (a transfer's creation carries all its notification shows). */
const readsTransaction = (e: RecordedEvent) => {
  const d = e.data as { from?: unknown; to?: unknown };
  return (e.type === 'TransactionStatusChanged' || e.type === 'PayoutAccepted') && d.from !== d.to;
};

/** transfer.completed: the transaction as GET transactions/:id shows it, from the event alone (a transfer is made completed). */
function transferCompleted(event: RecordedEvent): Notification {
  const d = event.data as TransactionCreatedData;
  return { partnerId: d.partnerId, type: 'transfer.completed', eventId: event.id, data: createdView(d) };
}

/** The user an event is about, when the event names no partner. */
const userOf = (e: RecordedEvent): string | undefined => {
  const d = e.data as { userId?: unknown; partnerId?: unknown };
  return typeof d.userId === 'string' && d.partnerId === undefined ? d.userId : undefined;
};

export async function batchReads(sources: NotificationSources, events: RecordedEvent[]): Promise<BatchReads> {
  const uuids = [...new Set(events.filter(readsTransaction).map((e) => String((e.data as { uuid: unknown }).uuid)))];
  const users = [...new Set(events.map(userOf).filter((u) => u !== undefined))];
  const [transactions, userPartners, cardTransactions] = await Promise.all([
    uuids.length > 0 ? sources.ledger.reads.transactions(uuids) : new Map<string, FoundTransaction>(),
    users.length > 0 ? sources.userQueries.partnersOf(users) : new Map<string, string>(),
    sources.cards.spending.queries.byIds(cardTransactionIds(events)),
  ]);
  return { transactions, userPartners, cardTransactions };
}

async function found(read: (uuid: string) => Promise<FoundTransaction | null>, event: RecordedEvent, uuid: string): Promise<FoundTransaction> {
  const txn = await read(uuid);
  if (!txn) throw new Error(`transaction ${uuid} of event ${event.id} is not in the ledger read model`);
  return txn;
}

const withStatus = (found: FoundTransaction, event: RecordedEvent, type: NotificationType, status: string): Notification => ({
  partnerId: found.partnerId,
  type,
  eventId: event.id,
  data: { ...found.view, status },
});

export type { Notification, NotificationSources } from './notification';
