import type { Checkpoints } from './checkpoints';
import type { Failures } from './failures';

/** What a loop knows of its consumers' checkpoints, kept by holdLeases. */
export interface Held {
  /** The consumers whose lease this node holds. */
  owned: Set<string>;
  /** Each consumer's position, as this node knows it. */
  positions: Map<string, string>;
  failures: Failures;
}

/**
 * Takes or renews, in one statement, the lease of every named consumer no one else holds, and
 * follows what the rows say: a consumer newly taken over starts from its stored checkpoint (not
 * what this node last knew) with the failure its last owner saw; a failure cleared elsewhere (a
 * rebuild by the CLI) is cleared here; and this node knows which consumers other nodes hold are
 * stopped (its reads of them are stale, waiting for them pointless), though only their owner retries;
 * a checkpoint moved by someone else while this node held it is followed from where it is now.
 * Returns the consumers whose ownership or checkpoint changed (their observers must forget what they knew).
 */
export async function holdLeases(checkpoints: Checkpoints, names: string[], leaseSeconds: number, held: Held): Promise<string[]> {
  const rows = await checkpoints.hold(names, leaseSeconds);
  const now = new Set(rows.map((r) => r.name));
  const moved: string[] = [];
  for (const r of rows) {
    if (!held.owned.has(r.name)) {
      held.positions.set(r.name, r.position);
      if (r.failure) held.failures.adopt(r.name, r.failure);
    } else if (r.position !== held.positions.get(r.name)) {
      // Moved by someone else while this node held it (an operator, a rebuild elsewhere): followed.
      held.positions.set(r.name, r.position);
      moved.push(r.name);
    }
    if (!r.failure) held.failures.forget(r.name);
  }
  const stopped = await checkpoints.stopped(names.filter((n) => !now.has(n)));
  for (const name of held.failures.names()) if (!now.has(name) && !stopped.some((r) => r.name === name)) held.failures.forget(name);
  for (const r of stopped) if (!held.failures.has(r.name)) held.failures.adopt(r.name, r.failure);
  const changed = names.filter((n) => now.has(n) !== held.owned.has(n) || moved.includes(n));
  held.owned.clear();
  for (const name of now) held.owned.add(name);
  return changed;
}
