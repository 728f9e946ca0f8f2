/** Cards' deciders: applications, cards, keyed requests, limits, spends, authorizations. */
export * from './application';
export * from './authorization';
export * from './card';
export * from './keyed';
export * from './limit';
export * from './limit-frequencies';
export * from './merchant-categories';
export * from './refusals';
export * from './spend';
export * from './spend-book';
