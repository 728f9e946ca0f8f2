import type { Logger } from 'pino';
import { StoreUnavailableError } from '../eventstore/port';

/** Socket-level codes of a database out of reach (refused, reset, unreachable, its name not resolving). */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** SQLSTATEs of a server going down or not up yet: admin_shutdown, crash_shutdown, cannot_connect_now. */
const SHUTDOWN_STATES = new Set(['57P01', '57P02', '57P03']);
/** What pg and PGlite say when the connection is gone (pg's errors of a lost connection carry no code). */
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|PGlite is closed/i;

/**
 * True when `error` says the store (event log or read-model database) cannot be reached right now,
 * not that the request or the data is wrong: the answer is 503, and it is an outage, not a bug.
 */
export function isOutage(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  const e = error as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code.startsWith('08') || CONNECTION_CODES.has(code) || SHUTDOWN_STATES.has(code)) return true;
  return typeof e?.message === 'string' && CONNECTION_MESSAGES.test(e.message);
}

/**
 * The store's availability as this process sees it, logged once per change instead of once per
 * failure: the first failure of an outage logs an error (with that failure), the others only count;
 * while down, a probe runs every `probeEveryMs` and its first success logs that the store is back
 * (with how long it was down and how many failures were counted). Anything that sees the store work
 * again may call `available()` earlier.
 */
export class Outage {
  private downSince: number | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  private closed = false;

  constructor(
    private readonly log: Logger,
    private readonly probe: () => Promise<unknown>,
    private readonly probeEveryMs = 1_000,
  ) {}

  /** True between a failure and the store being seen working again. */
  get down(): boolean {
    return this.downSince !== undefined;
  }

  /** A failure for want of the store: logged if it is the first of an outage, counted otherwise. */
  unavailable(error: unknown): void {
    this.failures++;
    if (this.downSince !== undefined) return;
    this.downSince = Date.now();
    this.failures = 1;
    this.log.error({ err: error }, 'store unavailable: answering 503 until it is back');
    this.schedule();
  }

  /** The store worked: logged if it ends an outage, nothing otherwise. */
  available(): void {
    if (this.downSince === undefined) return;
    const downMs = Date.now() - this.downSince;
    this.downSince = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.log.warn({ downMs, failures: this.failures }, 'store is back');
  }

  /** Stops probing (the process is closing its store). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.closed || this.timer || this.probing) return;
    this.timer = setTimeout(() => void this.runProbe(), this.probeEveryMs);
    this.timer.unref();
  }

  private async runProbe(): Promise<void> {
    this.timer = undefined;
    if (this.closed || this.downSince === undefined) return;
    this.probing = true;
    let ok = false;
    try {
      await this.probe();
      ok = true;
    } catch {
      // Still down: the next probe will tell.
    } finally {
      this.probing = false;
    }
    if (ok) this.available();
    else if (this.downSince !== undefined) this.schedule();
  }
}
