import { comparePositions, type EventStore } from '../../eventstore/port';
import type { ProjectionFailure } from './checkpoints';
import type { LogConsumer } from './engine';
import type { LogHandler } from './handler';

/** The lag is counted by reading, up to this many events: /readyz asks, and must stay cheap when far behind. */
const LAG_COUNT_LIMIT = 1_000;

/** Where one consumer of the log (a projection or a reactor) stands. */
export interface ProjectionStatus {
  name: string;
  position: string;
  headPosition: string;
  /** Events of its types between its checkpoint and the head. */
  lag: number;
  /** The lag is counted up to LAG_COUNT_LIMIT: true means "at least that many". */
  lagAtLeast: boolean;
  owner: string | null;
  ownedHere: boolean;
  /** Set while it is stopped on an event it cannot apply. */
  failure: ProjectionFailure | null;
}

/** Where each handler of a consumer stands: its checkpoint, its lag behind the head, its owner, its failure. */
export async function consumerStatus(
  store: EventStore,
  consumer: LogConsumer,
  handlers: readonly Pick<LogHandler, 'name' | 'eventTypes'>[],
): Promise<ProjectionStatus[]> {
  const head = await store.headPosition();
  const rows = await consumer.checkpoints.rows(handlers.map((h) => h.name));
  const result: ProjectionStatus[] = [];
  for (const h of handlers) {
    const row = rows.find((r) => r.name === h.name);
    const position = row?.position ?? '';
    const pending = await store.readAll({
      fromPosition: position || undefined,
      filter: { eventTypes: h.eventTypes },
      maxCount: LAG_COUNT_LIMIT,
      projectionOnly: true,
    });
    result.push({
      name: h.name,
      position,
      headPosition: head,
      lag: pending.filter((e) => comparePositions(e.position, head) <= 0).length,
      lagAtLeast: pending.length >= LAG_COUNT_LIMIT,
      owner: row?.owner ?? null,
      ownedHere: consumer.owned.has(h.name),
      failure: row?.failure ?? null,
    });
  }
  return result;
}
