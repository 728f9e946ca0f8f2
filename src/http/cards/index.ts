/** Cards over HTTP: applications, the card and its operations, card transactions, and the sandbox's card routes. */
export { cardOperationRoutes } from './operations';
export { Application, Card, cardsRoutes } from './routes';
export { CardTransaction, cardTransactionRoutes, sandboxCardTransactionRoutes } from './transactions';
