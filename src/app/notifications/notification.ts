import type { NotificationType } from '../../domain/notifications/endpoint';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../../platform/commands/commands';
import type { CardQueries } from '../../projections/cards';
import type { UserQueries } from '../../projections/identity';
import type { LedgerQueries } from '../../projections/ledger';
import type { KycService, UserService } from '../identity';

/** What a notification's data is read from: the log, the read models, and the services that answer the API. */
export interface NotificationSources {
  store: EventStore;
  stateCache: StateCache;
  users: Pick<UserService, 'evenErased'>;
  userQueries: Pick<UserQueries, 'partnerOf' | 'partnersOf'>;
  kyc: Pick<KycService, 'statusView'>;
  ledger: { reads: Pick<LedgerQueries, 'transaction' | 'transactions'> };
  cards: { spending: { queries: Pick<CardQueries, 'byIds'> } };
}

/** One notification to one partner: what the outbox stores and delivery sends as `{id, type, createdAt, sequence, data}`. */
export interface Notification {
  partnerId: string;
  type: NotificationType;
  eventId: string;
  data: unknown;
}
