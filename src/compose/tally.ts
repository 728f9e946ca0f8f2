import type { Logger } from 'pino';
import type { Config } from '../config';
import { comparePositions, type EventStore } from '../eventstore/port';
import type { Sql } from '../eventstore/sql';
import { allProjections } from '../projections';
import { ProjectionEngine, type Projections } from '../platform/consumers/runner';
import { ProjectionThread } from '../platform/consumers/thread';
import { PostgresEventStore } from '../eventstore/postgres';
import { Notifications } from '../app/notifications';
import type { BaseUrls, BuiltProviders } from '../providers';
import type { ServiceKeys } from '../platform/keys';
import { CardsService } from '../app/cards';
import { CommandHandler } from '../platform/commands/command-handler';
import { StateCache } from '../platform/commands/commands';
import { KycService } from '../app/identity/kyc';
import { LedgerService } from '../app/ledger';
import { LoginService } from '../app/identity/login';
import { Outage } from '../platform/outage';
import { PartnerService } from '../app/identity/partners';
import { ProfileService } from '../app/identity/profiles';
import { SessionGate } from '../app/identity/session-gate';
import { SNAPSHOTS_SCHEMA, SnapshotStore } from '../platform/commands/snapshots';
import { TokenService } from '../app/identity/tokens';
import { UserService } from '../app/identity/users';

/** Tables that belong to no projection: id allocation and operational counters. */
const SERVICE_SCHEMA = `
CREATE SEQUENCE IF NOT EXISTS account_id_seq START WITH 1000;
CREATE SEQUENCE IF NOT EXISTS transaction_id_seq START WITH 1;
CREATE TABLE IF NOT EXISTS login_send_log (email_hash text NOT NULL, sent_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS login_send_log_email ON login_send_log (email_hash, sent_at);
`;

/**
 * A partner's writes to a read model that were answered without waiting for it (Tally.noteWrite):
 * the partner's next read of that model waits for them.
 */
export const writeScope = (model: string, partnerId: string) => `${model}:${partnerId}`;

/** The running service without its HTTP face: stores, projections and application services. */
export class Tally {
  readonly engine: Projections;
  readonly partners: PartnerService;
  readonly users: UserService;
  readonly profiles: ProfileService;
  readonly kyc: KycService;
  readonly login: LoginService;
  readonly tokens: TokenService;
  readonly ledger: LedgerService;
  readonly cards: CardsService;
  readonly sessionGate: SessionGate;
  /** Partner webhooks: endpoints, the outbox fed by the log, delivery. */
  readonly notifications: Notifications;
  /** The store's availability, logged once per change (the HTTP layer reports 503s to it). */
  readonly outage: Outage;
  /** Folded aggregate states: loads read what follows them; a command's first attempt trusts them (see Reads). */
  readonly stateCache = new StateCache();
  /** Every command goes through it: load, decide, append at the revisions decided on, retry. */
  readonly commands: CommandHandler;
  /** Per scope, the last position appended without waiting for the projections (noteWrite). */
  private readonly lastWrites = new Map<string, string>();
  /** Hands stale held payouts to their provider again (Payouts.resubmitStale), while the server runs. */
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    readonly config: Config,
    readonly store: EventStore,
    readonly sql: Sql,
    readonly log: Logger,
    readonly keys: ServiceKeys,
    readonly providers: BuiltProviders,
    /** Mutable: the server fills in the port it got. */
    readonly urls: BaseUrls,
  ) {
    // First: anything built below that meets the store out of reach may report to it.
    this.outage = new Outage(log, async () => {
      await store.ping();
      await sql.query('SELECT 1');
    });
    this.stateCache.snapshots = new SnapshotStore(sql, log);
    this.commands = new CommandHandler(store, this.stateCache);
    this.engine = projectionsFor(config, store, sql, log);
    this.partners = new PartnerService(this);
    this.users = new UserService(this);
    this.profiles = new ProfileService(this);
    this.kyc = new KycService(this);
    this.login = new LoginService(this);
    this.tokens = new TokenService(keys);
    this.ledger = new LedgerService(this);
    this.cards = new CardsService(this);
    this.sessionGate = new SessionGate(sql, this.engine, store, this.stateCache);
    this.notifications = new Notifications(this, log, this.engine.nodeId);
  }

  /** Creates read-model tables; `runProjections` starts following the log (the server does, the CLI does not). */
  async start(options: { runProjections: boolean }): Promise<void> {
    await this.sql.exec(SERVICE_SCHEMA);
    await this.sql.exec(SNAPSHOTS_SCHEMA);
    await this.providers.prepare();
    await this.engine.prepare();
    await this.notifications.prepare();
    if (options.runProjections) {
      this.engine.start();
      this.notifications.start();
      const every = this.config.payoutResubmitSeconds;
      if (every > 0) {
        this.sweeper = setInterval(() => {
          this.ledger.payouts.resubmitStale(every).catch((error) => this.log.warn({ err: error }, 'held payouts sweep failed'));
        }, every * 1_000);
        this.sweeper.unref();
      }
    }
  }

  /**
   * Writes whose route answers without reading a read model (a transfer answers from its own events)
   * do not wait for the projections; they note their position under a scope (a partner's ledger), and
   * the scope's next read waits for it instead. So a partner that moved money and then reads sees
   * the movement (on this node), while the write path never waits for a projection.
   */
  noteWrite(scope: string, position: string | undefined): void {
    if (!position) return;
    const known = this.lastWrites.get(scope);
    if (!known || comparePositions(known, position) < 0) this.lastWrites.set(scope, position);
  }

  /** Waits (bounded) until the named projections have passed the scope's last noted write. */
  async readAfterWrites(scope: string, names: string[]): Promise<void> {
    const position = this.lastWrites.get(scope);
    if (!position) return;
    await this.readYourWrites(position, names);
    if (this.lastWrites.get(scope) === position && this.engine.passed(position, names)) this.lastWrites.delete(scope);
  }

  /** Waits (bounded) until the named projections have passed a position this request appended. */
  async readYourWrites(position: string | undefined, names: string[]): Promise<void> {
    if (!position) return;
    const caughtUp = await this.engine.waitFor(position, { names, timeoutMs: this.config.readYourWritesTimeoutMs });
    // A projection stopped on an event has already said so (once per attempt); each request need not.
    if (!caughtUp && !names.some((n) => this.engine.isStopped(n)))
      this.log.warn({ position, names }, 'read-your-writes wait timed out; answering from a lagging read model');
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.outage.close();
    await this.notifications.stop();
    await this.engine.stop();
    await this.store.close();
    await this.sql.close();
  }
}

/**
 * The projections on Postgres run in a worker thread (PROJECTIONS_THREAD=worker, the default): their
 * reads of the log, folds and writes then leave the main thread to the requests. Elsewhere (the
 * embedded store, KurrentDB) and with PROJECTIONS_THREAD=main, on the main thread.
 */
function projectionsFor(config: Config, store: EventStore, sql: Sql, log: Logger): Projections {
  if (config.projectionsThread === 'worker' && config.databaseUrl && sql.kind === 'postgres' && store instanceof PostgresEventStore)
    return new ProjectionThread(store, sql, allProjections, { databaseUrl: config.databaseUrl, paceMs: config.projectionsPaceMs, log });
  const engine = new ProjectionEngine(store, sql, allProjections, log);
  engine.paceMs = config.projectionsPaceMs;
  return engine;
}
