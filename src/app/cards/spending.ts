import { type AccountState, accountCreditStream, accountDecider, accountStream } from '../../domain/ledger';
import {
  type AuthorizationDecided,
  type AuthorizationRequest,
  decideAuthorizations,
  decideClearing,
  decideReversal,
  type SettlementDecided,
  type SettlementRequest,
} from '../../domain/cards/authorization';
import { type CardState, cardDecider, cardStream, requireCard, requireCardOfPartner } from '../../domain/cards/card';
import type { CardSpendData } from '../../domain/cards/spend';
import { spendOf } from '../../domain/cards/spend-book';
import { invariant } from '../../platform/decider';
import { uuidV5, uuidV7 } from '../../platform/ids';
import { type TransactionState, transactionDecider, transactionStream } from '../../domain/ledger';
import { type CardHolder, CardQueries, type CardTransactionView, cardTransactionView } from '../../projections/cards';
import { type Append, at, type Batches, type Decision, type Reads } from '../../platform/commands/command-handler';
import { type CommandContext, settledFact } from '../../platform/commands/commands';
import type { LedgerService } from '../ledger';
import { readAccount, runSettlement } from '../ledger';
import { writeScope } from '../../platform/consumers/read-your-writes';
import { OverloadedError } from '../../eventstore/port';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { Sql } from '../../eventstore/sql';
import type { WaitForReadModels } from '../../platform/consumers/read-your-writes';
import type { StateCache } from '../../platform/commands/commands';
import type { NoteWrite } from '../../platform/consumers/read-your-writes';
import type { ProfileService, UserService } from '../identity';
import { CARD_REFUSALS, refuseSettlement } from '../../domain/cards';
import { ErasedKeyError, EVERY_OWNER } from '../../platform/sealing/data-keys';
import { keyOwner } from '../../platform/sealing/sealer';

/** An authorization as the card network sends it (the sandbox route's body, checked). */
export interface AuthorizationInput {
  amount: string;
  currency: string;
  merchantName: string;
  merchantCategoryCode: string;
  localAmount?: string;
  localCurrency?: string;
  authorizationMethod?: string;
}

/** An authorization waiting for its account's batch. */
interface Asked {
  cardId: string;
  accountId: number;
  request: Omit<AuthorizationRequest, 'ledgerId' | 'at'>;
  ctx: CommandContext;
}

/** Card holders kept in memory before the memo starts again. */
const MAX_HOLDERS = 10_000;

export interface CardSpendingDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  sql: Sql;
  readYourWrites: WaitForReadModels;
  noteWrite: NoteWrite;
  profiles: Pick<ProfileService, 'get'>;
  users: Pick<UserService, 'get'>;
  /**
   * The holders' data keys: whether one is still alive, and each this node forgets (destroyed here or
   * elsewhere), whose owner's names go with it.
   */
  dataKeys: { onForget(listener: (owner: string) => void): void; forOwner(owner: string): Promise<unknown> };
}

/**
 * Card spends: authorizations decided in order per account (so per card), each a card transaction,
 * the approved ones holds on the account; clearings and reversals settle them. The clock is a field
 * so tests can put authorizations exactly at a window's edge.
 */
export class CardSpending {
  /** Now, as an ISO 8601 instant: every decision's time. */
  clock: () => string = () => new Date().toISOString();
  readonly queries: CardQueries;
  private readonly authorizations: Batches<Asked, AuthorizationDecided>;
  /** Card holders already read, by their data key's owner (`user:<id>`), with their partner (see `holder`). */
  private readonly holders = new Map<string, { partnerId: string; holder: CardHolder }>();

  constructor(
    private readonly deps: CardSpendingDeps,
    private readonly ledger: LedgerService,
  ) {
    this.queries = new CardQueries(deps.sql);
    this.authorizations = deps.commands.batches((asked, reads) => this.decideBatch(asked, reads));
    // The names and email were read under the holder's key: forgotten with it, on every node at once.
    deps.dataKeys.onForget((owner) => (owner === EVERY_OWNER ? this.holders.clear() : this.holders.delete(owner)));
  }

  /** A sandbox authorization on one of the partner's cards: 201 the card transaction, pending or declined. */
  async authorize(partnerId: string, cardId: string, input: AuthorizationInput, ctx: CommandContext): Promise<CardTransactionView> {
    const card = requireCardOfPartner(await this.issuedCard(cardId), partnerId);
    const request = {
      transactionId: uuidV7(),
      amount: input.amount,
      currency: input.currency,
      localAmount: input.localAmount ?? null,
      localCurrency: input.localCurrency ?? null,
      merchantName: input.merchantName,
      merchantCategoryCode: input.merchantCategoryCode,
      authorizationMethod: input.authorizationMethod ?? null,
    };
    const done = await this.authorizations.submit(accountStream(card.accountId), ctx, { cardId, accountId: card.accountId, request, ctx });
    this.noteWrites(partnerId, done.position);
    const decided = done.result;
    const event = decided.card[0];
    invariant(event?.type === 'CardSpendAuthorized' || event?.type === 'CardSpendDeclined', 'an authorization is a card transaction');
    const declinedReason = event.type === 'CardSpendDeclined' ? event.data.declinedReason : null;
    return cardTransactionView(spendFacts(event.data, declinedReason), await this.holder(partnerId, card.userId));
  }

  /**
   * The card as issued. Which partner's card it is and which account it spends from never change
   * once issued, so a cached state tells them; only a card not known issued is read again.
   */
  private issuedCard(cardId: string): Promise<CardState['card']> {
    return settledFact(this.deps.store, this.deps.stateCache, cardStream(cardId), cardDecider, (state) => state.card);
  }

  /** Authorizations on one account, decided in order on its state and its cards' and appended together. */
  private async decideBatch(batch: Asked[], reads: Reads): Promise<Decision<AuthorizationDecided[]>> {
    const now = this.clock();
    const account = await readAccount(reads, batch[0]?.accountId as number);
    const cardIds = [...new Set(batch.map((asked) => asked.cardId))];
    const cards = new Map(await Promise.all(cardIds.map(async (id) => [id, await reads.stream(cardStream(id), cardDecider)] as const)));
    const requests = [];
    for (const asked of batch) requests.push({ cardId: asked.cardId, request: { ...asked.request, at: now, ledgerId: await this.ledger.ids.next() } });
    const states = new Map([...cards].map(([id, loaded]) => [id, loaded.state] as [string, CardState]));
    const { outcomes } = decideAuthorizations(states, account.state, requests);
    const appends: Append[] = [];
    outcomes.forEach((decided, i) => {
      const { cardId, ctx, request } = batch[i] as Asked;
      appends.push({ stream: cardStream(cardId), events: decided.card, expected: at(cards.get(cardId) as { revision: number }), ctx, cached: cardDecider });
      if (decided.outcome !== 'approved') return;
      appends.push(
        { stream: accountStream(account.state.accountId as number), events: decided.debit, expected: at(account), ctx, cached: accountDecider },
        { stream: transactionStream(request.transactionId), events: decided.transaction, expected: 'no_stream', ctx },
      );
    });
    // A decline decided on a state trusted from the cache (a credit it had not seen) is decided again on the stored one.
    return { appends, result: outcomes, refused: outcomes.some((o) => o.outcome === 'declined') };
  }

  /** The merchant took the money (`amount`, or the authorized amount): 200 the card transaction, completed. */
  clear(partnerId: string, transactionId: string, amount: string | undefined, ctx: CommandContext): Promise<CardTransactionView> {
    return this.settle(partnerId, transactionId, ctx, 'clear', (card, account, txn, request) => decideClearing(card, account, txn, { ...request, amount }));
  }

  /** The authorization is reversed: its hold comes back. 200 the card transaction, reversed. */
  reverse(partnerId: string, transactionId: string, ctx: CommandContext): Promise<CardTransactionView> {
    return this.settle(partnerId, transactionId, ctx, 'reverse', decideReversal);
  }

  private async settle(
    partnerId: string,
    transactionId: string,
    ctx: CommandContext,
    action: 'clear' | 'reverse',
    decide: (card: CardState, account: AccountState, txn: TransactionState, request: SettlementRequest) => SettlementDecided,
  ): Promise<CardTransactionView> {
    const done = await runSettlement(this.deps.commands, this.deps.store, transactionId, ctx, async (reads) => {
      const stream = transactionStream(transactionId);
      const txn = await reads.stream(stream, transactionDecider, { cached: false });
      const created = txn.state.created;
      if (created?.kind !== 'CARD' || created.partnerId !== partnerId) return this.notSettleable(partnerId, transactionId, action);
      const cardId = String(created.details.cardId);
      const card = await reads.stream(cardStream(cardId), cardDecider);
      // Not among the card's spends: a difference's ledger transaction, or a spend settled long ago the card no longer keeps.
      if (!spendOf(card.state.spends, transactionId)) return this.notSettleable(partnerId, transactionId, action);
      const accountId = requireCard(card.state).accountId;
      const account = await readAccount(reads, accountId);
      // The difference's ledger transaction is named after the card transaction: a decision made again names the same one.
      const difference = { uuid: uuidV5(`card-difference:${transactionId}`), id: await this.ledger.ids.next() };
      const decided = decide(card.state, account.state, txn.state, { transactionId, at: this.clock(), difference });
      const appends: Append[] = [
        { stream: cardStream(cardId), events: decided.card, expected: at(card), cached: cardDecider },
        { stream: accountStream(accountId), events: decided.debit, expected: at(account), cached: accountDecider },
        { stream: accountCreditStream(accountId), events: decided.credit, expected: 'any', cached: accountDecider },
        { stream, events: decided.transaction, expected: at(txn) },
        { stream: transactionStream(difference.uuid), events: decided.difference, expected: 'no_stream' },
      ];
      return { appends, result: undefined };
    });
    this.noteWrites(partnerId, done.position);
    // A sandbox operation, not a hot path: it answers from the read model, waited for.
    await this.deps.readYourWrites(done.position, ['cards']);
    let view = await this.queries.get(partnerId, transactionId);
    if (view === null) {
      // Nothing appended this time (a settlement made before, sent again) while the read model is
      // still catching up (after a restart, say): wait for what the log holds now.
      await this.deps.readYourWrites(await this.deps.store.headPosition(), ['cards']);
      view = await this.queries.get(partnerId, transactionId);
    }
    // Still behind after the bounded wait: a 503 the caller may retry, not a wrong answer.
    if (view === null) throw new OverloadedError('the cards read model is catching up');
    return view;
  }

  /**
   * Not a spend the card holds for the partner: a card transaction the read model knows (declined, or
   * settled long ago) is 409 with its status, anything else 404.
   */
  private async notSettleable(partnerId: string, transactionId: string, action: 'clear' | 'reverse'): Promise<never> {
    const seen = await this.queries.get(partnerId, transactionId);
    if (seen && seen.spend.status !== 'pending') refuseSettlement(seen.spend.status, action);
    throw CARD_REFUSALS.transactionNotFound();
  }

  /**
   * The card holder's name and email, as the card transaction shows them (read models: display only,
   * no decision). They are fixed before any card exists (the names once KYC is approved, which a
   * card application needs; the email until erasure), so once read they are kept until the holder's
   * data key is forgotten on this node (erasure destroys it: see the constructor). An erased holder
   * has null for each: the users read model no longer has them, or their key is destroyed (checked
   * last, with nothing awaited before they are kept: the read models may lag the erasure's notice).
   */
  private async holder(partnerId: string, userId: string): Promise<CardHolder> {
    const owner = keyOwner.user(userId);
    const known = this.holders.get(owner);
    if (known?.partnerId === partnerId) return known.holder;
    const [user, profile] = await Promise.all([this.deps.users.get(partnerId, userId), this.deps.profiles.get(userId)]);
    if (!user || !(await this.keyAlive(owner))) return { firstName: null, lastName: null, email: null };
    const holder = { firstName: profile?.firstName ?? '', lastName: profile?.lastName ?? null, email: user.email };
    if (profile?.firstName) {
      if (this.holders.size >= MAX_HOLDERS) this.holders.clear();
      this.holders.set(owner, { partnerId, holder });
    }
    return holder;
  }

  private async keyAlive(owner: string): Promise<boolean> {
    try {
      await this.deps.dataKeys.forOwner(owner);
      return true;
    } catch (error) {
      if (error instanceof ErasedKeyError) return false;
      throw error;
    }
  }

  /** The authorization moved money (ledger) and made a card transaction (cards): the partner's next reads of either wait for it. */
  private noteWrites(partnerId: string, position: string | undefined): void {
    this.deps.noteWrite(writeScope('ledger', partnerId), position);
    this.deps.noteWrite(writeScope('cards', partnerId), position);
  }
}

/** A card transaction as its authorization made it (declined with `declinedReason`, else pending). */
export function spendFacts(d: CardSpendData, declinedReason: string | null) {
  return {
    id: d.transactionId,
    cardId: d.cardId,
    cardType: d.cardType,
    userId: d.userId,
    partnerId: d.partnerId,
    status: declinedReason === null ? ('pending' as const) : ('declined' as const),
    declinedReason,
    amount: d.amount,
    authorizedAmount: d.amount,
    currency: d.currency,
    localAmount: d.localAmount,
    localCurrency: d.localCurrency,
    merchantName: d.merchantName,
    merchantCategoryCode: d.merchantCategoryCode,
    authorizationMethod: d.authorizationMethod,
    authorizedAt: d.at,
    postedAt: null,
  };
}
