import type { Logger } from 'pino';
import type { Config } from '../config';
import type { EventStore } from '../eventstore/port';
import { type NoteWrite, ReadYourWrites, type WaitForReadModels } from '../platform/consumers/read-your-writes';
import type { Sql } from '../eventstore/sql';
import { allProjections } from '../projections';
import { AuditQueries } from '../projections/audit';
import { IdentityQueries } from '../projections/identity';
import { LedgerQueries } from '../projections/ledger';
import { ProjectionEngine, type Projections } from '../platform/consumers/projections';
import { Reactors } from '../platform/consumers/reactors';
import type { ProjectionStatus } from '../platform/consumers/status';
import { ProjectionThread } from '../platform/consumers/thread';
import { PostgresEventStore } from '../eventstore/postgres';
import { Notifications } from '../app/notifications';
import type { BaseUrls, BuiltProviders } from '../providers';
import type { ServiceKeys } from '../platform/keys';
import { AuditorService, AuditReads, CheckpointService, type CheckpointServiceDeps } from '../app/audit';
import type { CheckpointerStore } from './checkpointer-worker';
import { keyOwner, type Sealer } from '../platform/sealing/sealer';
import { CardsService } from '../app/cards';
import { CommandHandler } from '../platform/commands/command-handler';
import { StateCache } from '../platform/commands/commands';
import { KycService } from '../app/identity/kyc';
import { LedgerService } from '../app/ledger';
import { LOGIN_SCHEMA, LoginService } from '../app/identity/login';
import { Outage } from '../platform/outage';
import { PartnerService } from '../app/identity/partners';
import { ProfileService } from '../app/identity/profiles';
import { SessionGate } from '../app/identity/session-gate';
import { SNAPSHOTS_SCHEMA, SnapshotStore } from '../platform/commands/snapshots';
import { TokenService } from '../app/identity/tokens';
import { UserService } from '../app/identity/users';
import { PersonalData } from '../platform/sealing/personal-data';
import { type DataKeys, EVERY_OWNER } from '../platform/sealing/data-keys';
import { type DestroyedKeySignal, DestroyedKeysListener } from '../platform/sealing/destroyed-keys';
import { sealedStore } from '../platform/sealing/sealed-store';
import { personalData } from './personal-data';
import type { UserErasure } from '../app/identity';
import { userErasure } from './erasure';

/** Tables that belong to no projection: id allocation and operational counters (login's send counter is login's own). */
const SERVICE_SCHEMA = `
CREATE SEQUENCE IF NOT EXISTS account_id_seq START WITH 1000;
CREATE SEQUENCE IF NOT EXISTS transaction_id_seq START WITH 1;
${LOGIN_SCHEMA}`;

/**
 * The composition root: builds every service of the running service from the narrow dependencies
 * each declares (its constructor's `...Deps`), once, in dependency order. Nothing it builds knows it:
 * services get their ports and the services they use; the HTTP layer gets the services its routes
 * use (http/app.ts). The server, the CLI and the tests hold it to start, reach and stop the whole.
 */
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
  /** Erasure of a user's personal data: across identity, cards, notifications and the sandbox providers. */
  readonly erasure: UserErasure;
  /** What is read of identity's read models (the services take their part; the sandbox routes read it too). */
  readonly identityReads: IdentityQueries;
  /** Partner webhooks: endpoints, the outbox fed by the log, delivery. */
  readonly notifications: Notifications;
  /** Auditor tokens and the record of their use (no read model: each use is decided on the auditor's stream). */
  readonly auditors: AuditorService;
  /** Signed checkpoints: the checkpointer (every minute the log grew), their reads and proofs, the public keys. */
  readonly checkpoints: CheckpointService;
  /** What auditors read of the log, from the log alone. */
  readonly auditReads: AuditReads;
  /** The store's availability, logged once per change (the HTTP layer reports 503s to it). */
  readonly outage: Outage;
  /** Folded aggregate states: loads read what follows them; a command's first attempt trusts them (see Reads). */
  readonly stateCache = new StateCache();
  /** Every command goes through it: load, decide, append at the revisions decided on, retry. */
  readonly commands: CommandHandler;
  /** The reactors on the log (the notifications' outbox), on this thread, wherever the projections run. */
  readonly reactors: Reactors;
  /** Read-your-writes: a request that wrote waits for the read models it reads (one per node). */
  readonly reads: ReadYourWrites;
  /** Where every consumer of the log stands, projections and reactors (readiness, metrics, the CLI). */
  readonly consumers = {
    status: async (): Promise<ProjectionStatus[]> => [...(await this.engine.status()), ...(await this.reactors.status())],
  };
  /**
   * The log as the service writes and reads it: personal fields sealed on append and opened on read
   * (platform/sealing/sealed-store.ts). `store` is the log as stored, which the audit reads serve.
   */
  readonly events: EventStore;
  /** Hands stale held payouts to their provider again (Payouts.resubmitStale), while the server runs. */
  private sweeper: NodeJS.Timeout | undefined;
  /** Tells this node's data keys of those destroyed on other nodes, while the server runs (see destroyedKeySignal). */
  private destroyedKeys: DestroyedKeySignal | undefined;

  constructor(
    readonly config: Config,
    /** The log as stored (personal data sealed): the audit reads and checkpoints read it; the rest uses `events`. */
    readonly store: EventStore,
    readonly sql: Sql,
    readonly log: Logger,
    readonly keys: ServiceKeys,
    readonly providers: BuiltProviders,
    /** Mutable: the server fills in the port it got. */
    readonly urls: BaseUrls,
    /** Seals values at rest under their owner's data key (card secrets, webhook secrets). */
    readonly sealer: Sealer,
  ) {
    // First: anything built below that meets the store out of reach may report to it.
    this.outage = new Outage(log, () => pingBoth(store, sql));
    this.stateCache.snapshots = new SnapshotStore(sql, log);
    const { stateCache } = this;
    const events = sealedStore(store, new PersonalData(sealer.keys, personalData));
    this.events = events;
    this.commands = new CommandHandler(events, stateCache);
    const { commands } = this;
    this.engine = projectionsFor(config, { stored: store, events }, sql, log, keys);
    const engine = this.engine;
    if (engine instanceof ProjectionThread) sealer.keys.onForget((owner) => engine.forgetKey(owner));
    forgetStatesWithUserKeys(sealer.keys, stateCache);
    this.reads = new ReadYourWrites(engine, config.readYourWritesTimeoutMs, log);
    // Called through the object, so that a bench or a test may wrap its methods.
    const readYourWrites: WaitForReadModels = (position, names) => this.reads.waitFor(position, names);
    const noteWrite: NoteWrite = (scope, position) => this.reads.noteWrite(scope, position);
    const kit = { commands, store: events, sql, stateCache, readYourWrites, log };
    const identity = new IdentityQueries(sql);
    this.identityReads = identity;
    this.partners = new PartnerService({ ...kit, engine, partnerQueries: identity.partners });
    this.users = new UserService({ ...kit, userQueries: identity.users });
    this.profiles = new ProfileService({ ...kit, profileQueries: identity.profiles });
    this.kyc = new KycService({ ...kit, config, providers, profiles: this.profiles, kycQueries: identity.kyc });
    this.tokens = new TokenService(keys);
    this.sessionGate = new SessionGate(identity.sessions, engine, events, stateCache);
    this.login = new LoginService({ ...kit, providers, tokens: this.tokens, sessionGate: this.sessionGate, userQueries: identity.users });
    this.ledger = new LedgerService({ ...kit, noteWrite, config, providers, ledgerQueries: new LedgerQueries(sql) });
    this.cards = new CardsService({
      ...kit,
      noteWrite,
      config,
      providers,
      serviceKeys: keys,
      dataKeys: sealer.keys,
      profiles: this.profiles,
      users: this.users,
      ledger: this.ledger,
    });
    this.notifications = new Notifications(
      { ...kit, engine, config, sealer, users: this.users, userQueries: identity.users, kyc: this.kyc, ledger: this.ledger, cards: this.cards },
      log,
      engine.nodeId,
    );
    this.reactors = new Reactors(events, sql, [this.notifications.outbox], log.child({ component: 'reactors' }), engine.nodeId);
    const erasureParts = { cards: this.cards, notifications: this.notifications, reactors: this.reactors, ledger: this.ledger, providers, store };
    this.erasure = userErasure({ ...kit, readModels: engine, dataKeys: sealer.keys }, { ...erasureParts, waitMs: config.readYourWritesTimeoutMs });
    this.auditors = new AuditorService({ commands });
    const checkpointsLog = log.child({ component: 'checkpoints' });
    const thread = checkpointerThread(config, engine);
    this.checkpoints = new CheckpointService({ store, keys: keys.audit, log: checkpointsLog, queries: new AuditQueries(sql), readYourWrites, thread });
    this.auditReads = new AuditReads({ store });
  }

  /** Creates read-model tables; `runProjections` starts following the log (the server does, the CLI does not). */
  async start(options: { runProjections: boolean }): Promise<void> {
    await this.sql.exec(SERVICE_SCHEMA);
    await this.sql.exec(SNAPSHOTS_SCHEMA);
    await this.sealer.keys.prepare();
    await this.providers.prepare();
    await this.engine.prepare();
    await this.notifications.prepare();
    await this.reactors.prepare();
    if (options.runProjections) {
      this.destroyedKeys = destroyedKeySignal(this.config, this.sql, this.sealer.keys, this.log);
      await this.destroyedKeys?.start();
      this.engine.start();
      this.reactors.start();
      this.notifications.start();
      this.checkpoints.start();
      const every = this.config.payoutResubmitSeconds;
      if (every > 0) {
        this.sweeper = setInterval(() => {
          this.ledger.payouts.resubmitStale(every).catch((error) => this.log.warn({ err: error }, 'held payouts sweep failed'));
        }, every * 1_000);
        this.sweeper.unref();
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.destroyedKeys?.stop();
    this.outage.close();
    await this.reactors.stop();
    await this.notifications.stop();
    await this.checkpoints.stop();
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
function projectionsFor(config: Config, stores: { stored: EventStore; events: EventStore }, sql: Sql, log: Logger, keys: ServiceKeys): Projections {
  const { stored } = stores;
  if (config.projectionsThread === 'worker' && config.databaseUrl && sql.kind === 'postgres' && stored instanceof PostgresEventStore)
    return new ProjectionThread(stored, sql, allProjections, {
      databaseUrl: config.databaseUrl,
      projectionsModule: PROJECTIONS_MODULE,
      paceMs: config.projectionsPaceMs,
      log,
      // The worker reads the log itself: it opens personal data with data keys of its own.
      sealing: { module: PERSONAL_DATA_MODULE, keks: keys.keks, dataDir: config.dataDir },
    });
  const engine = new ProjectionEngine(stores.events, sql, allProjections, log);
  engine.paceMs = config.projectionsPaceMs;
  return engine;
}

/**
 * The checkpointer runs in a thread of its own where the projections do (Postgres, PROJECTIONS_THREAD=
 * worker): its pass over every stream each minute then leaves the requests' event loop alone. Its
 * appends wake the projection thread at once, as this thread's do.
 */
function checkpointerThread(config: Config, engine: Projections): CheckpointServiceDeps['thread'] {
  if (!(engine instanceof ProjectionThread) || !config.databaseUrl) return undefined;
  const store: CheckpointerStore = { databaseUrl: config.databaseUrl };
  return { module: CHECKPOINTER_MODULE, store, onAppended: () => engine.appendedElsewhere() };
}

/**
 * Where a running node hears of data keys destroyed on other nodes sharing its database: on Postgres,
 * a LISTEN connection of its own (platform/sealing/destroyed-keys.ts). The embedded store is one
 * process's, which forgets what it destroys itself. A CLI command does not listen: a key's time to
 * live bounds what it holds.
 */
function destroyedKeySignal(config: Config, sql: Sql, keys: DataKeys, log: Logger): DestroyedKeySignal | undefined {
  if (sql.kind !== 'postgres' || !config.databaseUrl) return undefined;
  return new DestroyedKeysListener(config.databaseUrl, keys, log.child({ component: 'data-keys' }));
}

/** The store and the read models' database both answer (how an outage learns that it is over). */
async function pingBoth(store: EventStore, sql: Sql): Promise<void> {
  await store.ping();
  await sql.query('SELECT 1');
}

/** The module the projection thread's worker loads the projections from (allProjections). */
const PROJECTIONS_MODULE = require.resolve('../projections');
/** The module the projection thread's worker loads the personal fields from (personalData). */
const PERSONAL_DATA_MODULE = require.resolve('./personal-data');
/** The checkpointer's thread's module. */
const CHECKPOINTER_MODULE = require.resolve('./checkpointer-worker');

/**
 * A user's key forgotten (an erasure, heard from any node through the destroyed-key signal) drops
 * the folded states this node keeps: the erased user's account is closed in the log, and a transfer's
 * first attempt trusts the cache for its destination (the credit, appended at any revision, would not
 * correct it). Erasures are rare, and the cache refills from the log (docs/privacy.md).
 */
function forgetStatesWithUserKeys(keys: DataKeys, cache: StateCache): void {
  const users = keyOwner.user('');
  keys.onForget((owner) => {
    if (owner === EVERY_OWNER || owner.startsWith(users)) cache.clear();
  });
}
