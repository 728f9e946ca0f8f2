import type { Config } from '../config';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../app/notifications/deliveries';
import { requirePartnerId } from './args';
import { CliError, type CliIo, withTally } from './context';

/** `tally webhooks deliveries --partner <id>`: the partner's notifications, newest first, with their last attempt. */
export async function listDeliveries(config: Config, options: { partner: string; status?: string; limit?: string }, io: CliIo) {
  const partnerId = requirePartnerId(options.partner);
  if (options.status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(options.status))
    throw new CliError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}`);
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new CliError('--limit must be a whole number from 1 to 100');
  return withTally(config, io, async (tally) => {
    const page = await tally.notifications.deliveries.list(partnerId, { limit, status: options.status as DeliveryStatus | undefined });
    const rows = [
      ['ID', 'TYPE', 'SEQUENCE', 'STATUS', 'ATTEMPTS', 'LAST ATTEMPT', 'NEXT ATTEMPT'],
      ...page.items.map((d) => {
        const last = d.attempts[d.attempts.length - 1];
        const outcome = last ? `${last.at} ${last.httpStatus ?? last.error ?? ''} ${last.durationMs}ms` : '-';
        return [d.id, d.type, String(d.sequence), d.status, String(d.attempts.length), outcome, d.nextAttemptAt ?? '-'];
      }),
    ];
    const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0))) ?? [];
    for (const r of rows) io.out(r.map((cell, i) => (i < r.length - 1 ? cell.padEnd(widths[i] ?? 0) : cell)).join('  '));
    return page.items;
  });
}
