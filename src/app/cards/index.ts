import type { Tally } from '../../compose/tally';
import { CardApplications } from './applications';
import { CardCommands } from './cards';
import { CardSpending } from './spending';

export type { ApplyInput, StatusSummary } from './applications';
export { type Answered, type CardView, viewOfCard } from './cards';
export type { AuthorizationInput } from './spending';

/** Cards: applications, the card itself and its spends, on the one command path. */
export class CardsService {
  readonly applications: CardApplications;
  readonly cards: CardCommands;
  /** Authorizations, clearings and reversals: card spends on the user's account. */
  readonly spending: CardSpending;

  constructor(tally: Tally) {
    this.applications = new CardApplications(tally);
    // The ledger's in-flight tracker: one for every keyed command, card calls included.
    this.cards = new CardCommands(tally, this.applications, tally.ledger.keys);
    this.spending = new CardSpending(tally, tally.ledger);
  }
}
