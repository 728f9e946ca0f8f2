import type { CardApplication } from '../../domain/cards/application';
import type { CardView } from './cards';

/**
 * Cards and applications as the API shows them (the card routes' answers, and the data of the
 * card notifications): the limit's amount a JSON number, as the interface types it.
 */
export const cardSummaryOf = (view: CardView) => ({
  id: view.id,
  type: view.type,
  status: view.status,
  last4: view.last4,
  expirationMonth: view.expirationMonth,
  expirationYear: view.expirationYear,
  limit: { amount: Number(view.limit.amount), frequency: view.limit.frequency },
});

/** GET cards/details. */
export const cardOf = (view: CardView) => ({ ...cardSummaryOf(view), createdAt: view.createdAt, updatedAt: view.updatedAt });

/** The `application` of POST cards/application and GET cards/application/status. */
export const applicationOf = (a: CardApplication) => ({
  id: a.id,
  accountId: a.accountId,
  userId: a.userId,
  issuerApplicationId: a.issuerApplicationId,
  identityShareToken: null,
  walletAddress: a.walletAddress,
  solanaAddress: a.solanaAddress,
  tronAddress: a.tronAddress,
  chainId: a.chainId,
  contractAddress: a.contractAddress,
  sourceKey: a.sourceKey,
  ipAddress: a.ipAddress,
  occupation: a.occupation,
  annualSalary: a.annualSalary,
  accountPurpose: a.accountPurpose,
  expectedMonthlyVolume: a.expectedMonthlyVolume,
  isTermsOfServiceAccepted: a.isTermsOfServiceAccepted,
  hasExistingDocuments: a.hasExistingDocuments,
  cardType: a.cardType,
  isActive: a.applicationStatus !== 'declined',
  applicationStatus: a.applicationStatus,
  applicationReason: a.applicationReason,
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
});
