import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import type { Config } from '../config';
import type { RecordedEvent } from '../eventstore/port';
import { eventsRecordedBetween, folderFor, logPages } from '../app/audit';
import { parseInstant } from './args';
import { CliError, type CliIo, withTally } from './context';
import type { Tally } from '../compose/tally';
import { personalData } from '../compose/personal-data';
import { PersonalData } from '../platform/sealing/personal-data';
import { sealedStore } from '../platform/sealing/sealed-store';

/**
 * The log as `events read` and `events tail` print it: personal fields open, an erased one as
 * `[erased]` (decisions, "Personal data"). `events export` prints the log as stored instead: it is
 * the auditor's export, whose hashes verify offline.
 */
const printedLog = (tally: Tally) => sealedStore(tally.store, new PersonalData(tally.sealer.keys, personalData), '[erased]');

export interface StreamAtInstant {
  stream: string;
  at: string | null;
  events: RecordedEvent[];
  /** Undefined when no aggregate is registered for the stream's prefix. */
  state: unknown;
  aggregate?: string;
}

/** `tally events read <stream> [--at <iso>]`: the stream's events and its aggregate's state, as of an instant. */
export async function readEvents(config: Config, stream: string, options: { at?: string; json?: boolean }, io: CliIo): Promise<StreamAtInstant> {
  const at = options.at === undefined ? undefined : parseInstant(options.at, '--at');
  return withTally(config, io, async (tally) => {
    const events = await printedLog(tally).readStream(stream, at ? { untilTime: at } : {});
    // An empty stream now is most likely a typo; empty at an instant is an answer ("not yet").
    if (events.length === 0 && !at) throw new CliError(`Stream ${stream} has no events`);
    const folder = folderFor(stream);
    const result: StreamAtInstant = { stream, at: at?.toISOString() ?? null, events, state: folder?.fold(events), aggregate: folder?.aggregate };
    if (options.json) io.out(JSON.stringify(result));
    else printStream(result, io);
    return result;
  });
}

function printStream(r: StreamAtInstant, io: CliIo): void {
  const count = `${r.events.length} event${r.events.length === 1 ? '' : 's'}`;
  io.out(`Stream ${r.stream}: ${count}${r.at ? ` as of ${r.at}` : ''}`);
  for (const e of r.events) {
    const actor = e.metadata.actor ? `  by ${e.metadata.actor.kind}:${e.metadata.actor.id}` : '';
    io.out(`  #${e.revision}  ${e.recordedAt}  ${e.type}  ${JSON.stringify(e.data)}${actor}`);
  }
  if (!r.aggregate) {
    io.out('No aggregate is registered for this stream name (see src/cli/deciders.ts): events only.');
    return;
  }
  const revision = r.events.length ? `revision ${r.events[r.events.length - 1]?.revision}` : 'no revision (not created yet)';
  io.out(`State of the ${r.aggregate} at ${revision}${r.at ? `, as of ${r.at}` : ''}:`);
  for (const line of JSON.stringify(r.state, null, 2).split('\n')) io.out(`  ${line}`);
}

/**
 * `tally events tail [--from <position>] [--follow]`: the log in order as NDJSON (personal data open), from after
 * `from` (exclusive, like the port). With `follow`, keeps printing live events until `io.signal` aborts.
 */
export async function tailEvents(config: Config, options: { from?: string; follow?: boolean }, io: CliIo): Promise<number> {
  return withTally(config, io, async (tally) => {
    const log = printedLog(tally);
    let printed = 0;
    const print = (events: RecordedEvent[]) => {
      for (const e of events) io.out(JSON.stringify(e));
      printed += events.length;
    };
    if (!options.follow) {
      for await (const page of logPages(log, options.from, io.signal)) print(page);
      return printed;
    }
    // The subscription catches up from `from`, then goes live; it awaits each batch, so output keeps order.
    const subscription = log.subscribe({
      fromPosition: options.from || undefined,
      onEvents: async (events) => print(events),
      onError: (error) => io.err?.(`tail: ${error instanceof Error ? error.message : String(error)} (retrying)\n`),
    });
    await aborted(io.signal);
    await subscription.stop();
    return printed;
  });
}

function aborted(signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * `tally events export --from <iso> --to <iso> [--out file]`: NDJSON of the events recorded in
 * [from, to) (half-open, so consecutive windows never repeat an event), each line as GET
 * /audit/v1/events writes it (an AuditEvent: the event and its previous hash, personal data sealed as
 * stored), so one verifier reads either.
 */
export async function exportEvents(config: Config, options: { from: string; to: string; out?: string }, io: CliIo): Promise<number> {
  const from = parseInstant(options.from, '--from').getTime();
  const to = parseInstant(options.to, '--to').getTime();
  if (from >= to) throw new CliError('--from must be before --to');
  const sink = options.out ? fileSink(options.out) : { write: (lines: string[]) => lines.forEach(io.out), commit() {}, abort() {} };
  let exported = 0;
  try {
    await withTally(config, io, async (tally) => {
      for await (const page of eventsRecordedBetween(tally.store, from, to, io.signal)) {
        sink.write(page.map((e) => JSON.stringify(e)));
        exported += page.length;
      }
    });
    if (io.signal?.aborted) throw new CliError('Export interrupted');
    sink.commit();
  } catch (error) {
    sink.abort();
    throw error;
  }
  if (options.out) io.err?.(`Exported ${exported} events to ${options.out}\n`);
  return exported;
}

/** Written beside its final name and renamed at the end: a failed export leaves no truncated file. */
function fileSink(path: string) {
  const partial = `${path}.partial`;
  const fd = openSync(partial, 'w');
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  return {
    write: (lines: string[]) => writeSync(fd, lines.map((l) => `${l}\n`).join('')),
    commit() {
      close();
      renameSync(partial, path);
    },
    abort() {
      close();
      rmSync(partial, { force: true });
    },
  };
}
