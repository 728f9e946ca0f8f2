import { viewOfCard } from '../cards';
import { spendFacts } from '../cards';
import { applicationOf, cardOf } from '../cards';
import { load } from '../../platform/commands/commands';
import { type CardApplicationEvent, cardApplicationDecider, type CardApplicationState } from '../../domain/cards';
import { type Card, type CardEvent, cardDecider } from '../../domain/cards';
import type { Decider, DomainEvent } from '../../platform/decider';
import type { CardSpendData, CardSpendEvent } from '../../domain/cards';
import type { RecordedEvent } from '../../eventstore/port';
import { cardTransactionView } from '../../projections/cards';
import type { Notification, NotificationSources } from './notification';

/** An application's submission and its decision: card.application.updated. */
export const CARD_APPLICATION_EVENTS = ['CardApplicationSubmitted', 'CardApplicationDecided'];
/** Issuance, status moves and limit changes: card.updated (a PIN change shows nothing new of the card). */
export const CARD_EVENTS = ['CardIssued', 'CardActivated', 'CardLocked', 'CardUnlocked', 'CardCanceled', 'CardLimitChanged'];
/** An authorization, approved or declined, makes a card transaction; clearing or reversal updates it. */
export const CARD_TRANSACTION_EVENTS = ['CardSpendAuthorized', 'CardSpendDeclined', 'CardSpendCleared', 'CardSpendReversed'];

/**
 * `data: {application}` as GET cards/application/status shows it just after the event: the user's
 * application stream (a few events) folded up to the event itself.
 */
export async function cardApplicationUpdated(sources: NotificationSources, event: RecordedEvent): Promise<Notification> {
  const state = await foldUpTo<CardApplicationState, CardApplicationEvent>(sources, event, cardApplicationDecider);
  const application = state.current;
  if (!application) throw new Error(`card application of event ${event.id} not found in ${event.stream}`);
  return { partnerId: application.partnerId, type: 'card.application.updated', eventId: event.id, data: { application: applicationOf(application) } };
}

/**
 * The card as GET cards/details showed it just after the event. Its stream also holds every spend:
 * the cached state serves when the card has not moved since; otherwise the stream is folded up to
 * the event (rare: issuance and changes of the card are few beside its spends).
 */
export async function cardUpdated(sources: NotificationSources, event: RecordedEvent): Promise<Notification> {
  const e = { type: event.type, data: event.data } as CardEvent;
  let card: Card | null;
  if (e.type === 'CardIssued') card = cardDecider.evolve(cardDecider.initialState(), e).card;
  else {
    const loaded = await load(sources.store, event.stream, cardDecider, { cache: sources.stateCache });
    card = loaded.revision === event.revision ? loaded.state.card : await foldUpTo(sources, event, cardDecider).then((s) => s.card);
  }
  if (!card) throw new Error(`card of event ${event.id} not found in ${event.stream}`);
  return { partnerId: card.partnerId, type: 'card.updated', eventId: event.id, data: cardOf(viewOfCard(card)) };
}

/** The state of the event's stream just after the event. */
async function foldUpTo<State, E extends DomainEvent>(
  sources: NotificationSources,
  event: RecordedEvent,
  decider: Pick<Decider<State, unknown, E>, 'initialState' | 'evolve'>,
): Promise<State> {
  const events = await sources.store.readStream(event.stream, { toRevision: event.revision });
  let state = decider.initialState();
  for (const e of events) state = decider.evolve(state, { type: e.type, data: e.data } as E);
  return state;
}

/** Card transactions read ahead for a batch of events, by id (CardQueries.byIds). */
export type CardTransactionReads = Awaited<ReturnType<NotificationSources['cards']['spending']['queries']['byIds']>>;

/** The card transaction ids a batch's notifications read. */
export const cardTransactionIds = (events: RecordedEvent[]): string[] => [
  ...new Set(events.filter((e) => CARD_TRANSACTION_EVENTS.includes(e.type)).map((e) => (e.data as CardSpendData).transactionId)),
];

/**
 * The card transaction as the card routes answer it, read from the cards read model (read ahead
 * for the batch, or alone). A creation carries the transaction as it was made (the event's own
 * facts), even when it has been cleared or reversed since; a clearing or reversal is final, so the
 * read is the transaction just after it.
 */
export async function cardTransaction(sources: NotificationSources, event: RecordedEvent, batch?: CardTransactionReads): Promise<Notification> {
  const e = { type: event.type, data: event.data } as CardSpendEvent;
  const id = e.data.transactionId;
  const found = batch?.get(id) ?? (await sources.cards.spending.queries.byIds([id])).get(id);
  if (!found) throw new Error(`card transaction ${id} of event ${event.id} is not in the cards read model`);
  const { partnerId, view: read } = found;
  if (e.type !== 'CardSpendAuthorized' && e.type !== 'CardSpendDeclined') return { partnerId, type: 'card.transaction.updated', eventId: event.id, data: read };
  const d: CardSpendData = e.data;
  const declinedReason = e.type === 'CardSpendDeclined' ? e.data.declinedReason : null;
  const view = cardTransactionView(
    { ...spendFacts(d, declinedReason), authorizedAt: read.spend.authorizedAt },
    { firstName: read.spend.userFirstName, lastName: read.spend.userLastName, email: read.spend.userEmail },
  );
  return { partnerId: d.partnerId, type: 'card.transaction.created', eventId: event.id, data: view };
}
