import type { Config } from '../config';
import type { ServiceKeys } from '../platform/keys';
import type { Sealer } from '../platform/sealing/sealer';
import type { Sql } from '../eventstore/sql';
import type { CardIssuer } from './cards';
import { RainCardIssuer } from './cards';
import { SandboxCardIssuer } from './cards';
import { CardVault } from './cards';
import type { EmailSender } from './identity';
import { SandboxOutbox } from './identity';
import { SmtpEmailSender } from './identity';
import type { IdentityProvider } from './identity';
import { PersonaIdentityProvider } from './identity';
import { SandboxIdentityProvider } from './identity';
import { MockPaymentProvider } from './ledger';
import type { PaymentProvider } from './ledger';
import { MockPayoutProvider } from './ledger';
import type { PayoutProvider } from './ledger';
import type { RateSource } from './ledger';
import { DEFAULT_RATES, parseRateTable, TableRateSource } from './ledger';

export interface BaseUrls {
  /** Where links handed to partners and users point (PUBLIC_BASE_URL). */
  publicBaseUrl: string;
  /** Where this process listens: the sandbox providers call back here. */
  selfUrl: string;
}

export interface SandboxProviders {
  identity: SandboxIdentityProvider;
  outbox: SandboxOutbox;
  payments: MockPaymentProvider;
  payouts: MockPayoutProvider;
  cards: SandboxCardIssuer;
}

export interface BuiltProviders {
  identity: Map<string, IdentityProvider>;
  email: EmailSender;
  payments: Map<string, PaymentProvider>;
  payouts: Map<string, PayoutProvider>;
  cards: Map<string, CardIssuer>;
  rates: RateSource;
  /** Present when SANDBOX is on: the simulated identity provider, mailbox, payment and payout providers, card issuer. */
  sandbox: SandboxProviders | null;
  prepare(): Promise<void>;
}

function smtpFromUrl(url: string): SmtpEmailSender {
  const u = new URL(url);
  return new SmtpEmailSender({
    host: u.hostname,
    port: Number(u.port || (u.protocol === 'smtps:' ? 465 : 587)),
    secure: u.protocol === 'smtps:',
    user: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    from: u.searchParams.get('from') ?? 'Tally <no-reply@tally.local>',
  });
}

/** The provider adapters the configuration asks for; `sealer` seals the sandbox issuer's card secrets. */
export function buildProviders(config: Config, sql: Sql, keys: ServiceKeys, urls: BaseUrls, sealer: Sealer): BuiltProviders {
  const identity = new Map<string, IdentityProvider>();
  const payments = new Map<string, PaymentProvider>();
  const payouts = new Map<string, PayoutProvider>();
  const cards = new Map<string, CardIssuer>();
  let sandbox: SandboxProviders | null = null;
  const outbox = new SandboxOutbox({ sql });
  if (config.sandbox) {
    const secret = (name: string) => keys.webhooks[name] ?? '';
    const webhookUrl = (name: string) => () => `${urls.selfUrl}/webhooks/${name}`;
    sandbox = {
      identity: new SandboxIdentityProvider({
        sql,
        webhookSecret: secret('identity/sandbox'),
        publicBaseUrl: () => urls.publicBaseUrl,
        webhookUrl: webhookUrl('identity/sandbox'),
      }),
      outbox,
      payments: new MockPaymentProvider({ sql, webhookSecret: secret('payments/mock'), webhookUrl: webhookUrl('payments/mock') }),
      payouts: new MockPayoutProvider({ sql, webhookSecret: secret('payouts/mock'), webhookUrl: webhookUrl('payouts/mock') }),
      cards: new SandboxCardIssuer({
        sql,
        webhookSecret: secret('cards/sandbox'),
        webhookUrl: webhookUrl('cards/sandbox'),
        vault: new CardVault(sealer),
      }),
    };
    identity.set('sandbox', sandbox.identity);
    payments.set('mock', sandbox.payments);
    payouts.set('mock', sandbox.payouts);
    cards.set('sandbox', sandbox.cards);
  }
  if (config.persona) {
    identity.set('persona', new PersonaIdentityProvider({ ...config.persona }));
  }
  if (config.rain) cards.set('rain', new RainCardIssuer({ ...config.rain }));
  const email: EmailSender = config.smtpUrl ? smtpFromUrl(config.smtpUrl) : outbox;
  const rates = new TableRateSource({ rates: config.rates ? { ...DEFAULT_RATES, ...parseRateTable(config.rates) } : DEFAULT_RATES });
  return {
    identity,
    email,
    payments,
    payouts,
    cards,
    rates,
    sandbox,
    async prepare() {
      if (sandbox) {
        await sandbox.identity.prepare();
        await sandbox.outbox.prepare();
        await sandbox.payments.prepare();
        await sandbox.payouts.prepare();
        await sandbox.cards.prepare();
      } else if (!config.smtpUrl) await outbox.prepare();
    },
  };
}
