import type { LedgerService } from '../ledger';
import { CardApplications, type CardApplicationsDeps } from './applications';
import { CardCommands, type CardCommandsDeps } from './cards';
import { CardSpending, type CardSpendingDeps } from './spending';

export type { ApplyInput, StatusSummary } from './applications';
export { type Answered, type CardView, viewOfCard } from './cards';
export { type AuthorizationInput, spendFacts } from './spending';
export { applicationOf, cardOf } from './views';

export type CardsServiceDeps = CardApplicationsDeps & CardCommandsDeps & CardSpendingDeps & { ledger: LedgerService };

/** Cards: applications, the card itself and its spends, on the one command path. */
export class CardsService {
  readonly applications: CardApplications;
  readonly cards: CardCommands;
  /** Authorizations, clearings and reversals: card spends on the user's account. */
  readonly spending: CardSpending;

  constructor(deps: CardsServiceDeps) {
    this.applications = new CardApplications(deps);
    // The ledger's in-flight tracker: one for every keyed command, card calls included.
    this.cards = new CardCommands(deps, this.applications, deps.ledger.keys);
    this.spending = new CardSpending(deps, deps.ledger);
  }
}
