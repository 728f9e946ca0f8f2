import { resolve } from 'node:path';

/** Everything the service reads from the environment (docs/decisions.md, "Configuration"; the README's table). */
export interface Config {
  port: number;
  dataDir: string;
  databaseUrl?: string;
  kurrentDbUrl?: string;
  adminToken?: string;
  sandbox: boolean;
  publicBaseUrl: string;
  logLevel: string;
  rateLimit: { partnerRps: number; userRps: number; ipRps: number };
  /**
   * When `X-Forwarded-For` names the client (for the per-IP limit): unset = never (the socket's
   * peer is the client), a hop count (`1`: one proxy in front), or a comma list of trusted proxy
   * addresses/CIDRs (or proxy-addr's `loopback`, `linklocal`, `uniquelocal`).
   */
  trustProxy?: string;
  /** Bound of the read-your-writes wait of a write route. */
  readYourWritesTimeoutMs: number;
  /** Identity provider for new verifications: `sandbox` (default) or `persona`. */
  identityProvider: string;
  persona?: { apiKey: string; templateId: string; webhookSecret: string; baseUrl?: string };
  /** Card issuer for new applications: `sandbox` (default, sandbox mode only) or `rain`. */
  cardIssuer: CardIssuerName;
  /** Rain's issuing API (CARD_ISSUER=rain): its API key, its RSA public key (PEM) for secrets, the callbacks' secret. */
  rain?: { apiKey: string; publicKeyPem: string; webhookSecret: string; baseUrl?: string };
  /** `smtp://user:pass@host:port?from=...` sends real emails; unset: the sandbox outbox. */
  smtpUrl?: string;
  /** Mid rates per 1 USDC overriding the defaults, e.g. `COP=4100,MXN=17.2`. */
  rates?: string;
  /** Spread of exchange quotes, in basis points. */
  exchangeSpreadBps: number;
  /** Derived operating limits after KYC approval at level basic (docs/decisions.md, "KYC"). */
  kycLimits: { maxTransactionAmount: number; dailyTransactionLimit: number };
  /** Group commit of the Postgres event log (PostgresEventStoreOptions); undefined = the adapter's default. */
  appendBatch: { maxInFlight?: number; minConcurrentBatch?: number; minConcurrentEvents?: number };
  /** Under a steady stream of appends, the projection runner gathers this many ms of them per batch (0: off). */
  projectionsPaceMs: number;
  /**
   * On Postgres, the projections run in a worker thread of their own (PROJECTIONS_THREAD=worker, the
   * default) or on the main thread beside the requests (main). The embedded store always runs them
   * on the main thread: it is in this process.
   */
  projectionsThread: 'worker' | 'main';
  /** A payout held this long without its acceptance recorded is handed to its provider again (0: never). */
  payoutResubmitSeconds: number;
}

export const CARD_ISSUERS = ['sandbox', 'rain'] as const;
export type CardIssuerName = (typeof CARD_ISSUERS)[number];

/**
 * The card issuer: sandbox unless CARD_ISSUER names another; rain needs its three settings, named
 * when missing (the service does not start with an issuer it could not call).
 */
function cardIssuerOf(env: NodeJS.ProcessEnv): Pick<Config, 'cardIssuer' | 'rain'> {
  const name = env.CARD_ISSUER || 'sandbox';
  if (!(CARD_ISSUERS as readonly string[]).includes(name)) throw new Error(`CARD_ISSUER must be one of ${CARD_ISSUERS.join(', ')}, got ${name}`);
  if (name !== 'rain') return { cardIssuer: 'sandbox' };
  const missing = ['RAIN_API_KEY', 'RAIN_PUBLIC_KEY', 'RAIN_WEBHOOK_SECRET'].filter((setting) => !env[setting]);
  if (missing.length > 0)
    throw new Error(`CARD_ISSUER=rain needs ${missing.join(', ')} (Rain's API key, its RSA public key in PEM, the callbacks' signing secret)`);
  // A PEM in one environment line may carry its line breaks as \n.
  const publicKeyPem = (env.RAIN_PUBLIC_KEY as string).replace(/\\n/g, '\n');
  if (!publicKeyPem.includes('-----BEGIN PUBLIC KEY-----')) throw new Error('RAIN_PUBLIC_KEY must be a PEM public key (-----BEGIN PUBLIC KEY-----)');
  return {
    cardIssuer: 'rain',
    rain: { apiKey: env.RAIN_API_KEY as string, publicKeyPem, webhookSecret: env.RAIN_WEBHOOK_SECRET as string, baseUrl: env.RAIN_BASE_URL || undefined },
  };
}

function number(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${raw}`);
  return value;
}

/** APPEND_MAX_IN_FLIGHT, APPEND_MIN_CONCURRENT_BATCH and APPEND_MIN_CONCURRENT_EVENTS (positive integers), when set. */
export function appendBatchOptions(env: NodeJS.ProcessEnv = process.env): Config['appendBatch'] {
  const positive = (name: string) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${raw}`);
    return value;
  };
  return {
    maxInFlight: positive('APPEND_MAX_IN_FLIGHT'),
    minConcurrentBatch: positive('APPEND_MIN_CONCURRENT_BATCH'),
    minConcurrentEvents: positive('APPEND_MIN_CONCURRENT_EVENTS'),
  };
}

function spreadBps(value: number): number {
  if (!Number.isInteger(value) || value >= 10_000) throw new Error(`EXCHANGE_SPREAD_BPS must be a whole number of basis points below 10000, got ${value}`);
  return value;
}

function flag(raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  return !['0', 'false', 'off', 'no'].includes(raw.toLowerCase());
}

/**
 * What production cannot do without. Outside sandbox mode there is no sandbox outbox to read login
 * codes from and no sandbox identity provider: without these, codes would never be delivered and
 * KYC could never start. The service refuses to start instead, naming each missing setting.
 */
function missingOutsideSandbox(config: Config): string[] {
  if (config.sandbox) return [];
  const missing: string[] = [];
  if (!config.smtpUrl) missing.push('SMTP_URL (login codes are emailed; without it they would go to the sandbox outbox and never be delivered)');
  if (config.identityProvider !== 'persona') {
    missing.push(`IDENTITY_PROVIDER (is ${config.identityProvider}; outside sandbox mode the identity provider is persona)`);
  } else {
    if (!config.persona?.apiKey) missing.push('PERSONA_API_KEY');
    if (!config.persona?.templateId) missing.push('PERSONA_TEMPLATE_ID');
    if (!config.persona?.webhookSecret) missing.push('PERSONA_WEBHOOK_SECRET');
  }
  // The sandbox issuer runs in sandbox mode only: without a real one, no card could be applied for.
  if (config.cardIssuer !== 'rain') missing.push(`CARD_ISSUER (is ${config.cardIssuer}; outside sandbox mode the card issuer is rain)`);
  return missing;
}

/** Reads the configuration; throws naming every setting production cannot do without when one is missing. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const config = readConfig(env);
  const missing = missingOutsideSandbox(config);
  if (missing.length > 0) {
    throw new Error(`Outside sandbox mode (SANDBOX off) the service needs these settings:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
  }
  return config;
}

function readConfig(env: NodeJS.ProcessEnv): Config {
  const port = number(env, 'PORT', 3000);
  return {
    port,
    dataDir: resolve(env.DATA_DIR || './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    kurrentDbUrl: env.KURRENTDB_URL || undefined,
    adminToken: env.ADMIN_TOKEN || undefined,
    sandbox: flag(env.SANDBOX, env.NODE_ENV !== 'production'),
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    logLevel: env.LOG_LEVEL || 'info',
    rateLimit: {
      partnerRps: number(env, 'RATE_LIMIT_PARTNER_RPS', 100),
      userRps: number(env, 'RATE_LIMIT_USER_RPS', 50),
      ipRps: number(env, 'RATE_LIMIT_IP_RPS', 200),
    },
    trustProxy: env.TRUST_PROXY || undefined,
    readYourWritesTimeoutMs: number(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5_000),
    identityProvider: env.IDENTITY_PROVIDER || 'sandbox',
    persona: env.PERSONA_API_KEY
      ? {
          apiKey: env.PERSONA_API_KEY,
          templateId: env.PERSONA_TEMPLATE_ID ?? '',
          webhookSecret: env.PERSONA_WEBHOOK_SECRET ?? '',
          baseUrl: env.PERSONA_BASE_URL || undefined,
        }
      : undefined,
    ...cardIssuerOf(env),
    smtpUrl: env.SMTP_URL || undefined,
    rates: env.EXCHANGE_RATES || undefined,
    exchangeSpreadBps: spreadBps(number(env, 'EXCHANGE_SPREAD_BPS', 50)),
    kycLimits: {
      maxTransactionAmount: number(env, 'KYC_MAX_TRANSACTION_AMOUNT', 10_000),
      dailyTransactionLimit: number(env, 'KYC_DAILY_TRANSACTION_LIMIT', 50_000),
    },
    appendBatch: appendBatchOptions(env),
    projectionsPaceMs: number(env, 'PROJECTIONS_PACE_MS', 100),
    projectionsThread: env.PROJECTIONS_THREAD === 'main' ? 'main' : 'worker',
    payoutResubmitSeconds: number(env, 'PAYOUT_RESUBMIT_SECONDS', 60),
  };
}
