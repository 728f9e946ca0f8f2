import type { CardsService } from '../app/cards';
import { CARD_REFUSALS } from '../domain/cards';
import { DomainError } from '../platform/decider';
import { type ErasedUser, type ErasureDeps, UserErasure } from '../app/identity';
import type { Notifications } from '../app/notifications';
import type { CommandContext } from '../platform/commands/commands';
import type { EventStore } from '../eventstore/port';
import { ProviderUnavailable } from '../platform/failures';
import type { Reactors } from '../platform/consumers/reactors';
import type { BuiltProviders } from '../providers';

/** What the follow-ups use; `waitMs`: how long erasure waits for the outbox and the ledger read model. */
interface FollowUpParts {
  cards: CardsService;
  notifications: Notifications;
  providers: Pick<BuiltProviders, 'sandbox'>;
  store: Pick<EventStore, 'headPosition'>;
  reactors: Pick<Reactors, 'passed'>;
  waitMs: number;
}

/** The erasure service with its follow-ups (compose/tally.ts). */
export function userErasure(
  deps: Pick<ErasureDeps, 'commands' | 'store' | 'readYourWrites' | 'readModels' | 'dataKeys'>,
  parts: FollowUpParts & { ledger: { reads: { hasPending(accountId: number): Promise<boolean> } } },
): UserErasure {
  return new UserErasure({
    ...deps,
    pendingInLedger: (accountId) => parts.ledger.reads.hasPending(accountId),
    followUps: erasureFollowUps(parts),
    ledgerWaitMs: parts.waitMs,
  });
}

/**
 * What erasure does beyond the user's stream, in order (docs/privacy.md): cancel the user's cards,
 * scrub the user's notifications, drop what the sandbox providers kept. Each is idempotent: a re-run
 * of a cut-short erasure does them again.
 */
export function erasureFollowUps(parts: FollowUpParts): Array<(user: ErasedUser, ctx: CommandContext) => Promise<void>> {
  const { cards, notifications, store, reactors } = parts;
  const sandbox = parts.providers.sandbox;
  return [
    async ({ userId }, ctx) => {
      for (const card of await cards.cards.cardsOf(userId)) if (card.status !== 'canceled') await cancelOnce(cards.cards.cancel(card.cardId, ctx));
    },
    async ({ partnerId, userId }) => {
      // A notification the outbox built from the read models before they had the erasure (names in
      // it) may still be on its way to its table: once the outbox has passed the log's head, it is
      // there for the scrub to find, and every later one was built from read models without them.
      const head = await store.headPosition();
      if (!(await reactors.passed('outbox', head, parts.waitMs))) throw new OutboxBehind();
      await notifications.scrubUser(partnerId, userId);
    },
    async ({ userId, email }) => {
      if (!sandbox) return;
      await sandbox.cards.forgetUser(userId);
      await sandbox.identity.forgetReference(userId);
      if (email !== null) await sandbox.outbox.forget(email);
    },
  ];
}

/** The outbox did not pass the erasure in time: its notifications are not scrubbed yet, and the data key stays until an erasure run again finishes (503). */
class OutboxBehind extends ProviderUnavailable {
  constructor() {
    super('the notifications outbox has not passed the erasure yet: erase again to finish');
  }
}

/** A card canceled meanwhile (an erasure run again while the first still runs) is what was wanted. */
async function cancelOnce(cancel: Promise<unknown>): Promise<void> {
  try {
    await cancel;
  } catch (error) {
    if (!(error instanceof DomainError && error.code === CARD_REFUSALS.cancelForbidden.code)) throw error;
  }
}
