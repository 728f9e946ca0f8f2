import type { Logger } from 'pino';
import type { Config } from '../config';
import type { EventStore } from '../eventstore/port';
import type { Sql } from '../eventstore/sql';
import { allProjections } from '../projections';
import { ProjectionEngine } from '../projections/runner';
import { PartnerService } from './partners';
import { UserService } from './users';

/** The running service without its HTTP face: stores, projections and application services. */
export class Tally {
  readonly engine: ProjectionEngine;
  readonly partners: PartnerService;
  readonly users: UserService;

  constructor(
    readonly config: Config,
    readonly store: EventStore,
    readonly sql: Sql,
    readonly log: Logger,
  ) {
    this.engine = new ProjectionEngine(store, sql, allProjections, log);
    this.partners = new PartnerService(this);
    this.users = new UserService(this);
  }

  /** Creates read-model tables; `runProjections` starts following the log (the server does, the CLI does not). */
  async start(options: { runProjections: boolean }): Promise<void> {
    await this.engine.prepare();
    if (options.runProjections) this.engine.start();
  }

  /** Waits (bounded) until the named projections have passed a position this request appended. */
  async readYourWrites(position: string | undefined, names: string[]): Promise<void> {
    if (!position) return;
    const caughtUp = await this.engine.waitFor(position, { names, timeoutMs: this.config.readYourWritesTimeoutMs });
    if (!caughtUp) this.log.warn({ position, names }, 'read-your-writes wait timed out; answering from a lagging read model');
  }

  async close(): Promise<void> {
    await this.engine.stop();
    await this.store.close();
    await this.sql.close();
  }
}
