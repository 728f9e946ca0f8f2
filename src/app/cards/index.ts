import { IdempotencyKeys } from '../ledger/idempotency';
import type { Tally } from '../tally';
import { CardApplications } from './applications';
import { CardCommands } from './cards';

export type { ApplyInput, StatusSummary } from './applications';
export { type Answered, type CardView, viewOfCard } from './cards';

/** Cards: applications and the card itself, on the one command path. */
export class CardsService {
  readonly applications: CardApplications;
  readonly cards: CardCommands;

  constructor(tally: Tally) {
    this.applications = new CardApplications(tally);
    this.cards = new CardCommands(tally, this.applications, new IdempotencyKeys());
  }
}
