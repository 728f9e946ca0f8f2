import pg from 'pg';
import type { Logger } from 'pino';
import { DESTROYED_KEYS_CHANNEL, EVERY_OWNER } from './data-keys';

/** What hears of destroyed keys: a node's DataKeys. */
export interface ForgetsKeys {
  forget(owner: string): void;
}

/**
 * How a node hears that a data key was destroyed on another node (an erasure there, or the CLI's):
 * `start` begins, `stop` ends it and releases what it holds. On the embedded store there is nothing
 * to hear: one process holds the database (the server's lock file), and the node that destroys a
 * key forgets it itself.
 */
export interface DestroyedKeySignal {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface DestroyedKeysListenerOptions {
  /** Wait before the first attempt to listen again after the connection is lost; doubled after each failed one. */
  retryMinMs: number;
  /** The longest wait between attempts. */
  retryMaxMs: number;
}

/**
 * The node-wide forget signal on Postgres. DataKeys.destroy notifies DESTROYED_KEYS_CHANNEL with the
 * owner in its own transaction, so every node listening hears it at the commit, milliseconds later,
 * and forgets the key (DataKeys.forget, which tells the projection thread and the card holders'
 * names too). One dedicated connection per node listens (a `pg.Client` of its own, outside the pool:
 * LISTEN belongs to a session, and a pooled client is handed to others).
 *
 * A notice is lost with the connection it was sent to, and Postgres keeps none for later. So the
 * rule is: whenever LISTEN takes effect (at start, and again after every reconnection) the node
 * forgets every key it holds, as it cannot know what it missed while not listening; from then on
 * each key it reads again is the row as it is, and each destroy after is heard. While the
 * connection is down (retried with backoff, `retryMinMs` doubling up to `retryMaxMs`), what bounds
 * the use of a key destroyed meanwhile is its time to live (DataKeys' `ttlMs`), as before.
 */
export class DestroyedKeysListener implements DestroyedKeySignal {
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private retryMs: number;
  private stopped = false;

  constructor(
    private readonly connectionString: string,
    private readonly keys: ForgetsKeys,
    private readonly log: Logger,
    private readonly options: DestroyedKeysListenerOptions = { retryMinMs: 100, retryMaxMs: 5_000 },
  ) {
    this.retryMs = options.retryMinMs;
  }

  /** Listens before it resolves (a failed first attempt is logged and retried, as a lost connection is). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.retry = undefined;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch((error: Error) => this.log.warn({ err: error }, 'closing the data keys listener failed'));
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'tally-data-keys', connectionTimeoutMillis: 5_000 });
    // A server gone (restart, failover, a terminated backend) emits 'error' and then 'end'; 'end' reconnects.
    client.on('error', (error) => this.log.warn({ err: error }, 'the data keys listener lost its connection'));
    client.on('end', () => this.lost(client));
    client.on('notification', (notice) => {
      if (notice.channel === DESTROYED_KEYS_CHANNEL && notice.payload) this.keys.forget(notice.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${DESTROYED_KEYS_CHANNEL}`);
    } catch (error) {
      this.log.warn({ err: error }, 'the data keys listener could not listen; retrying');
      client.removeAllListeners('end');
      // Its failure is the one just logged: ending it only frees its socket, if it has one.
      await client.end().catch(() => undefined);
      this.again();
      return;
    }
    if (this.stopped) {
      await client.end();
      return;
    }
    this.client = client;
    this.retryMs = this.options.retryMinMs;
    // Whatever was held was read while not listening: a destroy then went unheard.
    this.keys.forget(EVERY_OWNER);
  }

  /** The connection ended: listen again unless stopping (an end of a client not in use is a failed attempt's, handled there). */
  private lost(client: pg.Client): void {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
    this.again();
  }

  private again(): void {
    if (this.stopped) return;
    const waitMs = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.options.retryMaxMs);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.listen().catch((error: unknown) => this.log.error({ err: error }, 'the data keys listener failed'));
    }, waitMs);
    this.retry.unref();
  }
}
