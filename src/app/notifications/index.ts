import type { Logger } from 'pino';
import type { Sql } from '../../eventstore/sql';
import { DeliveryLog, type DeliveryView } from './deliveries';
import { scrubNotificationsOf } from './erasure';
import { Dispatcher } from './dispatcher';
import { EventLog } from './events';
import { WebhookEndpoints, type WebhookEndpointsDeps } from './endpoints';
import { SandboxInbox } from './inbox';
import { Outbox, type OutboxDeps } from './outbox';
import { NOTIFICATIONS_SCHEMA } from './schema';

export type NotificationsDeps = WebhookEndpointsDeps & OutboxDeps & { sql: Sql };

export { registerNotificationMetrics } from './metrics';

/** Partner notifications: endpoint configuration, the outbox (a reactor on the log), and delivery. */
export class Notifications {
  readonly endpoints: WebhookEndpoints;
  readonly outbox: Outbox;
  readonly dispatcher: Dispatcher;
  readonly deliveries: DeliveryLog;
  /** Every notification made for a partner, endpoint or not (the events API). */
  readonly events: EventLog;
  /** The sandbox's receiver (its routes answer 404 outside sandbox mode). */
  readonly inbox: SandboxInbox;

  constructor(
    private readonly deps: NotificationsDeps,
    log: Logger,
    nodeId: string,
  ) {
    this.endpoints = new WebhookEndpoints(deps);
    this.events = new EventLog(deps.sql);
    this.outbox = new Outbox(deps, this.events);
    const delivery = { sql: deps.sql, config: deps.config, endpoints: this.endpoints };
    this.dispatcher = new Dispatcher(delivery, log.child({ component: 'webhooks-dispatch' }), nodeId);
    this.deliveries = new DeliveryLog(deps.sql);
    this.inbox = new SandboxInbox(delivery);
    this.outbox.onDeliveries = () => this.dispatcher.wake();
  }

  /** POST .../deliveries/:id/redeliver: the same delivery, sent again now. */
  async redeliver(partnerId: string, deliveryId: string): Promise<DeliveryView> {
    const view = await this.deliveries.redeliver(partnerId, deliveryId);
    this.dispatcher.wake();
    return view;
  }

  /** Erasure: the user's notifications keep their shape and lose their personal fields (see erasure.ts). */
  async scrubUser(partnerId: string, userId: string): Promise<void> {
    await scrubNotificationsOf(this.deps.sql, partnerId, userId);
  }

  async prepare(): Promise<void> {
    await this.deps.sql.exec(NOTIFICATIONS_SCHEMA);
  }

  /** Delivery; the outbox is a reactor, run by the node's reactors (compose/tally.ts). */
  start(): void {
    this.dispatcher.start();
  }

  async stop(): Promise<void> {
    await this.dispatcher.stop();
  }
}
