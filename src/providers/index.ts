import type { Config } from '../config';
import type { ServiceKeys } from '../app/keys';
import type { Sql } from '../eventstore/sql';
import type { EmailSender } from './email/port';
import { SandboxOutbox } from './email/sandbox';
import { SmtpEmailSender } from './email/smtp';
import type { IdentityProvider } from './identity/port';
import { PersonaIdentityProvider } from './identity/persona';
import { SandboxIdentityProvider } from './identity/sandbox';

export interface BaseUrls {
  /** Where links handed to partners and users point (PUBLIC_BASE_URL). */
  publicBaseUrl: string;
  /** Where this process listens: the sandbox providers call back here. */
  selfUrl: string;
}

export interface BuiltProviders {
  identity: Map<string, IdentityProvider>;
  email: EmailSender;
  /** Present when SANDBOX is on: the simulated identity provider and mailbox. */
  sandbox: { identity: SandboxIdentityProvider; outbox: SandboxOutbox } | null;
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

/** The provider adapters the configuration asks for. */
export function buildProviders(config: Config, sql: Sql, keys: ServiceKeys, urls: BaseUrls): BuiltProviders {
  const identity = new Map<string, IdentityProvider>();
  let sandbox: BuiltProviders['sandbox'] = null;
  const outbox = new SandboxOutbox({ sql });
  if (config.sandbox) {
    const sandboxIdentity = new SandboxIdentityProvider({
      sql,
      webhookSecret: keys.webhooks['identity/sandbox'] ?? '',
      publicBaseUrl: () => urls.publicBaseUrl,
      webhookUrl: () => `${urls.selfUrl}/webhooks/identity/sandbox`,
    });
    identity.set('sandbox', sandboxIdentity);
    sandbox = { identity: sandboxIdentity, outbox };
  }
  if (config.persona) {
    identity.set('persona', new PersonaIdentityProvider({ ...config.persona }));
  }
  const email: EmailSender = config.smtpUrl ? smtpFromUrl(config.smtpUrl) : outbox;
  return {
    identity,
    email,
    sandbox,
    async prepare() {
      if (sandbox) {
        await sandbox.identity.prepare();
        await sandbox.outbox.prepare();
      } else if (!config.smtpUrl) await outbox.prepare();
    },
  };
}
