import type { Sql } from '../eventstore/sql';
import { ProviderError } from './errors';
import { currentUnixSeconds, signPayload } from './signature';

/** The sandbox providers' shared plumbing: error text, store failures, signed webhook delivery. */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs a store call, reporting its failure as a ProviderError of `provider` (the cause is kept). */
export async function throughStore<T>(provider: string, label: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    throw new ProviderError(`${label} store failed: ${errorText(error)}`, provider, { cause: error });
  }
}

export interface WebhookDeliveryOptions {
  /** The provider name errors carry. */
  provider: string;
  /** How errors name the sender, e.g. "Mock payment". */
  label: string;
  secret: string;
  /** Read per delivery so tests can bind a port late. */
  url: () => string;
  userAgent: string;
  /** Per attempt. Default 5000. */
  timeoutMs?: number;
  /** Attempts on network errors, timeouts, 429 and 5xx. Default 3, at most 10. */
  maxAttempts?: number;
  /** First wait between attempts, doubled each time. Default 200. */
  retryDelayMs?: number;
  /** Clock in unix seconds for signing. */
  nowSeconds?: () => number;
  fetch?: typeof fetch;
}

/** POSTs signed JSON to a webhook URL, as a real provider does. */
export class WebhookDelivery {
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly nowSeconds: () => number;

  constructor(private readonly options: WebhookDeliveryOptions) {
    if (!options.secret) throw new Error(`${options.label} webhookSecret is required`);
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    if (!(this.timeoutMs > 0)) throw new Error(`${options.label} timeoutMs must be > 0`);
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1 || this.maxAttempts > 10) throw new Error(`${options.label} maxAttempts must be 1..10`);
    if (!(this.retryDelayMs >= 0)) throw new Error(`${options.label} retryDelayMs must be >= 0`);
    this.fetchImpl = options.fetch ?? fetch;
    this.nowSeconds = options.nowSeconds ?? currentUnixSeconds;
  }

  /**
   * POSTs `json` (the event `eventId`), re-signed per attempt with header `X-Signature`. Retries
   * network errors, timeouts, 429 and 5xx; another 4xx is final. Throws ProviderError when the
   * receiver never accepted it.
   */
  async deliver(eventId: string, json: string): Promise<void> {
    const url = this.options.url();
    let lastFailure = 'not attempted';
    let attempt = 0;
    while (attempt < this.maxAttempts) {
      attempt += 1;
      try {
        const response = await this.fetchImpl(url, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'X-Signature': signPayload(this.options.secret, json, this.nowSeconds()),
            'User-Agent': this.options.userAgent,
          },
          body: json,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        // Drain the answer so the connection is released; its content is not needed.
        await response.arrayBuffer();
        if (response.ok) return;
        lastFailure = `answered ${response.status}`;
        if (response.status < 500 && response.status !== 429) break;
      } catch (error) {
        lastFailure = error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : errorText(error);
      }
      if (attempt < this.maxAttempts) await sleep(this.retryDelayMs * 2 ** (attempt - 1));
    }
    throw new ProviderError(`${this.options.label} webhook ${eventId} not delivered after ${attempt} attempt(s): ${lastFailure}`, this.options.provider);
  }
}

/** The webhook settings every sandbox provider takes: where and how it calls the service back. */
export interface SandboxWebhookOptions {
  sql: Sql;
  webhookSecret: string;
  /** Where decisions are POSTed (the service's /webhooks/<kind>/<provider>). Read per call. */
  webhookUrl: () => string;
  /** Per delivery attempt. Default 5000. */
  timeoutMs?: number;
  /** Delivery attempts on network errors, timeouts and 5xx/429. Default 3. */
  maxAttempts?: number;
  /** First wait between attempts, doubled each time. Default 200. */
  retryDelayMs?: number;
  webhookToleranceSeconds?: number;
  /** Clock in unix seconds for signing and verifying (tests). */
  nowSeconds?: () => number;
  fetch?: typeof fetch;
}

/** The delivery a sandbox provider's options describe. */
export function deliveryFor(sender: { provider: string; label: string; userAgent: string }, options: SandboxWebhookOptions): WebhookDelivery {
  return new WebhookDelivery({
    ...sender,
    secret: options.webhookSecret,
    url: options.webhookUrl,
    timeoutMs: options.timeoutMs,
    maxAttempts: options.maxAttempts,
    retryDelayMs: options.retryDelayMs,
    nowSeconds: options.nowSeconds,
    fetch: options.fetch,
  });
}
