import { createHmac, randomUUID } from 'node:crypto';
import { cardApplicationDecider, cardApplicationStream, requireApproved } from '../../domain/cards/application';
import {
  type Card,
  type CardAction,
  type CardEvent,
  type CardState,
  cardDecider,
  cardStream,
  checkPin,
  primaryCardId,
  requireCard,
  requireOwnedCard,
  requireRevealable,
  userCardsDecider,
  userCardsStream,
} from '../../domain/cards/card';
import type { CardRequestKind } from '../../domain/cards/keyed';
import { type CardLimit, DEFAULT_CARD_LIMIT, parseLimit } from '../../domain/cards/limit';
import { uuidV5 } from '../../platform/ids';
import type { CardIssuer, CardSecrets } from '../../providers/cards/port';
import { type Append, at, type Reads } from '../../platform/commands/command-handler';
import { type CommandContext, load } from '../../platform/commands/commands';
import type { IdempotencyKeys } from '../ledger';
import type { CardApplications } from './applications';
import { answeredBefore, type CardKey, cardKey, exclusive, keepAnswer } from './keyed';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../../platform/commands/commands';
import type { ServiceKeys } from '../../platform/keys';

type User = { userId: string; partnerId: string };
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A card as every read and answer shows it: nothing secret, the limit's amount a decimal string. */
export interface CardView {
  id: string;
  type: Card['type'];
  status: Card['status'];
  last4: string;
  expirationMonth: string;
  expirationYear: string;
  limit: CardLimit;
  createdAt: string;
  updatedAt: string;
}

export const viewOfCard = (card: Card): CardView => ({
  id: card.cardId,
  type: card.type,
  status: card.status,
  last4: card.last4,
  expirationMonth: card.expirationMonth,
  expirationYear: card.expirationYear,
  limit: card.limit,
  createdAt: card.createdAt,
  updatedAt: card.updatedAt,
});

/** A keyed call's answer: the data, and whether it is the first answer given again. */
export interface Answered<T> {
  data: T;
  replayed: boolean;
}

/** What a change of the card decides: its events, and what the issuer must be told first. */
interface CardChange {
  events: CardEvent[];
  tellIssuer?: (issuer: CardIssuer, reference: string) => Promise<void>;
}

export interface CardCommandsDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  /** The service's pepper: a PIN is kept as its keyed digest. */
  serviceKeys: Pick<ServiceKeys, 'pepper'>;
}

/** Cards: issued on an approved application, then moved, limited and given a PIN, each call idempotent by key. */
export class CardCommands {
  constructor(
    private readonly deps: CardCommandsDeps,
    private readonly applications: CardApplications,
    private readonly keys: IdempotencyKeys,
  ) {}

  /** Issues the user's card (virtual: active, physical: notActivated) on the approved application. */
  async issue(user: User, ctx: CommandContext, idempotencyKey?: string): Promise<Answered<CardView>> {
    const key = idempotencyKey === undefined ? undefined : cardKey(user, 'issue', {}, idempotencyKey, ctx);
    // A keyed issue names its card: a retry after a lost answer asks the issuer for the same one.
    const cardId = key ? uuidV5(`card:${key.uuid}`) : randomUUID();
    return exclusive(this.keys, key, async () => {
      const done = await this.deps.commands.run(key?.ctx ?? ctx, (reads) => this.decideIssue(reads, user, cardId, key), { cache: false });
      return done.result as Answered<CardView>;
    });
  }

  private async decideIssue(reads: Reads, user: User, cardId: string, key: CardKey | undefined) {
    const before = key ? await answeredBefore(reads, key) : null;
    if (before) return { appends: [], result: { data: before as unknown as CardView, replayed: true } };
    const now = new Date().toISOString();
    const [applications, index] = await Promise.all([
      reads.stream(cardApplicationStream(user.userId), cardApplicationDecider),
      reads.stream(userCardsStream(user.userId), userCardsDecider),
    ]);
    const application = requireApproved(applications.state);
    const latestId = primaryCardId(index.state);
    const latest = latestId ? (await reads.stream(cardStream(latestId), cardDecider)).state.card : null;
    const assigned = userCardsDecider.decide({ type: 'Assign', userId: user.userId, cardId, latestStatus: latest?.status ?? null, at: now }, index.state);
    const issuer = this.applications.issuer(application.issuer);
    const request = {
      cardId,
      userId: user.userId,
      issuerApplicationId: application.issuerApplicationId,
      type: application.cardType,
      limit: DEFAULT_CARD_LIMIT,
    };
    const issued = await this.applications.callIssuer(() => issuer.issueCard(request));
    const card = {
      cardId,
      userId: user.userId,
      partnerId: user.partnerId,
      accountId: application.accountId,
      applicationId: application.id,
      type: application.cardType,
    };
    const events = cardDecider.decide(
      { type: 'Issue', card: { ...card, ...issued, issuerReference: issued.reference, issuer: issuer.name, at: now } },
      cardDecider.initialState(),
    );
    const view = viewOfCard(events.reduce(cardDecider.evolve, cardDecider.initialState()).card as Card);
    const appends: Append[] = [
      { stream: cardStream(cardId), events, expected: 'no_stream' },
      { stream: userCardsStream(user.userId), events: assigned, expected: at(index) },
    ];
    if (key) appends.push(keepAnswer(key, cardId, view as unknown as { [key: string]: Json }, now));
    return { appends, result: { data: view, replayed: false } };
  }

  /** Activate, lock or unlock the user's card: `{id, status}`. */
  async changeStatus(
    user: User,
    action: Exclude<CardAction, 'cancel'>,
    ctx: CommandContext,
    idempotencyKey?: string,
  ): Promise<Answered<{ id: string; status: string }>> {
    return this.onCard(
      user,
      action,
      {},
      ctx,
      idempotencyKey,
      (state, now) => ({
        events: cardDecider.decide({ type: 'ChangeStatus', action, at: now }, state),
        tellIssuer: (issuer, reference) => issuer.updateCard(reference, { status: action === 'lock' ? 'locked' : 'active' }),
      }),
      (card) => ({ id: card.cardId, status: card.status }),
    );
  }

  /** A new spending limit: `{id, limit}`. */
  async setLimit(
    user: User,
    input: { amount: unknown; frequency: unknown },
    ctx: CommandContext,
    idempotencyKey?: string,
  ): Promise<Answered<{ id: string; limit: CardLimit }>> {
    const limit = parseLimit(input.amount, input.frequency);
    return this.onCard(
      user,
      'limit',
      limit,
      ctx,
      idempotencyKey,
      (state, now) => ({
        events: cardDecider.decide({ type: 'SetLimit', limit, at: now }, state),
        tellIssuer: (issuer, reference) => issuer.updateCard(reference, { limit }),
      }),
      (card) => ({ id: card.cardId, limit: card.limit }),
    );
  }

  /**
   * A new PIN: it goes to the issuer only; the log records that it changed. Under a key, the request
   * is known by an HMAC of the PIN with a service secret: a plain hash of four digits is undone by
   * trying the 10,000 of them.
   */
  async setPin(user: User, pin: unknown, ctx: CommandContext, idempotencyKey?: string): Promise<Answered<{ id: string }>> {
    const valid = checkPin(pin);
    const pinDigest = createHmac('sha256', this.deps.serviceKeys.pepper).update(`card-pin:${user.userId}:${valid}`).digest('hex');
    return this.onCard(
      user,
      'pin',
      { pinDigest },
      ctx,
      idempotencyKey,
      (state, now) => ({
        events: cardDecider.decide({ type: 'ChangePin', pin: valid, at: now }, state),
        tellIssuer: (issuer, reference) => issuer.setPin(reference, valid),
      }),
      (card) => ({ id: card.cardId }),
    );
  }

  /**
   * One change of the user's primary card: the first answer again under a key used before, or the
   * decision, the issuer told, and the events appended at the card's revision with the answer kept.
   */
  private async onCard<T extends { [key: string]: Json | CardLimit }>(
    user: User,
    kind: CardRequestKind,
    request: object,
    ctx: CommandContext,
    idempotencyKey: string | undefined,
    change: (state: CardState, now: string) => CardChange,
    answer: (card: Card) => T,
  ): Promise<Answered<T>> {
    const key = idempotencyKey === undefined ? undefined : cardKey(user, kind, request, idempotencyKey, ctx);
    return exclusive(this.keys, key, async () => {
      const done = await this.deps.commands.run(
        key?.ctx ?? ctx,
        async (reads) => {
          const before = key ? await answeredBefore(reads, key) : null;
          if (before) return { appends: [], result: { data: before as T, replayed: true } };
          const now = new Date().toISOString();
          const loaded = await this.primary(reads, user.userId);
          const card = requireCard(loaded.state, user.userId);
          const decided = change(loaded.state, now);
          if (decided.tellIssuer)
            await this.applications.callIssuer(() => decided.tellIssuer?.(this.applications.issuer(card.issuer), card.issuerReference) as Promise<void>);
          const data = answer(decided.events.reduce(cardDecider.evolve, loaded.state).card as Card);
          const appends: Append[] = [{ stream: cardStream(card.cardId), events: decided.events, expected: at(loaded) }];
          if (key) appends.push(keepAnswer(key, card.cardId, data as { [key: string]: Json }, now));
          return { appends, result: { data, replayed: false } };
        },
        { cache: false },
      );
      return done.result;
    });
  }

  /** The operator's cancel, by card id: final (docs/decisions.md, "Cards"). */
  async cancel(cardId: string, ctx: CommandContext): Promise<{ id: string; status: string }> {
    const done = await this.deps.commands.run(
      ctx,
      async (reads) => {
        const loaded = await reads.stream(cardStream(cardId), cardDecider);
        const card = requireCard(loaded.state);
        const events = cardDecider.decide({ type: 'ChangeStatus', action: 'cancel', at: new Date().toISOString() }, loaded.state);
        await this.applications.callIssuer(() => this.applications.issuer(card.issuer).updateCard(card.issuerReference, { status: 'canceled' }));
        return { appends: [{ stream: cardStream(cardId), events, expected: at(loaded) }], result: { id: cardId, status: 'canceled' } };
      },
      { cache: false },
    );
    return done.result;
  }

  private async primary(reads: Reads, userId: string) {
    const index = await reads.stream(userCardsStream(userId), userCardsDecider);
    const cardId = primaryCardId(index.state);
    return cardId ? reads.stream(cardStream(cardId), cardDecider) : { state: cardDecider.initialState(), revision: -1 };
  }

  /** The user's cards, oldest first (from the write side). */
  async cardsOf(userId: string): Promise<Card[]> {
    const { state } = await load(this.deps.store, userCardsStream(userId), userCardsDecider);
    const loaded = await Promise.all(state.cardIds.map((id) => load(this.deps.store, cardStream(id), cardDecider)));
    return loaded.flatMap((l) => (l.state.card ? [l.state.card] : []));
  }

  /**
   * A card the user names: 404 when unknown or another partner's (its existence is not theirs to
   * learn), 403 when another user's of the same partner (as accounts are, docs/decisions.md, "Errors").
   */
  async requireOwnCard(cardId: string, user: User): Promise<Card> {
    const { state } = await load(this.deps.store, cardStream(cardId), cardDecider, { cache: this.deps.stateCache });
    return requireOwnedCard(state.card, user);
  }

  /** The user's primary card (the latest issued), 404 when there is none. */
  async primaryCard(userId: string): Promise<Card> {
    const cards = await this.cardsOf(userId);
    const card = cards[cards.length - 1];
    if (!card) return requireCard({ card: null });
    return card;
  }

  /** Number, CVC and expiry from the issuer: never for a locked or canceled card. */
  async secrets(userId: string): Promise<CardSecrets> {
    const card = requireRevealable(await this.primaryCard(userId), 'revealSecrets');
    return this.applications.callIssuer(() => this.applications.issuer(card.issuer).revealSecrets(card.issuerReference));
  }

  /** The PIN from the issuer (null while none was set): as the secrets, never for a locked or canceled card. */
  async pin(userId: string): Promise<{ id: string; pin: string | null }> {
    const card = requireRevealable(await this.primaryCard(userId), 'revealPin');
    const pin = await this.applications.callIssuer(() => this.applications.issuer(card.issuer).revealPin(card.issuerReference));
    return { id: card.cardId, pin };
  }
}
