import pino from 'pino';
import { Checkpointer, type CheckpointerReply, type CheckpointerSigned, type CheckpointerThreadData } from '../app/audit';
import { PostgresEventStore } from '../eventstore/postgres';
import { PgSql } from '../eventstore/sql';
import { AuditQueries } from '../projections/audit';
import { loggerOptions } from '../platform/logging';
import { moduleData, serveModule, tellMain } from '../platform/module-thread';

/** How the checkpointer's thread reaches the log (CheckpointerThreadData.store): the node's database. */
export interface CheckpointerStore {
  databaseUrl: string;
}

/**
 * The worker side of a CheckpointerThread (app/audit/checkpointer-thread.ts): a Checkpointer over a
 * connection pool of its own (two: it reads the log and the audit read model, and appends), telling
 * the main thread each checkpoint it signs with its tree, and its state after every call.
 */
function main(): void {
  const data = moduleData<CheckpointerThreadData>();
  const { databaseUrl } = data.store as CheckpointerStore;
  const sql = new PgSql(databaseUrl, { max: 2, applicationName: 'tally-checkpoints' });
  const store = new PostgresEventStore(sql);
  const checkpointer = new Checkpointer({
    store,
    keys: data.keys,
    log: pino(loggerOptions(data.logLevel)).child({ component: 'checkpoints' }),
    intervalMs: data.intervalMs,
    heads: new AuditQueries(sql),
    onSigned: (checkpoint, tree) => {
      const told: CheckpointerSigned = { checkpoint, tree: tree.parts(), held: checkpointer.held, appendedAt: checkpointer.appendedAt };
      tellMain('signed', told);
    },
  });
  const reply = (result: unknown): CheckpointerReply => ({ result, held: checkpointer.held, appendedAt: checkpointer.appendedAt });
  serveModule({
    start: async () => reply(checkpointer.start()),
    stop: async () => {
      await checkpointer.stop();
      await store.close();
      await sql.close();
      return reply(undefined);
    },
    checkpointNow: async () => reply(await checkpointer.checkpointNow()),
    checkpointIfGrown: async () => reply(await checkpointer.checkpointIfGrown()),
  });
}

main();
