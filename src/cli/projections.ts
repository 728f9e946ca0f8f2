import type { Config } from '../config';
import type { ProjectionStatus } from '../platform/consumers/projections';
import { CliError, type CliIo, withTally } from './context';
import { progressBar } from './progress';

const COUNT_PAGE = 5_000;

/** `tally projections list`: each projection's checkpoint and how many of its events lie beyond it. */
export async function listProjections(config: Config, io: CliIo): Promise<ProjectionStatus[]> {
  return withTally(config, io, async (tally) => {
    const status = await tally.consumers.status();
    const rows = [
      ['NAME', 'POSITION', 'LAG', 'STATE'],
      ...status.map((s) => [s.name, s.position || '(start)', String(s.lag), s.failure ? `STOPPED since ${s.failure.since}` : 'live']),
    ];
    const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)));
    for (const r of rows) io.out(`${r[0]?.padEnd(widths[0] ?? 0)}  ${r[1]?.padEnd(widths[1] ?? 0)}  ${r[2]?.padEnd(widths[2] ?? 0)}  ${r[3]}`);
    io.out(`Head of the log: ${status[0]?.headPosition || '(empty)'}`);
    for (const s of status) {
      if (!s.failure) continue;
      const { event, error, attempts, nextRetryAt } = s.failure;
      io.out(`${s.name} cannot apply event ${event.id} (${event.type} in ${event.stream}, position ${event.position}): ${error}`);
      const projection = tally.engine.projections.some((p) => p.name === s.name);
      io.out(
        `  ${attempts} attempt(s); next at ${nextRetryAt}. Fix the cause${projection ? `, or rebuild: tally projections rebuild ${s.name}` : ' (it retries by itself)'}`,
      );
    }
    return status;
  });
}

/**
 * `tally projections rebuild <name>`: replays the log into new tables and swaps them in (the engine
 * does it; reads never see a half-built model), with a progress bar on stderr.
 */
export async function rebuildProjection(config: Config, name: string, io: CliIo): Promise<{ events: number; position: string }> {
  return withTally(config, io, async (tally) => {
    const known = tally.engine.projections.map((p) => p.name);
    if (!known.includes(name)) throw new CliError(`Unknown projection ${name} (known: ${known.join(', ')})`);
    const err = io.err ?? (() => {});
    // The port has no count: the total is one pass over the projection's event types, read before
    // the rebuild starts (events appended meanwhile make it an estimate, so the bar clamps).
    let total = 0;
    let from: string | undefined;
    while (true) {
      const page = await tally.store.readAll({ fromPosition: from, filter: { eventTypes: tally.engine.get(name).eventTypes }, maxCount: COUNT_PAGE });
      if (page.length === 0) break;
      total += page.length;
      from = page[page.length - 1]?.position;
    }
    err(`Rebuilding ${name} from ${total.toLocaleString('en-US')} events\n`);
    const bar = progressBar(err, { total, unit: 'events', tty: io.errIsTTY ?? false });
    const result = await tally.engine.rebuild(name, (applied) => bar.update(applied));
    bar.finish(result.events);
    io.out(`Rebuilt ${name}: ${result.events} events applied, checkpoint at ${result.position || '(start)'}`);
    return result;
  });
}
