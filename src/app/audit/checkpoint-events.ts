import { CHECKPOINT_HEADS, HEADS_PER_EVENT, type StoredHead } from '../../platform/audit/checkpoint';
import type { Head } from '../../platform/audit/merkle-stream';
import { uuidV7 } from '../../platform/ids';
import type { NewEvent } from '../../eventstore/port';

/** The heads a checkpoint records (those that moved since the previous one), HEADS_PER_EVENT to an event. */
export function* checkpointHeadsEvents(checkpointId: string, heads: Head[]): Iterable<NewEvent> {
  for (let i = 0; i < heads.length; i += HEADS_PER_EVENT) {
    const chunk: StoredHead[] = heads.slice(i, i + HEADS_PER_EVENT).map((h) => [h.stream, h.revision, h.hash]);
    yield { id: uuidV7(), type: CHECKPOINT_HEADS, data: { checkpointId, heads: chunk } };
  }
}
