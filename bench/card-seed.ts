import { randomUUID } from 'node:crypto';
import type { Tally } from '../src/compose/tally';
import type { CommandContext } from '../src/platform/commands/commands';
import { mapLimit } from './support';

/**
 * The cards benches' history, made inside the server's process: by the cards bench (its server runs
 * in the bench's process) and by compare-server (BENCH_COMPARE_MIX=cards), which runs another build's
 * code alone, so this module imports nothing of src/ but types.
 */

/** What the history needs of a server's Tally (another build's too). */
export type SeedTally = Pick<Tally, 'cards' | 'store' | 'engine' | 'reactors' | 'sql'>;

const DAY_MS = 86_400_000;
/** A past purchase: 1.00 to 60.99 USD, from whole cents. */
const pastPurchase = (cents: number) => ({ amount: usd(cents), currency: 'USD', merchantName: 'Corner Shop', merchantCategoryCode: '5411' });
const usd = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

/**
 * A card's past: `spends` purchases per card, one a day at a random hour back from yesterday, each
 * settled an hour later as a card network would (one in seven reversed, the rest cleared, one in five
 * of those for a little less). Made through the service's own authorizations and settlements with
 * its clock set back, day by day across every card, so that the cards' states and read models are
 * those of cards in use for that long. The clock is given back before the loops.
 */
export async function seedHistory(tally: SeedTally, partnerId: string, holders: Array<{ cardId: string }>, spends: number): Promise<{ declined: number }> {
  const spending = tally.cards.spending;
  const ctx = (): CommandContext => ({ commandId: randomUUID(), unkeyed: true, metadata: { actor: { kind: 'partner', id: partnerId } } });
  const now = Date.now();
  let declined = 0;
  try {
    for (let day = spends; day >= 1; day--) {
      const at = now - day * DAY_MS + Math.floor(Math.random() * 20) * 3_600_000;
      spending.clock = () => new Date(at).toISOString();
      const cents = holders.map(() => 100 + Math.floor(Math.random() * 6_000));
      const made = await mapLimit(holders, holders.length, (h, i) => spending.authorize(partnerId, h.cardId, pastPurchase(cents[i] as number), ctx()));
      spending.clock = () => new Date(at + 3_600_000).toISOString();
      await mapLimit(made, made.length, async (view, i) => {
        if (view.spend.declinedReason) return declined++;
        if (i % 7 === day % 7) return spending.reverse(partnerId, view.id, ctx());
        return spending.clear(partnerId, view.id, i % 5 === day % 5 ? usd((cents[i] as number) - 50) : undefined, ctx());
      });
    }
  } finally {
    spending.clock = () => new Date().toISOString();
  }
  return { declined };
}

/**
 * The loops start from a quiet server: every read model and the notifications' outbox past what the
 * history appended (or they would still be working through it while measured), the new rows
 * vacuumed, and the cluster's dirty pages written by a checkpoint (where the bench's role may ask for one).
 */
export async function settleDown(tally: SeedTally): Promise<void> {
  const head = await tally.store.headPosition();
  if (!(await tally.engine.waitFor(head, { timeoutMs: 600_000 }))) throw new Error('the read models did not catch up with the history');
  if (!(await tally.reactors.passed('outbox', head, 600_000))) throw new Error('the outbox did not catch up with the history');
  // The history's rows vacuumed and analyzed, as a cluster's autovacuum left them long ago: otherwise
  // it would start on them during a loop (a 25% loop read p99 139-141 ms where its neighbours read 19-28).
  await tally.sql.query('VACUUM (ANALYZE)');
  await tally.sql.query('CHECKPOINT').catch(() => undefined);
}
