import { timingSafeEqual } from 'node:crypto';
import { decodeCursor, encodeCursor } from './deliveries';
import { signatureHeaders } from './secrets';
import type { Sql } from '../../eventstore/sql';
import type { WebhookEndpoints } from './endpoints';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications/refusals';

/** A received notification's age beyond which its signature is refused (as Standard Webhooks libraries do). */
const TOLERANCE_SECONDS = 300;
/** What the inbox keeps per partner: the newest; older ones are dropped as new ones arrive. */
export const INBOX_KEEP = 1_000;

export const INBOX_SIGNATURE_ERROR = NOTIFICATION_REFUSALS.invalidWebhookSignature.template;

export interface InboxItem {
  id: number;
  receivedAt: string;
  /** The notification's id (`webhook-id`). */
  deliveryId: string;
  headers: { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string; 'x-webhook-signature': string | null };
  /** The body as received, byte for byte: what a receiver verifies the signatures over. */
  rawBody: string;
  notification: unknown;
}

interface Signed {
  id: string;
  timestamp: string;
  signature: string;
  xWebhookSignature?: string;
}

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** Equal texts, compared in constant time over their UTF-8 bytes (a text's length in characters is not its length in bytes). */
function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export interface SandboxInboxDeps {
  sql: Sql;
  endpoints: Pick<WebhookEndpoints, 'target'>;
}

/**
 * The sandbox's webhook receiver: a partner points its endpoint at it and reads back what arrived,
 * without a server of its own. It keeps only notifications this service signed: the `webhook-id`
 * names the delivery, hence its partner, and the Standard Webhooks signature must verify with that
 * partner's secrets, so nobody can write into another partner's inbox.
 */
export class SandboxInbox {
  constructor(private readonly deps: SandboxInboxDeps) {}

  async receive(raw: string, signed: Partial<Signed>, nowMs = Date.now()): Promise<void> {
    const { id, timestamp, signature } = signed;
    if (!id || !timestamp || !signature || !/^[0-9a-f-]{36}$/i.test(id) || !/^\d{1,12}$/.test(timestamp)) throw unsigned();
    if (Math.abs(nowMs / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) throw unsigned();
    const [delivery] = await this.deps.sql.query<{ partner_id: string }>('SELECT partner_id::text FROM webhook_deliveries WHERE id = $1', [id]);
    const target = delivery && (await this.deps.endpoints.target(delivery.partner_id, nowMs));
    if (!delivery || !target) throw unsigned();
    const expected = signatureHeaders(target.secrets, id, Number(timestamp), raw)['webhook-signature']?.split(' ') ?? [];
    const sent = signature.split(' ');
    if (!sent.some((s) => expected.some((e) => sameText(s, e)))) throw unsigned();
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': signature,
      'x-webhook-signature': signed.xWebhookSignature ?? null,
    };
    await this.deps.sql.transaction(async (tx) => {
      await tx.query('INSERT INTO sandbox_webhook_inbox (partner_id, delivery_id, headers, body) VALUES ($1, $2, $3, $4)', [
        delivery.partner_id,
        id,
        JSON.stringify(headers),
        raw,
      ]);
      await tx.query(
        `DELETE FROM sandbox_webhook_inbox WHERE partner_id = $1 AND seq <= (
           SELECT seq FROM sandbox_webhook_inbox WHERE partner_id = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`,
        [delivery.partner_id, INBOX_KEEP],
      );
    });
  }

  /** The partner's inbox, newest first, with cursor pagination. */
  async list(partnerId: string, query: { limit: number; cursor?: string }): Promise<{ items: InboxItem[]; nextCursor: string | null }> {
    const params: unknown[] = [partnerId, query.limit + 1];
    let where = 'partner_id = $1';
    if (query.cursor !== undefined) {
      params.push(decodeCursor(query.cursor));
      where += ` AND seq < $${params.length}`;
    }
    const rows = await this.deps.sql.query<{ seq: string; received_at: string; delivery_id: string; headers: InboxItem['headers']; body: string }>(
      `SELECT seq::text, to_char(received_at AT TIME ZONE 'UTC', ${ISO}) AS received_at, delivery_id::text, headers, body
         FROM sandbox_webhook_inbox WHERE ${where} ORDER BY seq DESC LIMIT $2`,
      params,
    );
    const items = rows.slice(0, query.limit).map((r) => ({
      id: Number(r.seq),
      receivedAt: r.received_at,
      deliveryId: r.delivery_id,
      headers: r.headers,
      rawBody: r.body,
      notification: JSON.parse(r.body) as unknown,
    }));
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > query.limit && last ? encodeCursor(last.id) : null };
  }
}

const unsigned = () => NOTIFICATION_REFUSALS.invalidWebhookSignature();
