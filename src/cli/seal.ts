import { createHash, randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { logPages } from '../app/audit';
import { openTally } from '../compose/open';
import { personalData } from '../compose/personal-data';
import type { Tally } from '../compose/tally';
import type { Config } from '../config';
import { comparePositions, type EventStore, type NewEvent, type RecordedEvent } from '../eventstore/port';
import { PostgresEventStore } from '../eventstore/postgres';
import { CHECKPOINT_HEADS, CHECKPOINT_SIGNED, CHECKPOINT_STREAM } from '../platform/audit/checkpoint';
import { type CheckpointRow, Checkpoints } from '../platform/consumers/checkpoints';
import { PersonalData } from '../platform/sealing/personal-data';
import { CliError, type CliIo, cliLogger, withTally } from './context';

/** One side of the copy. `streamsDigest`: SHA-256 of every stream's name and last revision, sorted; equal on both sides when every stream was copied whole. */
export interface LogSummary {
  events: number;
  streams: number;
  position: string;
  streamsDigest: string;
}

export interface SealReport {
  from: LogSummary;
  to: LogSummary;
  /** Data keys copied into the target (those it had already are kept). */
  dataKeys: number;
  /** The signed checkpoints of the old log, not copied: they vouch for its hashes and positions, which the new log does not have. */
  checkpointEventsLeft: number;
  /** Consumers of the log (projections, the webhooks' outbox) whose checkpoints were moved to the same place in the new log. */
  consumersMoved: number;
}

/** How long the copy holds every consumer of both logs (renewed by nothing: a copy longer than this lets a server start meanwhile). */
const HOLD_SECONDS = 24 * 3600;

/**
 * `tally events seal --to <DATABASE_URL>`: copies the log, in log order, into the database `--to`
 * names (a copy of this one without its log, docs/personal-data.md), with every personal field
 * sealed; the target's store chains the hashes anew. Each event keeps its stream, revision, id, type,
 * metadata and recorded instant. The consumers' checkpoints there (read models, the webhooks'
 * outbox) are moved to the same place in the new log, so nothing is applied or sent twice. The
 * server must be stopped: the copy holds the consumers of both databases while it runs.
 */
export async function sealLog(config: Config, options: { to: string }, io: CliIo): Promise<SealReport> {
  if (!config.databaseUrl || config.kurrentDbUrl) throw new CliError('tally events seal copies a log kept in Postgres (DATABASE_URL, no KURRENTDB_URL)');
  if (!/^postgres(ql)?:\/\//.test(options.to)) throw new CliError('--to must name a Postgres database (postgres://...)');
  if (options.to === config.databaseUrl) throw new CliError('--to must name another database than DATABASE_URL');
  return withTally(config, io, async (source) => {
    const { tally: target } = await openTally({ ...config, databaseUrl: options.to, projectionsThread: 'main' }, io.log ?? cliLogger());
    try {
      const targetStore = target.store;
      if (!(targetStore instanceof PostgresEventStore)) throw new Error('the target log is not in Postgres');
      if ((await targetStore.headPosition()) !== '') throw new CliError('The log of --to is not empty: seal into a copy of this database without its log');
      const names = consumerNames(source);
      const held = { source: await hold(source, names, 'this database'), target: await hold(target, names, '--to') };
      try {
        if (held.target.length !== held.source.length)
          throw new CliError('--to is not a copy of this database (its consumers of the log differ): copy it again');
        const dataKeys = await source.sealer.keys.copyTo(target.sql);
        const copy = new LogCopy(
          targetStore,
          new PersonalData(target.sealer.keys, personalData),
          held.source.map((r) => r.position),
        );
        for await (const page of logPages(source.store, undefined, io.signal)) await copy.page(page);
        if (io.signal?.aborted) throw new CliError('Interrupted: drop the target database, copy it again and run the seal again');
        await copy.finish();
        const consumersMoved = await moveCheckpoints(target, held.target, copy.mapped);
        await emptyCheckpointReadModels(target);
        const report: SealReport = { from: copy.copied.summary(), to: await summaryOf(targetStore), dataKeys, checkpointEventsLeft: copy.left, consumersMoved };
        io.out(`Sealed: ${describe(report.from)} -> ${describe(report.to)}`);
        io.out(`Data keys copied: ${dataKeys}; checkpoints of the old log left behind: ${copy.left}; consumers moved: ${consumersMoved}`);
        return report;
      } finally {
        await release(source, names);
        await release(target, names);
      }
    } finally {
      await target.close();
    }
  });
}

/** `events seal`, under `tally events`. */
export function addSealCommand(
  events: Command,
  config: () => Config,
  io: CliIo,
  interruptible: <T>(io: CliIo, fn: (io: CliIo) => Promise<T>) => Promise<T>,
): void {
  events
    .command('seal')
    .description('copy the log into --to (a copy of this database without its log) with every personal field sealed and the hash chains recomputed')
    .requiredOption('--to <database url>', 'the Postgres database to copy the log into: a copy of this one whose log is empty')
    .action(async (opts: { to: string }) => {
      await interruptible(io, (io) => sealLog(config(), opts, io));
    });
}

const describe = (s: LogSummary) => `${s.events} events in ${s.streams} streams, last position ${s.position || '(none)'}, streams digest ${s.streamsDigest}`;

const consumerNames = (tally: Tally) => [...tally.engine.projections.map((p) => p.name), ...tally.reactors.reactors.map((r) => r.name)];

const SEAL_NODE = `tally-events-seal-${randomUUID()}`;

/** Takes every consumer's lease: refused while a node runs them (a node stopped uncleanly lets go when its lease lapses). */
async function hold(tally: Tally, names: string[], where: string): Promise<Array<Omit<CheckpointRow, 'owner'>>> {
  const checkpoints = new Checkpoints(tally.sql, SEAL_NODE);
  await checkpoints.prepare(tally.store);
  const existing = await checkpoints.rows(names);
  const held = await checkpoints.hold(names, HOLD_SECONDS);
  if (held.length < existing.length) throw new CliError(`A server runs on ${where} (it holds the log's consumers): stop it first`);
  const failing = held.find((r) => r.failure);
  if (failing) throw new CliError(`The consumer ${failing.name} of ${where} is stopped on an event: fix it or rebuild it first`);
  return held;
}

async function release(tally: Tally, names: string[]): Promise<void> {
  const checkpoints = new Checkpoints(tally.sql, SEAL_NODE);
  for (const name of names) await checkpoints.release(name);
}

/** Moves each consumer's checkpoint from its place in the old log to the same place in the new one. */
async function moveCheckpoints(target: Tally, held: Array<Omit<CheckpointRow, 'owner'>>, mapped: Map<string, string>): Promise<number> {
  const checkpoints = new Checkpoints(target.sql, SEAL_NODE);
  let moved = 0;
  for (const row of held) {
    const to = row.position ? mapped.get(row.position) : '';
    if (to === undefined) throw new CliError(`The checkpoint of ${row.name} in --to is not a position of this log: --to is not a copy of this database`);
    if (!(await target.sql.transaction((tx) => checkpoints.move(tx, [row.name], [row.position], to))))
      throw new Error(`the checkpoint of ${row.name} moved meanwhile`);
    moved++;
  }
  return moved;
}

/**
 * The read models of the old log's signed checkpoints (the audit's), copied with the database, hold
 * what the new log does not: emptied, as a fold of the new log, which has no checkpoint yet, gives.
 */
async function emptyCheckpointReadModels(target: Tally): Promise<void> {
  const ofCheckpoints = target.engine.projections.filter((p) => p.eventTypes.some((type) => type === CHECKPOINT_SIGNED || type === CHECKPOINT_HEADS));
  for (const p of ofCheckpoints) for (const table of p.tables) await target.sql.query(`DELETE FROM ${table}`);
}

/** The streams' heads of a log, as events go by. */
class Heads {
  private readonly revisions = new Map<string, number>();
  private events = 0;
  private position = '';

  add(e: Pick<RecordedEvent, 'stream' | 'revision' | 'position'>): void {
    this.revisions.set(e.stream, e.revision);
    this.events++;
    this.position = e.position;
  }

  summary(): LogSummary {
    const lines = [...this.revisions].map(([stream, revision]) => `${stream}\t${revision}\n`).sort();
    const streamsDigest = createHash('sha256').update(lines.join('')).digest('hex');
    return { events: this.events, streams: this.revisions.size, position: this.position, streamsDigest };
  }
}

async function summaryOf(store: EventStore): Promise<LogSummary> {
  const heads = new Heads();
  let position: string | undefined;
  for (;;) {
    const page = await store.readAll({ fromPosition: position, maxCount: 1_000, headsOnly: true });
    if (page.length === 0) return heads.summary();
    for (const e of page) heads.add(e);
    position = page[page.length - 1]?.position;
  }
}

/**
 * The copy itself: runs of one stream's consecutive events, each appended at its own revision with
 * its personal fields sealed, and each position a consumer stands at in the old log mapped to the
 * position of the last event copied up to it.
 */
class LogCopy {
  readonly mapped = new Map<string, string>();
  readonly copied = new Heads();
  left = 0;
  private run: RecordedEvent[] = [];
  private recorded: RecordedEvent[] = [];
  private lastPosition = '';
  /** The consumers' positions in the old log not passed yet, first first. */
  private readonly pending: string[];

  constructor(
    private readonly target: PostgresEventStore,
    private readonly personal: PersonalData,
    positions: string[],
  ) {
    this.pending = [...new Set(positions.filter(Boolean))].sort(comparePositions);
  }

  async page(events: RecordedEvent[]): Promise<void> {
    for (const e of events) {
      while (this.pending[0] !== undefined && comparePositions(this.pending[0], e.position) < 0) await this.mapNext();
      if (e.stream === CHECKPOINT_STREAM) this.left++;
      else {
        if (this.run[0] && this.run[0].stream !== e.stream) await this.flush();
        this.run.push(e);
        this.copied.add(e);
      }
      if (this.pending[0] === e.position) await this.mapNext();
    }
    await this.flush();
    await this.target.restoreRecordedTimes(this.recorded.splice(0));
  }

  async finish(): Promise<void> {
    await this.flush();
    while (this.pending.length > 0) await this.mapNext();
  }

  private async mapNext(): Promise<void> {
    await this.flush();
    this.mapped.set(this.pending.shift() as string, this.lastPosition);
  }

  private async flush(): Promise<void> {
    const run = this.run;
    const first = run[0];
    if (!first) return;
    this.run = [];
    const events: NewEvent[] = run.map((e) => ({ id: e.id, type: e.type, data: e.data, metadata: e.metadata }));
    const sealed = this.personal.concerns(events) ? await this.personal.seal(first.stream, events, true) : events;
    const result = await this.target.append(first.stream, sealed, first.revision === 0 ? 'no_stream' : first.revision - 1);
    const last = run[run.length - 1] as RecordedEvent;
    if (result.nextRevision !== last.revision) throw new Error(`${first.stream} was copied up to revision ${result.nextRevision}, not ${last.revision}`);
    this.lastPosition = result.position;
    this.recorded.push(...run);
  }
}
