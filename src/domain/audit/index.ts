/** Audit's deciders: the auditor credential and its record of use. */
export * from './auditor';
export * from './refusals';
