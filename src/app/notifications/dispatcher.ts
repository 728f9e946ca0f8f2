import { BackgroundLoop } from '../../platform/consumers/background-loop';
import type { Logger } from 'pino';
import { type Resolver, systemResolver } from '../../providers/notifications/address-guard';
import { signatureHeaders } from './secrets';
import { type AttemptResult, postNotification } from '../../providers/notifications/sender';
import type { Sql } from '../../eventstore/sql';
import type { Config } from '../../config';
import type { WebhookEndpoints } from './endpoints';

const HOUR_MS = 3_600_000;

/** Delivery settings (docs/decisions.md, "Partner notifications": 10 s per attempt, first retry within 30 s, doubling with jitter, 24 hours). */
export interface DispatchOptions {
  timeoutMs: number;
  firstRetryMs: number;
  /** The longest wait between two attempts. */
  maxRetryWaitMs: number;
  giveUpAfterMs: number;
  /** Attempts in flight for one partner: a slow partner holds at most these. */
  perPartner: number;
  /** Attempts in flight on this node, all partners together. */
  overall: number;
  pollMs: number;
  leaseSeconds: number;
  /** Epoch ms; tests move it to cross retry waits and the 24-hour limit. */
  now: () => number;
  random: () => number;
  /** Where target names are looked up at each attempt (outside sandbox mode, checked there). */
  resolve: Resolver;
}

export const DEFAULT_DISPATCH: DispatchOptions = {
  timeoutMs: 10_000,
  firstRetryMs: 30_000,
  maxRetryWaitMs: 4 * HOUR_MS,
  giveUpAfterMs: 24 * HOUR_MS,
  perPartner: 16,
  overall: 64,
  pollMs: 500,
  leaseSeconds: 30,
  now: () => Date.now(),
  random: Math.random,
  resolve: systemResolver,
};

/** How an attempt ended: answered 2xx, answered otherwise, or no answer (timeout, network, refused target). */
export const ATTEMPT_OUTCOMES = ['succeeded', 'http_error', 'no_answer'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

interface DueDelivery {
  id: string;
  partner_id: string;
  body: string;
  attempts: number;
  first_attempt_at: Date | null;
}

/**
 * The wait before retry number `attempt` (1 = the first retry): doubling from `firstRetryMs`,
 * capped, with jitter in its upper half so receivers that failed together do not retry together.
 */
export function retryWaitMs(attempt: number, options: Pick<DispatchOptions, 'firstRetryMs' | 'maxRetryWaitMs' | 'random'>): number {
  const base = Math.min(options.maxRetryWaitMs, options.firstRetryMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(base * (0.5 + options.random() / 2));
}

export interface DispatcherDeps {
  sql: Sql;
  config: Pick<Config, 'sandbox'>;
  endpoints: Pick<WebhookEndpoints, 'target'>;
}

/**
 * Sends due deliveries. A partner's deliveries go out from one node at a time (a lease per partner),
 * oldest sequence first, at most `perPartner` at once; the node sends at most `overall` at once,
 * and a partner waiting on its slots never takes another partner's, so a dead endpoint costs only
 * its own partner time.
 */
export class Dispatcher {
  readonly options: DispatchOptions = { ...DEFAULT_DISPATCH };
  private readonly background = new BackgroundLoop(() => this.run());
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly perPartner = new Map<string, number>();
  /** Attempts this node made, by outcome (metrics). */
  readonly attempts: Record<AttemptOutcome, number> = { succeeded: 0, http_error: 0, no_answer: 0 };

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly log: Logger,
    private readonly nodeId: string,
  ) {}

  start(): void {
    this.background.start();
  }

  async stop(): Promise<void> {
    await this.background.stop();
    await Promise.all(this.inFlight.values());
    await this.deps.sql
      .query('DELETE FROM webhook_dispatch_leases WHERE owner = $1', [this.nodeId])
      .catch((error) => this.log.warn({ err: error }, 'webhook dispatch leases not released at stop: they lapse by themselves'));
  }

  /** Looks for due deliveries now rather than at the next poll. */
  wake(): void {
    this.background.wake();
  }

  /** Resolves once every attempt started so far has been recorded (tests). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }

  private async run(): Promise<void> {
    while (this.background.running) {
      try {
        await this.tick();
      } catch (error) {
        this.log.error({ err: error }, 'webhook dispatch round failed; trying again at the next poll');
      }
      await this.background.sleep(this.options.pollMs);
    }
  }

  /** One round: lease the partners with due deliveries (or attempts in flight here) and start what their slots allow. */
  async tick(): Promise<void> {
    const now = new Date(this.options.now());
    const due = await this.deps.sql.query<{ partner_id: string }>(
      `SELECT DISTINCT partner_id::text FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 LIMIT 500`,
      [now],
    );
    const partners = [...new Set([...due.map((r) => r.partner_id), ...this.perPartner.keys()])];
    if (partners.length === 0) return;
    const held = await this.deps.sql.query<{ partner_id: string }>(
      `INSERT INTO webhook_dispatch_leases (partner_id, owner, lease_until)
         SELECT p, $2, now() + make_interval(secs => $3) FROM unnest($1::uuid[]) AS p
       ON CONFLICT (partner_id) DO UPDATE SET owner = $2, lease_until = EXCLUDED.lease_until
         WHERE webhook_dispatch_leases.owner = $2 OR webhook_dispatch_leases.lease_until < now()
       RETURNING partner_id::text`,
      [partners, this.nodeId, this.options.leaseSeconds],
    );
    for (const { partner_id: partnerId } of held) {
      const free = Math.min(this.options.perPartner - (this.perPartner.get(partnerId) ?? 0), this.options.overall - this.inFlight.size);
      if (free <= 0) continue;
      const rows = await this.deps.sql.query<DueDelivery>(
        `SELECT id::text, partner_id::text, body, attempts, first_attempt_at FROM webhook_deliveries
          WHERE partner_id = $1 AND status = 'pending' AND next_attempt_at <= $2 AND NOT (id = ANY($3::uuid[]))
          ORDER BY sequence LIMIT $4`,
        [partnerId, now, [...this.inFlight.keys()], free],
      );
      for (const row of rows) this.begin(row);
    }
  }

  private begin(row: DueDelivery): void {
    this.perPartner.set(row.partner_id, (this.perPartner.get(row.partner_id) ?? 0) + 1);
    const attempt = this.attempt(row)
      .catch((error) => this.log.error({ err: error, delivery: row.id }, 'webhook attempt not recorded; it is sent again at the next round'))
      .finally(() => {
        this.inFlight.delete(row.id);
        const left = (this.perPartner.get(row.partner_id) ?? 1) - 1;
        if (left > 0) this.perPartner.set(row.partner_id, left);
        else this.perPartner.delete(row.partner_id);
        this.wake();
      });
    this.inFlight.set(row.id, attempt);
  }

  private async attempt(row: DueDelivery): Promise<void> {
    const atMs = this.options.now();
    const target = await this.deps.endpoints.target(row.partner_id, atMs);
    let result: AttemptResult;
    if (!target) result = { ok: false, httpStatus: null, error: 'no webhook endpoint configured', durationMs: 0 };
    else {
      const headers = signatureHeaders(target.secrets, row.id, Math.floor(atMs / 1000), row.body);
      result = await postNotification(target.url, row.body, headers, {
        timeoutMs: this.options.timeoutMs,
        publicOnly: !this.deps.config.sandbox,
        resolve: this.options.resolve,
      });
    }
    await this.record(row, atMs, result);
    this.attempts[result.ok ? 'succeeded' : result.httpStatus !== null ? 'http_error' : 'no_answer']++;
  }

  /** The attempt and what follows it, together: succeeded, failed for good after 24 h, or the next try. */
  private async record(row: DueDelivery, atMs: number, result: AttemptResult): Promise<void> {
    const firstMs = row.first_attempt_at ? row.first_attempt_at.getTime() : atMs;
    const attempts = row.attempts + 1;
    let status = 'succeeded';
    let nextMs = atMs;
    if (!result.ok) {
      const deadlineMs = firstMs + this.options.giveUpAfterMs;
      if (atMs >= deadlineMs) status = 'failed';
      else {
        status = 'pending';
        // The last try comes at the deadline itself, not a doubled wait past it.
        nextMs = Math.min(atMs + retryWaitMs(attempts, this.options), deadlineMs);
      }
    }
    // One statement (atomic by itself): the attempt is recorded with what follows it, in one round trip.
    await this.deps.sql.query(
      `WITH attempt AS (
         INSERT INTO webhook_attempts (delivery_id, attempt, at, http_status, error, duration_ms) VALUES ($1, $3, $6, $8, $9, $10)
         ON CONFLICT (delivery_id, attempt) DO NOTHING)
       UPDATE webhook_deliveries SET status = $2, attempts = $3, next_attempt_at = $4, first_attempt_at = $5, last_attempt_at = $6
        WHERE id = $1 AND attempts = $7`,
      [row.id, status, attempts, new Date(nextMs), new Date(firstMs), new Date(atMs), row.attempts, result.httpStatus, result.error, result.durationMs],
    );
    if (!result.ok)
      this.log.info({ delivery: row.id, attempt: attempts, status, httpStatus: result.httpStatus, error: result.error }, 'webhook attempt failed');
  }
}
