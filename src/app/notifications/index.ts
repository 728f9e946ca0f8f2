import type { Logger } from 'pino';
import type { Tally } from '../../compose/tally';
import { DeliveryLog, type DeliveryView } from './deliveries';
import { Dispatcher } from './dispatcher';
import { WebhookEndpoints } from './endpoints';
import { SandboxInbox } from './inbox';
import { Outbox } from './outbox';
import { NOTIFICATIONS_SCHEMA } from './schema';

/** Partner notifications: endpoint configuration, the outbox fed by the log, and delivery. */
export class Notifications {
  readonly endpoints: WebhookEndpoints;
  readonly outbox: Outbox;
  readonly dispatcher: Dispatcher;
  readonly deliveries: DeliveryLog;
  /** The sandbox's receiver (its routes answer 404 outside sandbox mode). */
  readonly inbox: SandboxInbox;

  constructor(
    private readonly tally: Tally,
    log: Logger,
    nodeId: string,
  ) {
    this.endpoints = new WebhookEndpoints(tally);
    this.outbox = new Outbox(tally, log.child({ component: 'webhooks-outbox' }), nodeId);
    this.dispatcher = new Dispatcher(tally, log.child({ component: 'webhooks-dispatch' }), nodeId);
    this.deliveries = new DeliveryLog(tally.sql);
    this.inbox = new SandboxInbox(tally);
    this.outbox.onDeliveries = () => this.dispatcher.wake();
  }

  /** POST .../deliveries/:id/redeliver: the same delivery, sent again now. */
  async redeliver(partnerId: string, deliveryId: string): Promise<DeliveryView> {
    const view = await this.deliveries.redeliver(partnerId, deliveryId);
    this.dispatcher.wake();
    return view;
  }

  async prepare(): Promise<void> {
    await this.tally.sql.exec(NOTIFICATIONS_SCHEMA);
  }

  start(): void {
    this.outbox.start();
    this.dispatcher.start();
  }

  async stop(): Promise<void> {
    await this.outbox.stop();
    await this.dispatcher.stop();
  }
}
