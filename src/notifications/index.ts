import type { Tally } from '../app/tally';
import { WebhookEndpoints } from './endpoints';

/** Partner notifications: endpoint configuration, the outbox fed by the log, and delivery. */
export class Notifications {
  readonly endpoints: WebhookEndpoints;

  constructor(tally: Tally) {
    this.endpoints = new WebhookEndpoints(tally);
  }

  async prepare(): Promise<void> {}

  start(): void {}

  async stop(): Promise<void> {}
}
