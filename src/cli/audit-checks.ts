import type { AuditCheck, AuditFinding } from './audit-types';
export type { AuditCheck, AuditCheckResult, AuditFinding } from './audit-types';
import { accountDecider } from '../domain/ledger/account';
import { cardDecider } from '../domain/cards/card';
import type { Decider, DomainEvent } from '../platform/decider';
import { canonicalJson, verifyChain } from '../eventstore/hash';
import type { Json, JsonObject } from '../eventstore/port';
import { cardHoldsCheck } from './audit-cards';
import { ledgerCheck } from './audit-ledger';
import { foldEvents } from '../app/audit';
import { logPages } from '../app/audit';
import { SnapshotStore } from '../platform/commands/snapshots';

/** One difference an audit check found. */
/** Streams verified at once: bounds memory to a few streams' events while overlapping round trips. */
const STREAMS_IN_FLIGHT = 8;

/**
 * Every stream's hash chain. Two passes: the log (readAll pages) names the streams, then each
 * stream is read in revision order and verified whole. Global order is not revision order inside a
 * stream (a multi-stream append may take its transaction id before a single append that commits
 * first), so chains are not verified straight off the global scan. Memory: the stream names plus
 * the streams in flight. Not detectable from the events alone: a stream's last events removed, or a
 * whole stream removed (the adapter's own stream table would tell; a later check can compare it).
 */
export const hashChainCheck: AuditCheck = {
  name: 'hash chains',
  async run(tally) {
    const streams = new Set<string>();
    for await (const page of logPages(tally.store)) for (const e of page) streams.add(e.stream);
    const findings: AuditFinding[] = [];
    let events = 0;
    const names = [...streams];
    for (let i = 0; i < names.length; i += STREAMS_IN_FLIGHT) {
      const batch = await Promise.all(names.slice(i, i + STREAMS_IN_FLIGHT).map((s) => tally.store.readStream(s)));
      for (const stream of batch) {
        events += stream.length;
        for (const b of verifyChain(stream)) {
          findings.push({
            subject: `stream ${b.stream} revision ${b.revision} event ${b.eventId}`,
            reason: b.reason,
            details: { stream: b.stream, revision: b.revision, eventId: b.eventId },
          });
        }
      }
    }
    return { checked: `${names.length} streams, ${events} events`, findings };
  },
};

/** Every read model equals the fold of the log up to its checkpoint (the engine folds into scratch tables and diffs). */
export const readModelCheck: AuditCheck = {
  name: 'read models',
  async run(tally) {
    const findings: AuditFinding[] = [];
    let tables = 0;
    for (const p of tally.engine.projections) {
      tables += p.tables.length;
      for (const d of await tally.engine.verify(p.name)) {
        findings.push({
          subject: `table ${d.table} (projection ${p.name})`,
          // The engine counts both sides of the difference: one edited row counts twice.
          reason: `differs from the fold of the log (${d.differingRows} rows in the difference, counting both sides)`,
          details: { projection: p.name, table: d.table, differingRows: d.differingRows },
        });
      }
    }
    return { checked: `${tally.engine.projections.length} projections, ${tables} tables`, findings };
  },
};

/**
 * State snapshots feed decisions (a load on a cache miss starts from one), so each must equal the
 * fold of its stream up to its revision. Snapshots of a kind no decider writes any more are ignored
 * by the service and only counted here.
 */
export const snapshotCheck: AuditCheck = {
  name: 'state snapshots',
  async run(tally) {
    // Per snapshot kind: the fold of events into the snapshot's JSON, by the decider that writes it.
    const folds = new Map<string, (events: DomainEvent[]) => JsonObject>();
    const add = <State, Event extends DomainEvent>(decider: Decider<State, unknown, Event>) => {
      const codec = decider.snapshot;
      if (codec) folds.set(codec.kind, (events) => codec.encode(foldEvents(decider, events)));
    };
    add(accountDecider);
    add(cardDecider);
    const rows = await new SnapshotStore(tally.sql).all();
    const findings: AuditFinding[] = [];
    let ignored = 0;
    for (const row of rows) {
      const fold = folds.get(row.kind);
      if (!fold) {
        ignored++;
        continue;
      }
      const revision = Number(row.revision);
      const events = await tally.store.readStream(row.stream_id, { toRevision: revision });
      const folded = canonicalJson(fold(events.map((e) => ({ type: e.type, data: e.data }))));
      if (events.length !== revision + 1 || folded !== canonicalJson(row.state)) {
        findings.push({
          subject: `snapshot of ${row.stream_id} at revision ${revision}`,
          reason: events.length !== revision + 1 ? `the stream has ${events.length} events up to that revision` : 'differs from the fold of its stream',
          details: { snapshot: row.state, fold: JSON.parse(folded) as Json },
        });
      }
    }
    return { checked: `${rows.length - ignored} snapshots${ignored ? ` (${ignored} of an old kind, ignored)` : ''}`, findings };
  },
};

export const auditChecks: AuditCheck[] = [hashChainCheck, readModelCheck, ledgerCheck, cardHoldsCheck, snapshotCheck];
