import type { Logger } from 'pino';
import type { Config } from '../config';
import type { EventStore } from '../eventstore/port';
import type { Sql } from '../eventstore/sql';
import type { ProjectionStatus } from '../platform/consumers/status';
import type { Projections } from '../platform/consumers/projections';
import type { Outage } from '../platform/outage';
import { HttpError, MESSAGES, PLATFORM_CODES } from '../platform/http/errors';
import type { BuiltProviders } from '../providers';
import type { AuditReads, AuditorService, CheckpointService } from '../app/audit';
import type { CardsService } from '../app/cards';
import type { KycService, LoginService, PartnerService, ProfileService, UserErasure, UserService } from '../app/identity';
import type { LedgerService } from '../app/ledger';

import type { Notifications } from '../app/notifications';
import type { IdentityQueries } from '../projections/identity';

/**
 * The services the HTTP layer is served with, as the composition root builds them. No route sees
 * all of them: each route module declares the few it uses (a `Pick` of these), and is bound to
 * exactly those (http/app.ts).
 */
export interface AppServices {
  config: Config;
  log: Logger;
  store: EventStore;
  /** For the notification metrics' own reads only. */
  sql: Sql;
  /** Identity's read models, for the reads no identity service answers (the sandbox routes). */
  identityReads: IdentityQueries;
  engine: Projections;
  /** Every consumer of the log, the projections and the reactors (the notifications' outbox). */
  consumers: { status(): Promise<ProjectionStatus[]> };
  outage: Outage;
  providers: BuiltProviders;
  partners: PartnerService;
  users: UserService;
  profiles: ProfileService;
  kyc: KycService;
  login: LoginService;
  ledger: LedgerService;
  cards: CardsService;
  /** Erasure of a user's personal data. */
  erasure: UserErasure;
  notifications: Notifications;
  /** Auditor tokens and the record of their use. */
  auditors: AuditorService;
  /** Signed checkpoints of the log, their proofs, and the keys that verify them. */
  checkpoints: CheckpointService;
  /** What auditors read of the log (the /audit/v1 routes). */
  auditReads: AuditReads;
  reads: { readAfterWrites(scope: string, names: string[]): Promise<void> };
}

/** The sandbox routes exist only while SANDBOX is on: outside it, 404 as for a path not served (the platform's `not_found`). */
export function sandboxOf(services: Pick<AppServices, 'providers'>) {
  const sandbox = services.providers.sandbox;
  if (!sandbox) throw new HttpError(404, MESSAGES.notFound, { code: PLATFORM_CODES.notFound });
  return sandbox;
}
