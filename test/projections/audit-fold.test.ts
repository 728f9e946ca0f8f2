import { createHash } from 'node:crypto';
import { expect } from 'chai';
import type { RecordedEvent } from '../../src/eventstore/port';
import { PgSql } from '../../src/eventstore/sql';
import { AuditQueries, auditProjection } from '../../src/projections/audit';
import { CHECKPOINT_HEADS, CHECKPOINT_SIGNED, type Checkpoint, foldCheckpointStream, type StoredHead } from '../../src/platform/audit/checkpoint';
import { liveTables } from '../../src/platform/consumers/projection';
import { splitStatements } from '../../src/platform/consumers/rebuild';
import { sharedCluster } from '../support/postgres';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const heads = (prefix: string, count: number, revision: number): StoredHead[] =>
  Array.from({ length: count }, (_, i) => [`${prefix}-${String(i).padStart(3, '0')}`, revision, sha(`${prefix}${i}:${revision}`)]);

/** The checkpoint stream as the checkpointers append it: A signed, B lost the race (never signed), C signed over moved heads. */
function checkpointStream(): RecordedEvent[] {
  const chunk = (checkpointId: string, stored: StoredHead[]) => ({ type: CHECKPOINT_HEADS, data: { checkpointId, heads: stored } });
  const signed = (id: string, streams: number) => ({
    type: CHECKPOINT_SIGNED,
    data: { id, position: `p-${id}`, streams, root: sha(id), createdAt: '2026-11-28T00:00:00.000Z', kid: 'k1', signature: 's' },
  });
  const shapes = [
    chunk('A', heads('account', 5, 0)),
    chunk('A', heads('transaction-a', 5, 0)),
    signed('A', 10),
    chunk('B', heads('account', 2, 9)),
    chunk('C', heads('account', 2, 1)),
    chunk('C', heads('transaction-c', 4, 0)),
    signed('C', 14),
  ];
  return shapes.map((e, revision) => ({
    id: `e${revision}`,
    stream: 'audit-checkpoints',
    revision,
    position: String(revision).padStart(4, '0'),
    type: e.type,
    data: e.data as unknown as RecordedEvent['data'],
    metadata: {},
    recordedAt: '2026-11-28T00:00:00.000Z',
    hash: '',
  }));
}

/**
 * The audit read model (src/projections/audit/fold.ts) writes a checkpoint's heads once when its
 * signing is in the same batch, and stages them when a batch ends between: either way it must hold
 * what the checkpoint stream's own fold (foldCheckpointStream) gives, per checkpoint.
 */
describe('audit projection: the same heads whatever the batches', () => {
  const events = checkpointStream();
  const expected = new Map<number, StoredHead[]>();
  let revision = 0;
  foldCheckpointStream(events, (checkpoint: Checkpoint, current) => {
    const at = events.find((e) => e.type === CHECKPOINT_SIGNED && (e.data as unknown as Checkpoint).id === checkpoint.id)?.revision ?? -1;
    expected.set(
      at,
      [...current.values()].map((h): StoredHead => [h.stream, h.revision, h.hash]).sort((a, b) => (a[0] < b[0] ? -1 : 1)),
    );
    revision = at;
    return true;
  });

  const splits: Array<[string, number[]]> = [
    ['one batch', [events.length]],
    ['one event per batch', events.map(() => 1)],
    ["a batch ending between C's chunks", [5, 2]],
    ["a batch ending between C's heads and its signing", [6, 1]],
  ];

  for (const [name, sizes] of splits) {
    it(`gives each checkpoint the heads its stream records: ${name}`, async () => {
      const sql = new PgSql(await (await sharedCluster()).freshDatabase(), { max: 1 });
      try {
        const t = liveTables(auditProjection);
        for (const statement of splitStatements(auditProjection.createTables(t))) await sql.query(statement);
        let from = 0;
        for (const size of sizes) {
          const batch = events.slice(from, from + size);
          await sql.transaction((tx) => auditProjection.apply(tx, batch, t));
          from += size;
        }
        const queries = new AuditQueries(sql);
        for (const [at, want] of expected) {
          const got: StoredHead[] = [];
          for await (const page of queries.headsAt(at)) got.push(...page.map((h): StoredHead => [h.stream, h.revision, h.hash]));
          expect(got, `checkpoint at revision ${at}`).to.deep.equal(want);
        }
        expect((await queries.latest())?.revision).to.equal(revision);
        const current: string[] = [];
        for await (const page of queries.currentLeaves()) current.push(...page.map((l) => l.stream));
        expect(current).to.deep.equal(expected.get(revision)?.map((h) => h[0]));
        expect(await sql.query('SELECT 1 FROM rm_audit_pending_heads')).to.have.length(0);
      } finally {
        await sql.close();
      }
    });
  }
});
