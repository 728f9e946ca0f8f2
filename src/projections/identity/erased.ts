import type { RecordedEvent } from '../../eventstore/port';
import type { SqlQueryable } from '../../eventstore/sql';
import type { BuildMemory, Projection, Tables } from '../../platform/consumers/projection';

/** Which columns of which table hold a user's personal data, in rows keyed by something else than the user. */
export interface ErasedColumns {
  table: string;
  /** The column naming the row's user. */
  userColumn: string;
  /** The personal columns and what they become (null). */
  set: Record<string, null>;
}

/** The inner fold knows not UserErased (it would look for a row keyed by it). */
const folded = (events: RecordedEvent[]) => events.filter((e) => e.type !== 'UserErased');

const erasedUsers = (events: RecordedEvent[]): string[] =>
  events.filter((e) => e.type === 'UserErased').map((e) => String((e.data as { userId: string }).userId));

/**
 * A projection whose rows of a user are keyed by something else (a verification id), so its fold
 * cannot name them for UserErased: after the fold's own writes, one UPDATE sets the erased users'
 * personal columns to null in every row of theirs, and a rebuild's memory is changed the same way
 * (a later event of the row then starts from the erased row). Replayed, UserErased does the same.
 */
export function scrubbedOnErasure(inner: Projection, columns: ErasedColumns): Projection {
  const assignments = Object.keys(columns.set)
    .map((c) => `${c} = NULL`)
    .join(', ');
  const scrub = async (tx: SqlQueryable, t: Tables, users: string[]) => {
    if (users.length > 0)
      await tx.query(`UPDATE ${t[columns.table] ?? columns.table} SET ${assignments} WHERE ${columns.userColumn} = ANY($1::uuid[])`, [users]);
  };
  const forget = (memory: BuildMemory | undefined, users: string[]) => {
    if (!memory || users.length === 0) return;
    const prefix = `${columns.table}|`;
    for (const [key, row] of memory.rows) {
      const r = row as Record<string, unknown>;
      if (key.startsWith(prefix) && users.includes(String(r[columns.userColumn]))) memory.rows.set(key, { ...r, ...columns.set });
    }
  };
  const { prepareBulk } = inner;
  return {
    ...inner,
    eventTypes: [...inner.eventTypes, 'UserErased'],
    async apply(tx, events, t, memory) {
      await inner.apply(tx, folded(events), t, memory);
      const users = erasedUsers(events);
      await scrub(tx, t, users);
      forget(memory, users);
    },
    prepareBulk: prepareBulk
      ? async (events, t, memory) => {
          const write = await prepareBulk(folded(events), t, memory);
          if (!write) return null;
          const users = erasedUsers(events);
          forget(memory, users);
          return async (tx) => {
            await write(tx);
            await scrub(tx, t, users);
          };
        }
      : undefined,
  };
}
