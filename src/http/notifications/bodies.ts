import { type TSchema, Type } from '@sinclair/typebox';
import { User } from '../schemas';
import { Application, Card, CardTransaction } from '../cards';
import { StatusView } from '../identity';
import { Transaction } from '../ledger';

/** What each notification type carries as `data`: the read the API answers for the same thing. */
export const NOTIFICATION_DATA: Array<{ type: string; summary: string; data: TSchema }> = [
  {
    type: 'user.status.updated',
    summary: "A user's status changed; `data.user` as GET partner/users/:userId shows it.",
    data: Type.Object({ user: User }, { description: 'The user, with the status it changed to in `user.status`' }),
  },
  { type: 'kyc.status.updated', summary: "A user's KYC status changed; `data` as GET user/kyc/status shows it.", data: StatusView },
  { type: 'deposit.completed', summary: 'A deposit was confirmed and credited; `data` as GET transactions/:id shows it.', data: Transaction },
  { type: 'deposit.failed', summary: 'A deposit failed; `data` as GET transactions/:id shows it.', data: Transaction },
  { type: 'transfer.completed', summary: 'A transfer between two users of the partner completed; `data` as GET transactions/:id shows it.', data: Transaction },
  { type: 'payout.updated', summary: "A payout's status changed (PROCESSING, COMPLETED, FAILED); `data` as GET transactions/:id shows it.", data: Transaction },
  {
    type: 'card.application.updated',
    summary: 'A card application was made (pending) or decided (approved, declined); `data.application` as GET cards/application/status shows it just after.',
    data: Type.Object({ application: Application }, { description: 'The card application as it stood just after the event' }),
  },
  {
    type: 'card.updated',
    summary:
      'A card was issued, activated, locked, unlocked, canceled or given a new limit; `data` as GET cards/details shows it, with the status and limit the change set.',
    data: Card,
  },
  {
    type: 'card.transaction.created',
    summary: 'An authorization made a card transaction, `pending` (approved) or `declined`; `data` as the card transactions list shows it when made.',
    data: CardTransaction,
  },
  {
    type: 'card.transaction.updated',
    summary: 'A card transaction was cleared (`completed`, with the amount the merchant took) or reversed; `data` as the card transactions list shows it.',
    data: CardTransaction,
  },
];

/** The body of a notification of one type: what each delivery POSTs, and what the events API answers. */
export const notificationBody = (type: string, data: TSchema) =>
  Type.Object({
    id: Type.String({ format: 'uuid', description: 'The same on every retry (and the `webhook-id` header): deduplicate on it' }),
    type: Type.Literal(type, { description: 'The notification type: what happened, and so the shape of `data`' }),
    createdAt: Type.String({ format: 'date-time', description: 'When the event the notification reports was recorded (ISO 8601, UTC)' }),
    sequence: Type.Integer({ description: 'Increases with the event log: order by it when order matters' }),
    data,
  });

/** One notification of any type, exactly as a delivery carries it: the events API's item. */
export const PartnerEvent = Type.Union(
  NOTIFICATION_DATA.map(({ type, data }) => notificationBody(type, data)),
  { $id: 'PartnerEvent', description: 'A notification as its delivery carries it: `{id, type, createdAt, sequence, data}`' },
);
