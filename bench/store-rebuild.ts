import { performance } from 'node:perf_hooks';
import { PostgresEventStore } from '../src/eventstore/postgres';
import type { PgSql } from '../src/eventstore/sql';
import { allProjections } from '../src/projections';
import { ProjectionEngine } from '../src/platform/consumers/projections';
import { CallTimings, statementStats, cpuSnapshot, describeCpu, fmtInt, fmtMs, percentile, timedStore } from './support';

const LOAD_CHUNK = 100_000;

/** `lo..hi` (inclusive) in chunks of LOAD_CHUNK, each run as its own statement and transaction. */
async function inChunks(lo: number, hi: number, fn: (from: number, to: number) => Promise<void>): Promise<void> {
  for (let from = lo; from <= hi; from += LOAD_CHUNK) await fn(from, Math.min(hi, from + LOAD_CHUNK - 1));
}

const REGISTERED = `
INSERT INTO es_events (stream_id, stream_revision, event_id, type, data, metadata, recorded_at, hash)
SELECT 'user-' || u.id, 0, md5('registered-' || i)::uuid, 'UserRegistered',
       jsonb_build_object('userId', u.id, 'partnerId', md5('partner-' || i % 100)::uuid, 'email', 'user' || i || '@bench.example',
                          'countryCode', 'GB', 'phoneNumber', NULL, 'language', 'en'),
       jsonb_build_object('correlationId', md5('correlation-' || i)::uuid, 'actor', jsonb_build_object('kind', 'system', 'id', 'bench')),
       timestamptz '2024-01-01 00:00:00Z' + i * interval '1 millisecond',
       md5('a' || i) || md5('b' || i)
  FROM generate_series($1::bigint, $2::bigint) AS i, LATERAL (SELECT md5('user-' || i)::uuid::text AS id) AS u`;

const STATUS_CHANGED = `
INSERT INTO es_events (stream_id, stream_revision, event_id, type, data, metadata, recorded_at, hash)
SELECT 'user-' || u.id, 1, md5('status-' || i)::uuid, 'UserStatusChanged',
       jsonb_build_object('userId', u.id, 'from', 'pending', 'to', CASE WHEN i % 10 = 0 THEN 'suspended' ELSE 'active' END,
                          'reason', 'kyc_approved'),
       jsonb_build_object('correlationId', md5('correlation-s-' || i)::uuid, 'actor', jsonb_build_object('kind', 'system', 'id', 'bench')),
       timestamptz '2024-06-01 00:00:00Z' + i * interval '1 millisecond',
       md5('c' || i) || md5('d' || i)
  FROM generate_series($1::bigint, $2::bigint) AS i, LATERAL (SELECT md5('user-' || i)::uuid::text AS id) AS u`;

const STREAMS = `
INSERT INTO es_streams (stream_id, revision, last_hash)
SELECT 'user-' || md5('user-' || i)::uuid,
       CASE WHEN i <= $3 THEN 1 ELSE 0 END,
       CASE WHEN i <= $3 THEN md5('c' || i) || md5('d' || i) ELSE md5('a' || i) || md5('b' || i) END
  FROM generate_series($1::bigint, $2::bigint) AS i`;

/**
 * Writes the users projection's events straight into es_events/es_streams (correct streams,
 * revisions, ids and data; placeholder hashes, which a rebuild does not check): one UserRegistered
 * per user, then one UserStatusChanged for the first `events - users` users.
 */
export async function loadUserEvents(sql: PgSql, events: number): Promise<{ users: number }> {
  const users = Math.ceil(events / 2);
  const changes = events - users;
  await inChunks(1, users, (from, to) => sql.query(REGISTERED, [from, to]).then(() => {}));
  await inChunks(1, changes, (from, to) => sql.query(STATUS_CHANGED, [from, to]).then(() => {}));
  await inChunks(1, users, (from, to) => sql.query(STREAMS, [from, to, changes]).then(() => {}));
  await sql.exec('VACUUM (ANALYZE) es_events');
  await sql.exec('VACUUM (ANALYZE) es_streams');
  return { users };
}

export async function runRebuildBench(sql: PgSql, events: number, postmaster: string | undefined): Promise<{ rate: number; events: number }> {
  const store = await PostgresEventStore.create(sql);
  const loadStart = performance.now();
  const { users } = await loadUserEvents(sql, events);
  const loadSeconds = (performance.now() - loadStart) / 1_000;
  console.log(`  loaded ${fmtInt(events)} events (${fmtInt(users)} users) with INSERT ... generate_series + VACUUM ANALYZE in ${loadSeconds.toFixed(1)} s`);

  const timings = new CallTimings();
  const engine = new ProjectionEngine(timedStore(store, timings), sql, allProjections);
  await engine.prepare();
  const batchMs: number[] = [];
  await statementStats(sql, true);
  const cpuBefore = cpuSnapshot(postmaster);
  const start = performance.now();
  let last = start;
  const result = await engine.rebuild('users', () => {
    const now = performance.now();
    batchMs.push(now - last);
    last = now;
  });
  const seconds = (performance.now() - start) / 1_000;
  const cpu = describeCpu(cpuBefore, cpuSnapshot(postmaster), result.events);
  const rate = result.events / seconds;

  const sorted = Float64Array.from(batchMs).sort();
  const read = timings.totals.get('readAll') ?? { calls: 0, ms: 0 };
  const [rows] = await sql.query<{ n: string }>('SELECT count(*)::text AS n FROM rm_users');
  console.log(
    `  rebuild('users'): ${fmtInt(result.events)} events in ${seconds.toFixed(1)} s = ${fmtInt(rate)} events/s; ` +
      `per batch p50 ${fmtMs(percentile(sorted, 0.5))} ms, p99 ${fmtMs(percentile(sorted, 0.99))} ms`,
  );
  console.log(
    `      readAll ${fmtInt(read.calls)} calls, ${fmtMs(read.ms / Math.max(1, read.calls))} ms each = ${Math.round((100 * read.ms) / (seconds * 1_000))}% of the time; ` +
      `the rest is the set-based apply (one row read and one upsert per table per batch), the index build and the swap. rm_users rows: ${fmtInt(Number(rows?.n ?? 0))}`,
  );
  console.log(`      ${cpu.replace('CPU/op', 'CPU/event')}`);
  for (const line of await statementStats(sql, false)) console.log(`      ${line}`);
  return { rate, events: result.events };
}
