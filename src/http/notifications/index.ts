/** Partner notifications over HTTP: the webhook endpoint, its deliveries, and the sandbox's inbox. */
export { notificationWebhooks, partnerWebhookRoutes } from './webhooks';
