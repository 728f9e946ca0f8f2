/** The notifications capability's surface for other capabilities and the root files of each layer. */
export { MAX_URL_LENGTH, NOTIFICATION_REFUSALS } from './refusals';
export { NOTIFICATION_TYPES, type NotificationType } from './endpoint';
