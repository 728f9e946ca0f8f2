import { randomUUID } from 'node:crypto';
import type { CommandContext } from '../../platform/commands/commands';
import { load } from '../../platform/commands/commands';
import {
  checkEndpointUrl,
  NOTIFICATION_TYPES,
  type NotificationType,
  signingSecrets,
  type WebhookEndpointState,
  webhookEndpointDecider,
  webhookEndpointStream,
} from '../../domain/notifications/endpoint';
import { checkPublicTarget, type Resolver, systemResolver } from '../../providers/notifications/address-guard';
import { newSigningSecret, SecretBox } from './secrets';
import type { CommandHandler } from '../../platform/commands/command-handler';
import type { EventStore } from '../../eventstore/port';
import type { StateCache } from '../../platform/commands/commands';
import type { Config } from '../../config';
import type { Sealer } from '../../platform/sealing/sealer';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications/refusals';

export interface EndpointView {
  url: string;
  events: NotificationType[];
}

/**
 * How long delivery reuses an endpoint as it last read it: a change made through another node
 * reaches this node's deliveries within this time (this node's own changes at once).
 */
const TARGET_TTL_MS = 1_000;

export interface WebhookEndpointsDeps {
  commands: CommandHandler;
  store: EventStore;
  stateCache: StateCache;
  config: Pick<Config, 'sandbox'>;
  sealer: Sealer;
}

/** A partner's notification endpoint: configured and rotated through its stream, read back from it. */
export class WebhookEndpoints {
  readonly box: SecretBox;
  /** Where a PUT's host name is looked up (outside sandbox mode). */
  resolve: Resolver = systemResolver;
  /** Endpoints as delivery last read them (real time of the read), and their secrets opened, by secret id. */
  private readonly targets = new Map<string, { state: WebhookEndpointState; readAtMs: number; opened: Map<string, string> }>();

  constructor(private readonly deps: WebhookEndpointsDeps) {
    this.box = new SecretBox(deps.sealer);
  }

  /** PUT partner/webhooks: the endpoint and the current secret (made on the first PUT, kept after). */
  async configure(partnerId: string, input: { url: string; events?: string[] }, ctx: CommandContext): Promise<EndpointView & { secret: string }> {
    const sandbox = this.deps.config.sandbox;
    const url = checkEndpointUrl(input.url, sandbox);
    if (!sandbox) await checkPublicTarget(url, this.resolve);
    const events = input.events === undefined ? null : eventTypes(input.events);
    const fresh = await this.newSecret(partnerId);
    const { result } = await this.deps.commands.decide(ctx, webhookEndpointStream(partnerId), webhookEndpointDecider, {
      type: 'Configure',
      partnerId,
      url: input.url,
      events,
      sandbox,
      newSecret: fresh.sealed,
      at: new Date().toISOString(),
    });
    this.targets.delete(partnerId);
    const current = result.state.secrets[result.state.secrets.length - 1];
    if (!current) throw new Error('a configured endpoint has a secret');
    return { ...view(result.state), secret: await this.box.open(partnerId, current.secretId, current.sealed) };
  }

  async get(partnerId: string): Promise<EndpointView | null> {
    const state = await this.state(partnerId);
    return state.url ? view(state) : null;
  }

  /** A new secret; the one it replaces keeps signing for 24 hours. */
  async rotate(partnerId: string, ctx: CommandContext): Promise<{ secret: string; previousSecretExpiresAt: string }> {
    const fresh = await this.newSecret(partnerId);
    const at = new Date().toISOString();
    const { result } = await this.deps.commands.decide(ctx, webhookEndpointStream(partnerId), webhookEndpointDecider, {
      type: 'RotateSecret',
      newSecret: fresh.sealed,
      at,
    });
    this.targets.delete(partnerId);
    const [event] = result.events;
    if (event?.type !== 'WebhookSecretIssued' || !event.data.previousExpiresAt) throw new Error('a rotation issues a secret and retires the previous one');
    return { secret: fresh.secret, previousSecretExpiresAt: event.data.previousExpiresAt };
  }

  /** Where and with which secrets (in clear, newest first) a delivery made at `atMs` goes; null when unconfigured. */
  async target(partnerId: string, atMs: number): Promise<{ url: string; secrets: string[] } | null> {
    let cached = this.targets.get(partnerId);
    if (!cached || Date.now() - cached.readAtMs > TARGET_TTL_MS) {
      const readAtMs = Date.now();
      cached = { state: await this.state(partnerId), readAtMs, opened: new Map() };
      this.targets.set(partnerId, cached);
    }
    const { state, opened } = cached;
    if (!state.url) return null;
    const secrets: string[] = [];
    for (const s of signingSecrets(state, atMs).reverse()) {
      const secret = opened.get(s.secretId) ?? (await this.box.open(partnerId, s.secretId, s.sealed));
      opened.set(s.secretId, secret);
      secrets.push(secret);
    }
    return { url: state.url, secrets };
  }

  private async state(partnerId: string): Promise<WebhookEndpointState> {
    const loaded = await load(this.deps.store, webhookEndpointStream(partnerId), webhookEndpointDecider, { cache: this.deps.stateCache });
    return loaded.state;
  }

  private async newSecret(partnerId: string): Promise<{ secret: string; sealed: { secretId: string; sealed: string } }> {
    const secret = newSigningSecret();
    const secretId = randomUUID();
    return { secret, sealed: { secretId, sealed: await this.box.seal(partnerId, secretId, secret) } };
  }
}

function eventTypes(requested: string[]): NotificationType[] {
  const unknown = requested.filter((t) => !(NOTIFICATION_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) throw NOTIFICATION_REFUSALS.unknownEventType(unknown.join(', '));
  return [...new Set(requested)] as NotificationType[];
}

const view = (state: WebhookEndpointState): EndpointView => {
  if (!state.url) throw new Error('view of an unconfigured endpoint');
  return { url: state.url, events: state.events ?? [...NOTIFICATION_TYPES] };
};
