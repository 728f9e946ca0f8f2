import { expect } from 'chai';
import type { EventStore } from '../../src/eventstore/port';
import { PgliteSql } from '../../src/eventstore/sql';
import { CheckpointsOfAnotherLogError } from '../../src/platform/consumers/checkpoints';
import { ProjectionEngine } from '../../src/platform/consumers/projections';

/** prepare() reads nothing of the log but its kind. */
const storeOfKind = (kind: EventStore['kind']) => ({ kind }) as EventStore;

describe('projection checkpoints and the log they are positions in', () => {
  let sql: PgliteSql;
  beforeEach(async () => {
    sql = await PgliteSql.open();
  });
  afterEach(async () => {
    await sql.close();
  });

  it('refuses to run read models built from a Postgres log on a KurrentDB one, and the other way round', async () => {
    await new ProjectionEngine(storeOfKind('postgres'), sql, []).prepare();
    const error = await new ProjectionEngine(storeOfKind('kurrentdb'), sql, []).prepare().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(CheckpointsOfAnotherLogError);
    expect((error as Error).message).to.match(/positions in a postgres event log, and this node's log is kurrentdb/);

    const other = await PgliteSql.open();
    try {
      await new ProjectionEngine(storeOfKind('kurrentdb'), other, []).prepare();
      const back = await new ProjectionEngine(storeOfKind('pglite'), other, []).prepare().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(back).to.be.instanceOf(CheckpointsOfAnotherLogError);
    } finally {
      await other.close();
    }
  });

  it('takes Postgres and PGlite for one kind of log, and starts again on the log it recorded', async () => {
    await new ProjectionEngine(storeOfKind('pglite'), sql, []).prepare();
    await new ProjectionEngine(storeOfKind('postgres'), sql, []).prepare();
    await new ProjectionEngine(storeOfKind('pglite'), sql, []).prepare();
    expect(await sql.query('SELECT log_kind FROM projection_checkpoints_log')).to.deep.equal([{ log_kind: 'postgres' }]);
  });
});
