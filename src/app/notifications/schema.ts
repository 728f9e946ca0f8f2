/**
 * The outbox's tables. They belong to no projection: a delivery is a fact about the outside world
 * (what was sent, when, what came back), so a rebuild must never drop or re-make them. The outbox's
 * checkpoint is its row in projection_checkpoints (a reactor's, see Outbox.startFrom for the table
 * it was kept in before). notification_events keeps every notification the outbox made, once per
 * partner, endpoint or not (the events API reads it; EventLog drops rows past its retention).
 */
export const NOTIFICATIONS_SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_subscriptions (
  partner_id uuid PRIMARY KEY,
  events     text[]
);
CREATE SEQUENCE IF NOT EXISTS webhook_sequence;
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id               uuid PRIMARY KEY,
  partner_id       uuid NOT NULL,
  event_id         text NOT NULL,
  type             text NOT NULL,
  sequence         bigint NOT NULL,
  created_at       timestamptz NOT NULL,
  body             text NOT NULL,
  status           text NOT NULL DEFAULT 'pending',
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL,
  first_attempt_at timestamptz,
  last_attempt_at  timestamptz,
  UNIQUE (partner_id, event_id, type)
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (partner_id, sequence) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_newest ON webhook_deliveries (partner_id, sequence DESC);
CREATE TABLE IF NOT EXISTS notification_events (
  id         uuid PRIMARY KEY,
  partner_id uuid NOT NULL,
  event_id   text NOT NULL,
  type       text NOT NULL,
  sequence   bigint NOT NULL,
  created_at timestamptz NOT NULL,
  body       text NOT NULL,
  UNIQUE (partner_id, event_id, type)
);
CREATE INDEX IF NOT EXISTS notification_events_newest ON notification_events (partner_id, sequence DESC);
CREATE INDEX IF NOT EXISTS notification_events_age ON notification_events (created_at);
CREATE TABLE IF NOT EXISTS webhook_attempts (
  delivery_id uuid NOT NULL,
  attempt     integer NOT NULL,
  at          timestamptz NOT NULL,
  http_status integer,
  error       text,
  duration_ms integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
CREATE TABLE IF NOT EXISTS sandbox_webhook_inbox (
  seq         bigserial PRIMARY KEY,
  partner_id  uuid NOT NULL,
  delivery_id uuid NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  headers     jsonb NOT NULL,
  body        text NOT NULL
);
CREATE INDEX IF NOT EXISTS sandbox_webhook_inbox_newest ON sandbox_webhook_inbox (partner_id, seq DESC);
CREATE TABLE IF NOT EXISTS webhook_dispatch_leases (
  partner_id  uuid PRIMARY KEY,
  owner       text NOT NULL,
  lease_until timestamptz NOT NULL
);
`;
