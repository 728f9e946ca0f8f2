/**
 * The hand-written parts of the API reference, kept apart from the routes: one example per named
 * schema, and per operation (`METHOD /path`) its request example, the messages of the errors it
 * answers beyond those every route of its kind answers (the builder adds those), and names for its
 * own request and response shapes. A success answer's example is built from the named schemas'
 * examples unless the operation gives one. The tests check every example against its schema, and
 * every message a sampled request really answered against the messages written here.
 */

/** Values the examples share, so that one user, account or card is followed through them. */
export const SAMPLE = {
  userId: 'b3e1c9a2-5d4f-4c1e-9a7b-2f6d8e0c1a34',
  payeeUserId: '0c8f3a52-9e61-4b7d-8d2a-51f0e6c7b9d3',
  partnerId: 'a5f0d2c4-7b13-4e8a-9c61-3d2b1f0e9a87',
  auditorId: '6d1e8f2a-3b4c-4d5e-8f60-718293a4b5c6',
  email: 'ada@example.com',
  accountId: 1002,
  payeeAccountId: 1003,
  transactionUuid: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
  payoutUuid: '5f2c8e1a-3b4d-4f6a-8c9e-0d1b2a3c4e5f',
  cardId: 'f47ac10b-58cc-4372-a567-0e02b2c3d479',
  applicationId: '6ba7b810-9dad-41d1-80b4-00c04fd430c8',
  cardTransactionId: '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
  inquiryId: 'inq_sandbox_60d7ccd781a436330f55ea2d',
  paymentId: 'pay_mock_25ba8ca2f0b830ba5115c9b6',
  payoutId: 'po_mock_694a4adb044d18794b72e60e',
  eventId: '9d4e1f2a-6b3c-4d5e-8f7a-1b2c3d4e5f60',
  deliveryId: 'c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e6f',
  idempotencyKey: '3f1d7a9c-2b4e-4f6a-8d0c-5e7b9a1c3d5f',
  apiKey: 'tk_sandbox_4f1c2a9e7b3d5f6a8c0e1d2b',
  apiSecret: 'ts_Zq3v9XkPp2mW8rT1yH6nJ4cL7bF0dS5aG2eU9iO3xE',
  accessToken: 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJiM2UxYzlhMiJ9.c2lnbmF0dXJl',
  refreshToken: 'rt_8mQ2xV7pL4nK9sD1fG6hJ3wE5rT0yU2iO8aZ4cB7',
  requestId: '0199f3a2-7c41-7d2e-9b8a-3f5e6d7c8b9a',
  at: '2026-03-02T14:05:09.123Z',
  later: '2026-03-02T14:05:39.123Z',
} as const;

/** The values `<name>` stands for in an error message below; any other `<text>` stands for itself. */
export const PLACEHOLDERS: Record<string, string> = {
  userId: SAMPLE.userId,
  accountId: String(SAMPLE.accountId),
  inquiryId: SAMPLE.inquiryId,
  paymentId: SAMPLE.paymentId,
  payoutId: SAMPLE.payoutId,
  applicationId: SAMPLE.applicationId,
};

const PROFILE = {
  firstName: 'Ada',
  lastName: 'Lovelace',
  dateOfBirth: '1990-12-10',
  nationality: 'CO',
  gender: 'female',
  governmentIdType: 'national_id',
  governmentIdNumber: '1020304050',
  governmentIdCountry: 'CO',
  addressLine1: 'Calle 93 #11-26',
  city: 'Bogotá',
  stateProvince: 'Cundinamarca',
  postalCode: '110221',
  addressCountry: 'CO',
  occupation: 'Engineer',
  annualSalary: '85000',
  accountPurpose: 'Savings',
  expectedMonthlyVolume: '2500',
};

const TRANSACTION_LIST_ITEM = {
  id: 5012,
  uuid: SAMPLE.transactionUuid,
  description: 'rent',
  status: 'COMPLETED',
  amount: '10.50000000',
  debitAccountId: SAMPLE.accountId,
  creditAccountId: SAMPLE.payeeAccountId,
  created: SAMPLE.at,
};
const USER_SUMMARY = { id: SAMPLE.userId, email: SAMPLE.email, status: 'pending', createdAt: SAMPLE.at };
const CARD_LIMIT = { amount: 1000, frequency: 'per24HourPeriod' };
const CARD_SUMMARY = { id: SAMPLE.cardId, type: 'virtual', status: 'active', last4: '4242', expirationMonth: '03', expirationYear: '29', limit: CARD_LIMIT };
const CARD = { ...CARD_SUMMARY, createdAt: SAMPLE.at, updatedAt: SAMPLE.at };
const DELIVERY = {
  id: SAMPLE.deliveryId,
  type: 'deposit.completed',
  eventId: SAMPLE.eventId,
  sequence: 42,
  createdAt: SAMPLE.at,
  status: 'succeeded',
  nextAttemptAt: null,
  attempts: [{ at: SAMPLE.at, httpStatus: 200, error: null, durationMs: 87 }],
};
const EVENTS = ['deposit.completed', 'deposit.failed', 'payout.updated'];
/** A notification as its delivery carries it, and as the events API answers it. */
const PARTNER_EVENT = {
  id: SAMPLE.deliveryId,
  type: 'deposit.completed',
  createdAt: SAMPLE.at,
  sequence: 42,
  data: { ...TRANSACTION_LIST_ITEM, updated: SAMPLE.at, status: 'COMPLETED' },
};
const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** One example per named schema (components.schemas), the objects partners meet. */
export const SCHEMA_EXAMPLES: Record<string, unknown> = {
  Account: { id: SAMPLE.accountId, asset: 'USDC', type: 'LIABILITY', credits: '150.00000000', debits: '30.50000000' },
  Asset: { asset: 'COP', name: 'Colombian peso', decimals: 2 },
  Card: CARD,
  CardApplication: {
    id: SAMPLE.applicationId,
    accountId: SAMPLE.accountId,
    userId: SAMPLE.userId,
    issuerApplicationId: 'app_sandbox_51f0e6c7b9d3',
    identityShareToken: null,
    walletAddress: null,
    solanaAddress: null,
    tronAddress: null,
    chainId: null,
    contractAddress: null,
    sourceKey: 'tally',
    ipAddress: '203.0.113.7',
    occupation: 'Engineer',
    annualSalary: '85000',
    accountPurpose: 'Savings',
    expectedMonthlyVolume: '2500',
    isTermsOfServiceAccepted: true,
    hasExistingDocuments: true,
    cardType: 'virtual',
    isActive: false,
    applicationStatus: 'pending',
    applicationReason: null,
    createdAt: SAMPLE.at,
    updatedAt: SAMPLE.at,
  },
  CardApplicationDecision: { applicationId: SAMPLE.applicationId, eventId: SAMPLE.eventId },
  CardBalance: { currency: 'USD', available: '117.00000000', pending: '2.50000000' },
  CardCanceled: { id: SAMPLE.cardId, status: 'canceled' },
  CardFullDetails: { ...CARD, tokenWallets: [], cardNumber: '400000******4242', cvc: '123' },
  CardLimit: CARD_LIMIT,
  CardLimitChanged: { id: SAMPLE.cardId, limit: { amount: 250.5, frequency: 'per7DayPeriod' } },
  CardPin: { pin: '2580' },
  CardPinSet: { id: SAMPLE.cardId },
  CardSecrets: { cardNumber: '4000001234564242', cvc: '123', expirationMonth: '03', expirationYear: '29' },
  CardStatus: { id: SAMPLE.cardId, status: 'active' },
  CardSummary: CARD_SUMMARY,
  CardTransaction: {
    id: SAMPLE.cardTransactionId,
    type: 'spend',
    spend: {
      amount: 2.5,
      currency: 'USD',
      localAmount: 10250,
      localCurrency: 'COP',
      authorizedAmount: 2.5,
      authorizationMethod: 'contactless',
      memo: null,
      receipt: false,
      merchantName: 'Café Juan Valdez',
      merchantCategory: 'Eating Places and Restaurants',
      merchantCategoryCode: '5812',
      merchantId: null,
      enrichedMerchantIcon: null,
      enrichedMerchantName: null,
      enrichedMerchantCategory: null,
      cardId: SAMPLE.cardId,
      cardType: 'virtual',
      companyId: SAMPLE.partnerId,
      userId: SAMPLE.userId,
      userFirstName: 'Ada',
      userLastName: 'Lovelace',
      userEmail: SAMPLE.email,
      status: 'pending',
      declinedReason: null,
      authorizedAt: SAMPLE.at,
      postedAt: null,
    },
  },
  DepositCreated: {
    transactionId: SAMPLE.transactionUuid,
    status: 'PENDING',
    inferredTransactionType: 'DEPOSIT',
    paymentLink: `/api/pay/${SAMPLE.paymentId}?transactionId=${SAMPLE.transactionUuid}&amount=100&currency=USDC`,
    message: 'Payment link created',
  },
  Error: { success: false, error: 'User not found', code: 'user_not_found', requestId: SAMPLE.requestId },
  KeyPair: { id: SAMPLE.partnerId, apiKey: SAMPLE.apiKey, apiSecret: SAMPLE.apiSecret },
  KycDocument: {
    inquiryId: SAMPLE.inquiryId,
    kycStatus: 'approved',
    document: {
      issuingCountry: 'CO',
      type: 'national_id',
      issuedDate: '2012-05-14',
      idNumber: '1020304050',
      expiryDate: '2032-05-14',
      imageFront: null,
      imageBack: null,
    },
  },
  KycHistoryItem: {
    id: '2e7d4c1b-8a9f-4b3e-a6d5-0c1f2e3d4a5b',
    status: 'approved',
    verificationLevel: 'basic',
    riskLevel: 'low',
    riskScore: 12,
    provider: 'sandbox',
    providerVerificationId: SAMPLE.inquiryId,
    submittedAt: SAMPLE.at,
    reviewedAt: SAMPLE.later,
    approvedAt: SAMPLE.later,
    rejectionReasons: null,
    complianceNotes: null,
    createdAt: SAMPLE.at,
  },
  KycSimpleStatus: { status: 'approved' },
  KycStarted: {
    success: true,
    verificationUrl: `http://localhost:3000/sandbox/identity/inquiries/${SAMPLE.inquiryId}`,
    inquiryId: SAMPLE.inquiryId,
    isExisting: false,
    message: 'KYC verification started',
  },
  KycStatus: {
    userId: SAMPLE.userId,
    userStatus: 'active',
    userType: 'individual',
    kyc: {
      hasKyc: true,
      hasActiveKyc: true,
      isApproved: true,
      isExpired: false,
      status: 'approved',
      inquiryId: SAMPLE.inquiryId,
      verificationLevel: 'basic',
      riskLevel: 'low',
      riskScore: 12,
      submittedAt: SAMPLE.at,
      approvedAt: SAMPLE.later,
      expiresAt: '2027-03-02T14:05:39.123Z',
      nextReviewDate: '2027-02-02T14:05:39.123Z',
      canStartNewKyc: false,
    },
    permissions: { canStartKyc: false, canCreateAccounts: true, requiresKyc: false, maxTransactionAmount: 10000, dailyTransactionLimit: 50000 },
  },
  Message: { success: true, message: 'If the email is registered, a code has been sent' },
  PageMeta: { totalItems: 1, totalPages: 1, currentPage: 1, itemsPerPage: 20 },
  PartnerCreated: { id: SAMPLE.partnerId, apiKey: SAMPLE.apiKey, apiSecret: SAMPLE.apiSecret, name: 'Acme Wallet' },
  PayoutAccepted: { success: true, paymentId: SAMPLE.payoutId, status: 'PENDING', message: 'Payout accepted' },
  Profile: { userId: SAMPLE.userId, createdAt: SAMPLE.at, updatedAt: SAMPLE.at, ...PROFILE },
  ProfileCompletion: { isComplete: true, missingFields: [] },
  ProjectionLag: { name: 'ledger', lag: 0 },
  ProjectionStatus: {
    name: 'ledger',
    position: '18233',
    headPosition: '18233',
    lag: 0,
    lagAtLeast: false,
    owner: 'node-1',
    ownedHere: true,
    failure: null,
  },
  ProviderDecision: { transactionId: SAMPLE.transactionUuid, paymentId: SAMPLE.paymentId, eventId: SAMPLE.eventId },
  Quote: {
    id: 'q_3b9f0c1d2e4a',
    fromAsset: 'USDC',
    toAsset: 'COP',
    fromAmount: 100,
    toAmount: 405950,
    rate: 4059.5,
    expiresAt: SAMPLE.later,
  },
  SandboxEmail: {
    id: 'c6a1e9f2-4b7d-4e3a-9f0c-2d5b8a1e6c73',
    to: SAMPLE.email,
    subject: 'Your Tally login code',
    text: 'Your login code is 482915. It expires in 10 minutes.',
    createdAt: SAMPLE.at,
    code: '482915',
  },
  Tokens: {
    success: true,
    accessToken: SAMPLE.accessToken,
    refreshToken: SAMPLE.refreshToken,
    tokenType: 'Bearer',
    expiresIn: 900,
    user: { id: SAMPLE.userId, email: SAMPLE.email, status: 'active' },
  },
  Transaction: { ...TRANSACTION_LIST_ITEM, updated: SAMPLE.at },
  TransactionListItem: TRANSACTION_LIST_ITEM,
  Transfer: { id: 5012, uuid: SAMPLE.transactionUuid, status: 'COMPLETED', amount: 10.5, description: 'rent' },
  User: { ...USER_SUMMARY, status: 'active', updatedAt: SAMPLE.later, countryCode: 'CO', phoneNumber: '+573001234567', language: 'en', kycStatus: 'approved' },
  UserSummary: USER_SUMMARY,
  UserErased: { userId: SAMPLE.userId, erasedAt: SAMPLE.at },
  PartnerEvent: PARTNER_EVENT,
  PartnerEventPage: { items: [PARTNER_EVENT], nextCursor: null },
  WebhookAttempt: { at: SAMPLE.at, httpStatus: 200, error: null, durationMs: 87 },
  WebhookDelivery: DELIVERY,
  WebhookDeliveryPage: { items: [DELIVERY], nextCursor: null },
  WebhookEndpoint: { url: 'https://partner.example.com/tally/webhooks', events: EVENTS },
  WebhookEndpointWithSecret: { url: 'https://partner.example.com/tally/webhooks', events: EVENTS, secret: WEBHOOK_SECRET },
  WebhookReceived: { success: true, received: true },
  WebhookSecretRotation: { secret: WEBHOOK_SECRET, previousSecretExpiresAt: '2026-03-03T14:05:09.123Z' },
};

/** Example values of path, query and header parameters, by name. */
export const PARAMETER_EXAMPLES: Record<string, unknown> = {
  userId: SAMPLE.userId,
  id: SAMPLE.transactionUuid,
  cardId: SAMPLE.cardId,
  applicationId: SAMPLE.applicationId,
  inquiryId: SAMPLE.inquiryId,
  transactionId: SAMPLE.transactionUuid,
  paymentId: SAMPLE.payoutId,
  accountId: SAMPLE.accountId,
  apiKey: SAMPLE.apiKey,
  name: 'ledger',
  page: 1,
  limit: 20,
  status: 'active',
  email: SAMPLE.email,
  q: 'ada',
  createdFrom: '2026-01-01T00:00:00Z',
  createdTo: '2026-12-31T23:59:59Z',
  from: '2026-03-01',
  to: '2026-03-31',
  at: SAMPLE.at,
  includeSecrets: 'true',
  type: 'spend',
  cursor: 'eyJhdCI6IjIwMjYtMDMtMDJUMTQ6MDU6MDkuMTIzWiJ9',
  eventId: SAMPLE.eventId,
  'x-idempotency-key': SAMPLE.idempotencyKey,
};

export interface OperationExamples {
  /** The request body. */
  request?: unknown;
  /** The success answer, where the named schemas' examples do not make it whole. */
  response?: unknown;
  /**
   * The errors this operation answers beyond its route's refusals (`refuses`, documented from their
   * catalogues) and those of its kind, by status: a validation message of its schemas (code
   * `validation_error`), or `[message, code]`; `<name>` as in PLACEHOLDERS.
   */
  errors?: Record<number, Array<string | readonly [message: string, code: string]>>;
  /** Whole error bodies, for a status whose answer is not the Error schema. */
  errorBodies?: Record<number, unknown>;
  /** Example values of parameters whose shared example (PARAMETER_EXAMPLES) does not fit here. */
  parameters?: Record<string, unknown>;
  /** Names in components.schemas for the operation's own (unnamed) request and response shapes. */
  names?: { request?: string; response?: string };
}

/** An event as auditors read it (GET /audit/v1/streams/{stream}, GET /audit/v1/events). */
const AUDIT_EVENT = {
  stream: `account-${SAMPLE.accountId}`,
  revision: 0,
  position: '0000000000000018233',
  id: SAMPLE.eventId,
  type: 'AccountOpened',
  data: { accountId: SAMPLE.accountId, userId: SAMPLE.userId, partnerId: SAMPLE.partnerId, asset: 'USDC', type: 'LIABILITY', at: SAMPLE.at },
  metadata: { correlationId: SAMPLE.requestId, causationId: SAMPLE.requestId, actor: { kind: 'user', id: SAMPLE.userId } },
  recordedAt: SAMPLE.at,
  hash: '3b7e1f0a9c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7',
  previousHash: '0'.repeat(64),
};

/** A notification as the sandbox inbox receives it. */
const INBOX_NOTIFICATION = {
  id: SAMPLE.deliveryId,
  type: 'deposit.completed',
  createdAt: SAMPLE.at,
  sequence: 42,
  data: { uuid: SAMPLE.transactionUuid, status: 'COMPLETED' },
};

const SANDBOX_REASON = { reason: 'closed account' };
const QUOTE_REQUEST = { fromAsset: 'USDC', toAsset: 'COP', fromAmount: '100' };

/** A signed checkpoint as the audit routes show it. */
const CHECKPOINT_EXAMPLE = {
  id: '0193a5c2-7e41-7b2a-9c3d-5e6f7a8b9c0d',
  position: '00000000000000004821:00000000000000018233',
  streams: 12,
  root: 'd4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35',
  createdAt: SAMPLE.at,
  kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
  signature: 'hr1Yy3Xhkdq8wGfqgTmYDyr4XoOtzXp0hVH7Hd_rsgt4xqT5J2Gkq1E2lPP-0Yf5ZmBvE2o3pKcH6nPq0aL7Bw',
};

export const OPERATIONS: Record<string, OperationExamples> = {
  'POST /api/v1/partner/users': {
    request: { email: SAMPLE.email, countryCode: 'CO', phoneNumber: '+573001234567', language: 'es' },
    response: { success: true, data: { user: USER_SUMMARY }, message: 'User created' },
    errors: { 400: ['countryCode must be exactly 2 characters', 'email must be a valid email address'] },
    names: { request: 'RegisterUserRequest', response: 'RegisterUserResponse' },
  },
  'GET /api/v1/partner/users': {
    errors: { 400: ['status must be one of pending, kyc_required, active, suspended, banned'] },
  },
  'GET /api/v1/partner/users/{userId}': {},
  'POST /api/v1/partner/auth/send': { request: { email: SAMPLE.email }, names: { request: 'SendLoginCodeRequest' } },
  'POST /api/v1/partner/auth/verify': {
    request: { email: SAMPLE.email, code: '482915' },
    errors: { 400: ['code must be a string of 6 digits'] },
    names: { request: 'VerifyLoginCodeRequest' },
  },
  'POST /api/v1/partner/auth/refresh': {
    request: { refreshToken: SAMPLE.refreshToken },

    names: { request: 'RefreshTokenRequest' },
  },
  'POST /api/v1/partner/auth/logout': {
    request: { refreshToken: SAMPLE.refreshToken },
    response: { success: true, message: 'Logged out' },

    names: { request: 'RefreshTokenRequest' },
  },
  'POST /api/v1/partner/auth/login': {},
  'POST /api/v1/user/profile': {
    request: { userId: SAMPLE.userId, ...PROFILE },

    names: { request: 'PartnerProfileRequest' },
  },
  'GET /api/v1/user/profile': {},
  'PATCH /api/v1/user/profile': {
    request: { userId: SAMPLE.userId, occupation: 'Mathematician', city: 'Medellín' },

    names: { request: 'PartnerProfileRequest' },
  },
  'GET /api/v1/user/profile/check-completion': {},
  'POST /api/v1/auth/profile': {
    request: PROFILE,

    names: { request: 'ProfileRequest' },
  },
  'GET /api/v1/auth/profile': {},
  'PATCH /api/v1/auth/profile': {
    request: { occupation: 'Mathematician', city: 'Medellín' },

    names: { request: 'ProfileRequest' },
  },
  'POST /api/v1/partner/kyc': {
    request: { userId: SAMPLE.userId, birthDate: '1990-12-10' },
    errors: {
      400: ['Invalid birthDate format. Use YYYY-MM-DD', 'phone must be in international format, e.g. +573001234567'],
      502: [['Failed to create identity inquiry', 'provider_error']],
    },
    names: { request: 'StartKycRequest' },
  },
  'GET /api/v1/user/kyc/status': {},
  'POST /api/v1/auth/kyc/verify': {
    request: { userId: SAMPLE.userId },

    names: { request: 'UserIdRequest' },
  },
  'GET /api/v1/auth/kyc/simple-status': {},
  'GET /api/v1/auth/kyc/document/me': {},
  'GET /api/v1/user/kyc/document/me': {},
  'GET /api/v1/auth/kyc/history': {
    response: { success: true, data: { total: 1, history: [SCHEMA_EXAMPLES.KycHistoryItem] } },
    names: { response: 'KycHistoryResponse' },
  },
  'GET /api/v1/user/kyc/history': {
    response: { success: true, data: { total: 1, history: [SCHEMA_EXAMPLES.KycHistoryItem] } },
    names: { response: 'KycHistoryResponse' },
  },
  'GET /api/v1/user/accounts': {
    response: { items: [SCHEMA_EXAMPLES.Account], meta: { totalItems: 1, currentPage: 1 } },
    names: { response: 'AccountsResponse' },
  },
  'POST /api/v1/user/accounts': {},
  'GET /api/v1/user/balance': {
    errors: { 400: ['at must be an ISO 8601 date-time', 'at must be a date between 1970-01-01 and 9999-12-31 (UTC)'] },
    names: { response: 'BalancesResponse' },
  },
  'POST /api/v1/transactions/deposit': {
    request: {
      toAccountId: SAMPLE.accountId,
      amount: '100.00',
      currency: 'USDC',
      provider: 'mock',
      description: 'Top up',
      metadata: { payer: { documentType: 'CC', documentNumber: '1020304050' } },
    },
    errors: { 400: ['description must be a string', 'Payer information is required for deposits', 'Payer document type and number are required for deposits'] },
    names: { request: 'DepositRequest' },
  },
  'GET /api/v1/transactions': {
    names: { response: 'TransactionList' },
    errors: { 400: ['accountId is required', 'from must be an ISO 8601 date'] },
  },
  'GET /api/v1/transactions/{id}': {},
  'POST /api/v1/transactions/transfer': {
    request: { toAccountId: SAMPLE.payeeAccountId, amount: '10.50', description: 'rent' },

    names: { request: 'TransferRequest' },
  },
  'POST /api/v1/user/payout': {
    request: {
      transactionId: SAMPLE.payoutUuid,
      amount: '50000',
      asset: 'COP',
      description: 'Rent for March',
      provider: 'mock',
      source: { metadata: { fundingId: 'fund_01' } },
      destination: {
        accountNumber: '0123456789',
        accountType: 'H',
        bankName: 'Bancolombia',
        bankNumber: '007',
        ownerName: 'Ada Lovelace',
        ownerDocumentType: 'CC',
        ownerDocumentNumber: '1020304050',
      },
    },
    errors: { 502: [['Payout refused by the provider; the funds were returned', 'payout_refused_by_provider']] },
    names: { request: 'PayoutRequest' },
  },
  'GET /api/v1/cards/application/status': {
    response: {
      success: true,
      data: {
        application: { ...(SCHEMA_EXAMPLES.CardApplication as object), applicationStatus: 'approved', isActive: true },
        card: CARD_SUMMARY,
        hasApplication: true,
        canCreateCard: false,
        statusSummary: { local: 'approved', external: 'approved', synced: true },
      },
    },
    names: { response: 'CardApplicationStatusResponse' },
  },
  'POST /api/v1/cards/application': {
    request: { cardType: 'virtual', isTermsOfServiceAccepted: true },
    errors: { 400: ['cardType must be one of virtual, physical'] },
    names: { request: 'CardApplicationRequest', response: 'CardApplicationResponse' },
  },
  'POST /api/v1/cards': {
    errors: { 400: ['x-idempotency-key must be a UUID', 'Idempotency-Key must be a UUID'] },
  },
  'POST /api/v1/cards/activate': { errors: { 400: ['x-idempotency-key must be a UUID', 'Idempotency-Key must be a UUID'] } },
  'POST /api/v1/cards/lock': { errors: { 400: ['x-idempotency-key header is required', 'x-idempotency-key must be a UUID'] } },
  'POST /api/v1/cards/unlock': { errors: { 400: ['x-idempotency-key header is required', 'x-idempotency-key must be a UUID'] } },
  'PATCH /api/v1/cards/limit': {
    request: { amount: '250.50', frequency: 'per7DayPeriod' },
    errors: { 400: ['x-idempotency-key header is required', 'x-idempotency-key must be a UUID'] },
    names: { request: 'CardLimitRequest' },
  },
  'PUT /api/v1/cards/pin': {
    request: { pin: '2580' },
    errors: { 400: ['x-idempotency-key header is required', 'x-idempotency-key must be a UUID'] },
    names: { request: 'CardPinRequest' },
  },
  'GET /api/v1/cards/pin': {},
  'GET /api/v1/cards/me': { response: [CARD], errors: { 400: ['status must be one of notActivated, active, locked, canceled'] } },
  'GET /api/v1/cards/status': {},
  'GET /api/v1/cards/details': {},
  'GET /api/v1/cards/details/full': {},
  'GET /api/v1/cards/secrets': {},
  'POST /sandbox/v1/cards/applications/{applicationId}/approve': {
    request: {},

    names: { request: 'SandboxReasonRequest' },
  },
  'POST /sandbox/v1/cards/applications/{applicationId}/decline': {
    request: { reason: 'risk' },

    names: { request: 'SandboxReasonRequest' },
  },
  'POST /admin/v1/cards/{cardId}/cancel': {},
  'GET /api/v1/cards/balance': {},
  'GET /api/v1/cards/transactions': {
    errors: { 400: ['cursor is not valid', 'cardId must be a UUID'] },
    names: { response: 'CardTransactionPage' },
  },
  'POST /sandbox/v1/cards/{cardId}/authorizations': {
    request: { amount: '2.50', currency: 'USD', merchantName: 'Café Juan Valdez', merchantCategoryCode: '5812', localAmount: 10250, localCurrency: 'COP' },
    errors: { 400: ['merchantCategoryCode must be four digits (ISO 18245)'] },
    names: { request: 'CardAuthorizationRequest' },
  },
  'POST /sandbox/v1/card-transactions/{id}/clear': {
    parameters: { id: SAMPLE.cardTransactionId },
    request: { amount: '2.50' },

    names: { request: 'CardClearingRequest' },
  },
  'POST /sandbox/v1/card-transactions/{id}/reverse': {
    parameters: { id: SAMPLE.cardTransactionId },
  },
  'POST /api/v1/exchanges/quote/public': { request: QUOTE_REQUEST, names: { request: 'QuoteRequest' } },
  'POST /api/v1/user/exchange/calculate': { request: QUOTE_REQUEST, names: { request: 'QuoteRequest' } },
  'GET /sandbox/v1/emails': { parameters: { to: SAMPLE.email }, errors: { 400: ['to must be a valid email address'] } },
  'POST /sandbox/v1/kyc/{inquiryId}/complete': {
    request: { outcome: 'approved' },
    response: { success: true, data: { inquiryId: SAMPLE.inquiryId, outcome: 'approved', eventId: SAMPLE.eventId } },

    names: { request: 'SandboxKycOutcomeRequest', response: 'SandboxKycOutcomeResponse' },
  },
  'GET /sandbox/identity/inquiries/{inquiryId}': {},
  'POST /sandbox/identity/inquiries/{inquiryId}/decision': {
    request: { outcome: 'approved' },

    names: { request: 'HostedKycDecisionRequest' },
  },
  'POST /sandbox/v1/deposits/{transactionId}/confirm': {},
  'POST /sandbox/v1/deposits/{transactionId}/fail': {},
  'POST /sandbox/v1/payouts/{paymentId}/settle': {
    request: {},

    names: { request: 'SandboxReasonRequest' },
  },
  'POST /sandbox/v1/payouts/{paymentId}/fail': {
    request: SANDBOX_REASON,

    names: { request: 'SandboxReasonRequest' },
  },
  'GET /api/pay/{paymentId}': { parameters: { paymentId: SAMPLE.paymentId } },
  'POST /api/pay/{paymentId}/decision': {
    parameters: { paymentId: SAMPLE.paymentId },
    request: { outcome: 'confirmed' },

    names: { request: 'HostedPaymentDecisionRequest' },
  },
  'POST /webhooks/identity/sandbox': {
    request: {
      id: 'evt_7d1c9e2b4a6f',
      type: 'inquiry.approved',
      createdAt: SAMPLE.at,
      data: { inquiryId: SAMPLE.inquiryId, referenceId: SAMPLE.userId, status: 'approved', snapshot: null },
    },

    names: { request: 'ProviderCallback' },
  },
  'POST /webhooks/identity/persona': {
    request: {
      data: {
        type: 'event',
        id: 'evt_Q8n2Lr5Tx',
        attributes: {
          name: 'inquiry.approved',
          payload: { data: { type: 'inquiry', id: 'inq_8Zx3kP2', attributes: { status: 'approved', 'reference-id': SAMPLE.userId } } },
        },
      },
    },
    errors: { 404: [['Not found', 'not_found']] },
    names: { request: 'ProviderCallback' },
  },
  'POST /webhooks/payments/mock': {
    request: {
      id: 'evt_pay_3f9a1c7e5b2d',
      type: 'payment.confirmed',
      createdAt: SAMPLE.at,
      data: { paymentId: SAMPLE.paymentId, transactionId: SAMPLE.transactionUuid, amount: '100', currency: 'USDC' },
    },

    names: { request: 'ProviderCallback' },
  },
  'POST /webhooks/payouts/mock': {
    request: {
      id: 'evt_po_8b2d4f6a1c3e',
      type: 'payout.settled',
      createdAt: SAMPLE.at,
      data: { paymentId: SAMPLE.payoutId, transactionId: SAMPLE.payoutUuid, reason: null },
    },

    names: { request: 'ProviderCallback' },
  },
  'POST /webhooks/cards/sandbox': {
    request: {
      id: 'evt_card_5c7e9a1b3d2f',
      type: 'application.approved',
      createdAt: SAMPLE.at,
      data: { issuerApplicationId: 'app_sandbox_51f0e6c7b9d3', referenceId: SAMPLE.applicationId, status: 'approved', reason: null },
    },

    names: { request: 'ProviderCallback' },
  },
  'POST /webhooks/cards/rain': {
    request: {
      id: 'e9f8a7b6-c5d4-4e3f-a2b1-c0d9e8f7a6b5',
      resource: 'user',
      action: 'updated',
      createdAt: SAMPLE.at,
      body: { id: '7b6c1c0e-3f5a-4c1e-9a53-1f1b2d3c4e5f', applicationStatus: 'denied', applicationReason: 'Sanctions screening match', isActive: false },
    },
    errors: { 404: [['Not found', 'not_found']] },
    names: { request: 'ProviderCallback' },
  },
  'PUT /api/v1/partner/webhooks': {
    request: { url: 'https://partner.example.com/tally/webhooks', events: EVENTS },

    names: { request: 'WebhookEndpointRequest' },
  },
  'GET /api/v1/partner/webhooks': {},
  'POST /api/v1/partner/webhooks/secret/rotate': {},
  'GET /api/v1/partner/webhooks/deliveries': {
    parameters: { status: 'failed', type: 'deposit.completed' },
    errors: { 400: ['status must be one of pending, succeeded, failed'] },
  },
  'GET /api/v1/partner/events': {
    parameters: { type: 'deposit.completed' },
  },
  'GET /api/v1/partner/events/{eventId}': { parameters: { eventId: SAMPLE.deliveryId } },
  'POST /sandbox/v1/webhook-inbox': {
    request: INBOX_NOTIFICATION,

    names: { request: 'SandboxWebhookNotification' },
  },
  'GET /sandbox/v1/webhook-inbox': {
    response: {
      success: true,
      data: {
        items: [
          {
            id: 7,
            receivedAt: SAMPLE.at,
            deliveryId: SAMPLE.deliveryId,
            headers: {
              'webhook-id': SAMPLE.deliveryId,
              'webhook-timestamp': '1772460309',
              'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
              'x-webhook-signature': 't=1772460309,v1=9f2b6c1e8d4a7b3c5e0f1a2d3c4b5a6978685746352413021f0e1d2c3b4a5968',
            },
            rawBody: JSON.stringify(INBOX_NOTIFICATION),
            notification: INBOX_NOTIFICATION,
          },
        ],
        nextCursor: null,
      },
    },
  },
  'POST /api/v1/partner/webhooks/deliveries/{id}/redeliver': { parameters: { id: SAMPLE.deliveryId } },
  'POST /admin/v1/partners': { request: { name: 'Acme Wallet' }, names: { request: 'PartnerRequest' } },
  'POST /admin/v1/partners/{id}/keys': {
    parameters: { id: SAMPLE.partnerId },
  },
  'DELETE /admin/v1/partners/{id}/keys/{apiKey}': { parameters: { id: SAMPLE.partnerId } },
  'POST /admin/v1/users/{userId}/suspend': {
    request: { reason: 'Chargeback review' },

    names: { request: 'UserActionRequest' },
  },
  'POST /admin/v1/users/{userId}/ban': {
    request: { reason: 'Fraud confirmed' },

    names: { request: 'UserActionRequest' },
  },
  'POST /admin/v1/users/{userId}/reinstate': {
    request: { reason: 'Review closed' },

    names: { request: 'UserActionRequest' },
  },
  'POST /admin/v1/auditors': {
    request: { name: 'Ledger & Co. auditors', expiresAt: '2026-12-31T00:00:00Z' },
    response: {
      success: true,
      data: {
        id: SAMPLE.auditorId,
        name: 'Ledger & Co. auditors',
        token: `ta_${SAMPLE.auditorId.replaceAll('-', '')}_${'5f'.repeat(32)}`,
        expiresAt: '2026-12-31T00:00:00.000Z',
      },
    },
    errors: { 400: ['expiresAt must be an ISO 8601 date', 'name must be a non-empty string of at most 200 characters'] },
    names: { request: 'AuditorRequest' },
  },
  'DELETE /admin/v1/auditors/{id}': { parameters: { id: SAMPLE.auditorId } },
  'POST /admin/v1/checkpoints': { response: { success: true, data: CHECKPOINT_EXAMPLE } },
  'GET /audit/v1/keys': { response: { keys: [{ kid: CHECKPOINT_EXAMPLE.kid, kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }] } },
  'GET /audit/v1/checkpoints': { response: { success: true, data: { items: [CHECKPOINT_EXAMPLE], nextCursor: 'YzoxMg' } } },
  'GET /audit/v1/checkpoints/{id}': {
    parameters: { id: CHECKPOINT_EXAMPLE.id },
    response: { success: true, data: CHECKPOINT_EXAMPLE },
    errors: { 404: [['Checkpoint not found', 'checkpoint_not_found']] },
  },
  'GET /audit/v1/checkpoints/{id}/proof': {
    parameters: { id: CHECKPOINT_EXAMPLE.id, stream: `user-${SAMPLE.userId}` },
    response: {
      success: true,
      data: {
        checkpointId: CHECKPOINT_EXAMPLE.id,
        leaf: { stream: `user-${SAMPLE.userId}`, revision: 2, hash: '4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a' },
        index: 5,
        treeSize: 12,
        path: [
          'ef2d127de37b942baad06145e54b0c619a1f22327b2ebbcfbec78f5564afe39d',
          'e7f6c011776e8db7cd330b54174fd76f7d0216b612387a5ffcfb81e6f0919683',
          '7902699be42c8a8e46fbbb4501726517e86b22c56a189f7625a6da49081b2451',
          '2c624232cdd221771294dfbb310aca000a0df6ac8b66b696d90ef06fdefb64a3',
        ],
      },
    },
    errors: {
      404: [
        ['Checkpoint not found', 'checkpoint_not_found'],
        ['Stream not in checkpoint', 'stream_not_in_checkpoint'],
      ],
    },
  },
  'GET /audit/v1/streams/{stream}': {
    parameters: { stream: `account-${SAMPLE.accountId}`, at: SAMPLE.later },
    response: {
      success: true,
      data: {
        stream: `account-${SAMPLE.accountId}`,
        at: SAMPLE.later,
        events: [AUDIT_EVENT],
        aggregate: 'account',
        state: { opened: true, accountId: SAMPLE.accountId, userId: SAMPLE.userId, partnerId: SAMPLE.partnerId, creditsPosted: '0', debitsPosted: '0' },
      },
    },
  },
  'GET /audit/v1/events': {
    parameters: { from: '2026-03-01', to: '2026-03-02' },
    response: `${JSON.stringify(AUDIT_EVENT)}\n`,
  },
  'GET /audit/v1/accounts/{accountId}/balance': {
    parameters: { at: SAMPLE.later },
    response: {
      success: true,
      data: {
        accountId: SAMPLE.accountId,
        asset: 'USDC',
        credits: '100.00000000',
        debits: '10.50000000',
        balance: '89.50000000',
        at: SAMPLE.later,
        position: '0000000000000018233',
      },
    },
  },
  'POST /admin/v1/projections/{name}/rebuild': {
    response: { success: true, data: { name: 'ledger', events: 18233, position: '18233' } },
    errors: { 404: [['Projection not found', 'projection_not_found']] },
    names: { response: 'ProjectionRebuilt' },
  },
  'GET /healthz': { response: { status: 'ok' }, names: { response: 'Health' } },
  'GET /readyz': {
    response: { status: 'ready', store: 'postgres', projections: [{ name: 'ledger', lag: 0 }] },
    errorBodies: {
      503: {
        status: 'unavailable',
        success: false,
        error: 'Service unavailable',
        code: 'service_unavailable',
        requestId: SAMPLE.requestId,
        store: 'postgres',
        projections: [{ name: 'ledger', lag: 120, stoppedSince: SAMPLE.at }],
      },
    },
    names: { response: 'Readiness' },
  },
  'GET /api/v1/openapi.json': {
    response: { openapi: '3.1.0', info: { title: 'Tally partner API', version: '1.0.0' }, paths: {} },
    names: { response: 'OpenApiDocument' },
  },
  'GET /metrics': { errors: { 401: [['Invalid admin token', 'invalid_admin_token']] } },
};
