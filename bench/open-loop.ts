import { PerformanceObserver } from 'node:perf_hooks';
import { fmtInt, fmtMs } from './support';

/**
 * The open loop of the load generators (the ledger's and the cards'): requests offered at fixed
 * times whatever the answers, as users' actions arrive, each timed from when it was due. A closed
 * loop's latency is bound to its callers over its rate (Little's law) and it never offers more than
 * it is served; the open loop shows what a request waits at a given arrival rate, and a request the
 * client could not send on time counts its wait (coordinated omission avoided).
 */

/** The open loop's timeline: the worst latency of the requests due in each window of this length. */
export const TIMELINE_WINDOW_MS = 5_000;

/**
 * Plain JavaScript for the load client's worker thread (it needs `Connection` and `performance`
 * from the source that includes it). Request k is due at start + k / rate; it is written on an idle
 * keep-alive connection (a new one when none is idle, up to maxConnections, else it queues for the
 * next free one), by `send(k, connection)`, a promise of the answer; `done(k, ms, answer)` records
 * it, `ms` from its due time. `done` null: a warm-up, nothing recorded.
 */
export const OPEN_LOOP_SOURCE = `
function openLoop(idle, msg, seconds, send, done) {
  const { rate, maxConnections } = msg;
  const interval = 1000 / rate;
  const total = Math.max(1, Math.round(seconds * rate));
  const start = performance.now();
  const stats = { lags: [], late: 0, waited: 0, connections: idle.length, opened: 0, last: start, startedAt: Date.now(), worst: [] };
  const queue = [];
  let sent = 0;
  let finished = 0;
  let open = idle.length;
  return new Promise((resolve) => {
    const fire = (k, due, connection) => {
      const lag = performance.now() - due;
      if (done) {
        stats.lags.push(lag);
        if (lag > msg.lateMs) stats.late++;
      }
      send(k, connection).then((answer) => {
        const now = performance.now();
        if (done) {
          done(k, now - due, answer);
          const w = Math.floor((due - start) / ${TIMELINE_WINDOW_MS});
          if (!(stats.worst[w] >= now - due)) stats.worst[w] = now - due;
        }
        stats.last = now;
        const next = queue.shift();
        if (next) fire(next[0], next[1], connection);
        else idle.push(connection);
        if (++finished === total) resolve({ seconds: (stats.last - start) / 1000, ...stats, connections: open });
      });
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        const k = sent++;
        const due = start + k * interval;
        let connection = idle.pop();
        if (!connection && open < maxConnections) {
          connection = new Connection();
          open++;
          stats.opened++;
        }
        if (connection) fire(k, due, connection);
        else {
          if (done) stats.waited++;
          queue.push([k, due]);
        }
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
}
`;

/** What the client's open loop reports beside its outcomes. */
export interface OpenStats {
  /** From the first request's due time to the last response. */
  seconds: number;
  /** Per request: how long after its due time it was written. */
  lags: number[];
  /** Requests written more than `lateMs` after their due time. */
  late: number;
  /** Requests that waited for a connection (every one busy and maxConnections open). */
  waited: number;
  /** Connections open at the end, and those opened during the measured part. */
  connections: number;
  opened: number;
  /** When the first request was due (ms since the epoch), and the worst latency per TIMELINE_WINDOW_MS of due time from there. */
  startedAt: number;
  worst: (number | null)[];
}

/**
 * The loop's timeline in three lines: the worst latency of each window of due time; the server's
 * main thread's longest stall and collector pause per window; when the audit checkpoints of the node
 * were signed, and when the cluster began its own checkpoints and ended its autovacuums (seconds
 * into the loop), so that a tail shows its moment.
 */
export function describeTimeline(
  stats: OpenStats,
  checkpoints: { createdAt: string; streams: number }[],
  postgres: { at: number; what: string }[],
  main: MainThreadPauses,
): string {
  const windows = stats.worst.length;
  const worst = Array.from({ length: windows }, (_, i) => fmtInt(stats.worst[i] ?? 0)).join(' ');
  const longest = (pauses: Pause[]) => {
    const per = new Array<number>(windows).fill(0);
    for (const p of pauses) {
      const w = Math.floor((p.at - stats.startedAt) / TIMELINE_WINDOW_MS);
      if (w >= 0 && w < windows) per[w] = Math.max(per[w] as number, p.ms);
    }
    return per.map((ms) => fmtInt(ms)).join(' ');
  };
  const within = <T extends { at: number }>(all: T[]) =>
    all
      .map((c) => ({ ...c, at: (c.at - stats.startedAt) / 1_000 }))
      .filter((c) => c.at >= 0 && c.at <= stats.seconds)
      .sort((a, b) => a.at - b.at);
  const audit = within(checkpoints.map((c) => ({ at: Date.parse(c.createdAt), streams: c.streams }))).map(
    (c) => `${c.at.toFixed(1)} s (${fmtInt(c.streams)} streams)`,
  );
  const cluster = within(postgres).map((c) => `${c.at.toFixed(1)} s ${c.what}`);
  return [
    `worst per ${TIMELINE_WINDOW_MS / 1_000} s of due time, ms: ${worst}`,
    `the server's main thread, longest stall per ${TIMELINE_WINDOW_MS / 1_000} s, ms: ${longest(main.stalls)}; its longest collector pause: ${longest(main.gcs)}`,
    `audit checkpoints signed at: ${audit.length ? audit.join(', ') : 'none'}; postgres on its own: ${cluster.length ? cluster.join(', ') : 'nothing'}`,
  ].join('\n      ');
}

/** A pause of the main thread: when it ended (ms since the epoch) and how long it was. */
export interface Pause {
  at: number;
  ms: number;
}

/** The server's main thread's pauses while a loop ran: a 10-ms timer's lateness, and the collector's pauses. */
export interface MainThreadPauses {
  stalls: Pause[];
  gcs: Pause[];
}

/**
 * Watches this process's main thread (the server's, in the benches that run it in-process) until the
 * returned function is called: a 10-ms timer's lateness past 5 ms, and every pause of its garbage
 * collector.
 */
export function watchMainThread(): () => MainThreadPauses {
  const pauses: MainThreadPauses = { stalls: [], gcs: [] };
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last - 10 > 5) pauses.stalls.push({ at: Date.now(), ms: now - last - 10 });
    last = now;
  }, 10);
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.gcs.push({ at: performance.timeOrigin + e.startTime + e.duration, ms: e.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => {
    clearInterval(timer);
    observer.disconnect();
    return pauses;
  };
}

/** Requests written later than this after their due time count as not sent on time (timers fire on whole milliseconds). */
export const LATE_MS = 2;

/** An open loop's offered rate: requests/s in total, or a fraction of the closed loop's rate. */
export type OpenRate = { perSecond: number } | { fraction: number };

/** BENCH_OPEN_RATES: comma-separated, `25%` a fraction of the closed loop's requests/s, `600` requests/s; empty or 0 skips the open loops. */
export function openRates(raw: string | undefined, fallback: number[]): OpenRate[] {
  if (raw === undefined) return fallback.map((fraction) => ({ fraction }));
  if (raw.trim() === '' || raw.trim() === '0') return [];
  return raw.split(',').map((part) => {
    const text = part.trim();
    const value = Number(text.replace(/%$/, '').replace(/_/g, ''));
    if (!Number.isFinite(value) || value <= 0) throw new Error(`BENCH_OPEN_RATES: ${JSON.stringify(text)} is not a positive rate (e.g. 25% or 600)`);
    return text.endsWith('%') ? { fraction: value / 100 } : { perSecond: value };
  });
}

export const offeredOf = (rate: OpenRate, closedRate: number): number => ('perSecond' in rate ? rate.perSecond : rate.fraction * closedRate);

/** CPU per request in microseconds: the server's threads of this process (not the load client's) and postgres. */
export interface CpuPerRequest {
  nodeUs: number;
  postgresUs: number;
}

/** One open loop as the targets judge it: offered and achieved rate, the p99 of the request the targets name, CPU per request. */
export interface OpenFigures {
  offered: number;
  fraction?: number;
  achieved: number;
  p99: number;
  cpu: CpuPerRequest;
}

/**
 * The targets of open-loop capacity (every bench with an open loop prints them): at 90% of the closed
 * loop's rate, served at the offered rate (within 2%) with p99 under 50 ms; at 25%, CPU per request
 * at most 1.3x the closed loop's, for the server's threads of this process and for postgres each. Rows of [figure, measured,
 * target, met]; a rate not run has no row.
 */
export function openTargetRows(what: string, closed: { cpu: CpuPerRequest }, open: OpenFigures[]): string[][] {
  const rows: string[][] = [];
  const at = (fraction: number) => open.find((o) => o.fraction !== undefined && Math.abs(o.fraction - fraction) < 1e-9);
  const high = at(0.9);
  if (high) {
    const served = high.achieved / high.offered;
    rows.push(
      [`${what}: served / offered, open loop at 90%`, `${(100 * served).toFixed(1)}%`, '>= 98%', served >= 0.98 ? 'yes' : 'NO'],
      [`${what}: p99, open loop at 90%`, `${fmtMs(high.p99)} ms`, '< 50 ms', high.p99 < 50 ? 'yes' : 'NO'],
    );
  }
  const low = at(0.25);
  if (low) {
    for (const [name, key] of [
      ['server node', 'nodeUs'],
      ['postgres', 'postgresUs'],
    ] as const) {
      const ratio = low.cpu[key] / closed.cpu[key];
      rows.push([
        `${what}: ${name} CPU per request at 25% / closed loop`,
        `${fmtInt(low.cpu[key])} / ${fmtInt(closed.cpu[key])} us = ${ratio.toFixed(2)}x`,
        '<= 1.3x',
        ratio <= 1.3 ? 'yes' : 'NO',
      ]);
    }
  }
  return rows;
}
