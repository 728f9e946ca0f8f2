import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import supertest from 'supertest';
import { PgSql } from '../src/eventstore/sql';
import { startServer } from '../src/server';
import type { Tally } from '../src/compose/tally';
import { ADMIN_TOKEN } from '../test/support/app';
import { startTestCluster } from '../test/support/postgres';
import { benchConfig } from './ledger';
import { loadUserEvents } from './store-rebuild';
import { cpuSnapshot, describeCpu, envNumber, fmtInt, localPostmaster } from './support';

/**
 * `npm run bench -- audit-export`: an auditor's `GET /audit/v1/events` over the whole log, streamed
 * as NDJSON, on a throwaway durable PostgreSQL (or DATABASE_URL) holding BENCH_EXPORT_EVENTS events
 * (default 1,000,000: the store bench's synthetic users, half registered, half with a status change,
 * written straight into the event table). Measures, prints, asserts nothing: events/s and MB/s read
 * by the client, and the process's memory (server and client in one process) sampled while it streams.
 * The projections and reactors are stopped first, so the export has the server to itself. With
 * NODE_OPTIONS=--expose-gc it also prints the heap after a full collection once a second: what the
 * export keeps alive, apart from garbage not yet collected.
 */
export async function runAuditExportBench(): Promise<void> {
  const events = envNumber('BENCH_EXPORT_EVENTS', 1_000_000, { integer: true });
  const cluster = await startTestCluster({ durable: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-bench-export-'));
  const stop = () => {
    cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  const running = await startServer(benchConfig(dataDir, await cluster.freshDatabase()), pino({ level: 'warn' }));
  try {
    const { tally } = running;
    await Promise.all([tally.engine.stop(), tally.reactors.stop()]);
    if (!(tally.sql instanceof PgSql)) throw new Error('the export bench needs PostgreSQL');
    const loadStart = performance.now();
    await loadUserEvents(tally.sql, events);
    console.log(`Tally audit export bench: ${fmtInt(events)} events loaded in ${((performance.now() - loadStart) / 1_000).toFixed(1)} s`);
    const http = supertest.agent(running.url);
    const made = await http
      .post('/admin/v1/auditors')
      .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
      .send({ name: 'Bench auditor', expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    if (made.status !== 201) throw new Error(`auditor not made: ${made.status} ${JSON.stringify(made.body)}`);
    const postmaster = await localPostmaster(tally.sql);
    (globalThis as { gc?: () => void }).gc?.();
    const base = process.memoryUsage();
    const cpu0 = cpuSnapshot(postmaster);
    const start = performance.now();
    const streamed = await streamAll(`${running.url}/audit/v1/events?from=2000-01-01&to=2100-01-01`, made.body.data.token);
    const seconds = (performance.now() - start) / 1_000;
    console.log(
      `  GET /audit/v1/events, the whole log: ${fmtInt(streamed.lines)} lines, ${(streamed.bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(1)} s = ${fmtInt(streamed.lines / seconds)} events/s, ${(streamed.bytes / 1e6 / seconds).toFixed(1)} MB/s`,
    );
    console.log(`      ${describeCpu(cpu0, cpuSnapshot(postmaster), streamed.lines).replace('CPU/op', 'CPU/event')}`);
    const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;
    console.log(
      `      memory while streaming (server and client, one process; sampled every 100 ms): RSS ${mb(base.rss)} before, peak ${mb(streamed.peakRss)}; heap used ${mb(base.heapUsed)} before, peak ${mb(streamed.peakHeap)}`,
    );
    await readWholeLog(tally, postmaster);
    const live = streamed.liveHeaps;
    if (live.length > 0)
      console.log(
        `      heap after a full collection, once a second while streaming: ${live.map(mb).join(', ')} (first ${mb(live[0] ?? 0)}, last ${mb(live[live.length - 1] ?? 0)}, largest ${mb(Math.max(...live))})`,
      );
    else console.log('      (run with NODE_OPTIONS=--expose-gc for the heap after a full collection while streaming: what the export keeps alive)');
  } finally {
    await running.close().catch(() => {});
    process.off('exit', stop);
    stop();
  }
}

/**
 * The whole log read page by page as the audit checkpointer follows it, whole events against heads
 * only (hash, no data or metadata), in turns: events/s and CPU per event of each.
 */
async function readWholeLog(tally: Tally, postmaster: string | undefined): Promise<void> {
  for (const round of [1, 2]) {
    for (const [name, headsOnly] of [
      ['whole events', false],
      ['heads only', true],
    ] as const) {
      const cpu0 = cpuSnapshot(postmaster);
      const start = performance.now();
      let events = 0;
      let position: string | undefined;
      for (;;) {
        const page = await tally.store.readAll({ fromPosition: position, maxCount: 1_000, headsOnly });
        events += page.length;
        if (page.length < 1_000) break;
        position = page[page.length - 1]?.position;
      }
      const seconds = (performance.now() - start) / 1_000;
      console.log(
        `  the whole log read as the checkpointer follows it, ${name} (round ${round}): ${fmtInt(events / seconds)} events/s; ${describeCpu(cpu0, cpuSnapshot(postmaster), events).replace('CPU/op', 'CPU/event')}`,
      );
    }
  }
}

/** Reads the NDJSON answer to its end, counting lines and bytes, sampling the process's memory. */
function streamAll(url: string, token: string): Promise<{ lines: number; bytes: number; peakRss: number; peakHeap: number; liveHeaps: number[] }> {
  return new Promise((resolve, reject) => {
    const out = { lines: 0, bytes: 0, peakRss: 0, peakHeap: 0, liveHeaps: [] as number[] };
    let samples = 0;
    const sample = () => {
      // With --expose-gc, every 10th sample is taken after a full collection: what the export keeps alive.
      const gc = (globalThis as { gc?: () => void }).gc;
      if (gc && ++samples % 10 === 0) {
        gc();
        out.liveHeaps.push(process.memoryUsage().heapUsed);
      }
      const m = process.memoryUsage();
      out.peakRss = Math.max(out.peakRss, m.rss);
      out.peakHeap = Math.max(out.peakHeap, m.heapUsed);
    };
    const timer = setInterval(sample, 100);
    const req = request(url, { headers: { Authorization: `Bearer ${token}` } }, (res) => {
      if (res.statusCode !== 200) {
        clearInterval(timer);
        reject(new Error(`export answered ${res.statusCode}`));
        res.resume();
        return;
      }
      res.on('data', (chunk: Buffer) => {
        out.bytes += chunk.length;
        for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) out.lines++;
      });
      res.on('end', () => {
        clearInterval(timer);
        sample();
        resolve(out);
      });
      res.on('error', reject);
    });
    req.on('error', (error) => {
      clearInterval(timer);
      reject(error);
    });
    req.end();
  });
}
