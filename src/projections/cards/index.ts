/** The cards read model: card transactions (fold.ts) and the queries the card routes read it with (queries.ts). */
export { cardsProjection } from './fold';
export { type CardHolder, CardQueries, type CardTransactionFacts, type CardTransactionView, cardTransactionView, decodeCursor } from './queries';
