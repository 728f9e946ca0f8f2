import type { CardsService } from '../app/cards';
import { CARD_REFUSALS } from '../domain/cards';
import { DomainError } from '../platform/decider';
import type { ErasedUser } from '../app/identity';
import type { Notifications } from '../app/notifications';
import type { CommandContext } from '../platform/commands/commands';
import type { BuiltProviders } from '../providers';

/**
 * What erasure does beyond the user's stream, in order (docs/privacy.md): cancel the user's cards,
 * scrub the user's notifications, drop what the sandbox providers kept. Each is idempotent: a re-run
 * of a cut-short erasure does them again.
 */
export function erasureFollowUps(parts: {
  cards: CardsService;
  notifications: Notifications;
  providers: Pick<BuiltProviders, 'sandbox'>;
}): Array<(user: ErasedUser, ctx: CommandContext) => Promise<void>> {
  const { cards, notifications } = parts;
  const sandbox = parts.providers.sandbox;
  return [
    async ({ userId }, ctx) => {
      for (const card of await cards.cards.cardsOf(userId)) if (card.status !== 'canceled') await cancelOnce(cards.cards.cancel(card.cardId, ctx));
    },
    ({ partnerId, userId }) => notifications.scrubUser(partnerId, userId),
    async ({ userId, email }) => {
      if (!sandbox) return;
      await sandbox.cards.forgetUser(userId);
      await sandbox.identity.forgetReference(userId);
      if (email !== null) await sandbox.outbox.forget(email);
    },
  ];
}

/** A card canceled meanwhile (an erasure run again while the first still runs) is what was wanted. */
async function cancelOnce(cancel: Promise<unknown>): Promise<void> {
  try {
    await cancel;
  } catch (error) {
    if (!(error instanceof DomainError && error.code === CARD_REFUSALS.cancelForbidden.code)) throw error;
  }
}
