import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import pino from 'pino';
import { type SeedTally, seedHistory, settleDown } from './card-seed';
import { profiled } from './support';

/**
 * One build's server for `npm run bench -- compare` (a child process): the build in TALLY_BUILD_DIR
 * (its own src/), on DATABASE_URL, configured as the ledger bench configures its in-process server.
 * Prints `{"url": ...}` on its first line once listening; closes on SIGTERM. It imports nothing of this
 * checkout's src/ (its helpers come from ./support, whose imports of src/ are types only): a server of
 * another build must run that build's code alone. BENCH_SERVER_PROCESSES=N (N > 1): N such servers,
 * forked through node's cluster on one port and one database, started one after the other (nodes
 * sharing one PostgreSQL, as docs/scaling.md describes); the first line then names their pids too,
 * so that the parent counts their CPU.
 */
async function main(): Promise<void> {
  const processes = Number(process.env.BENCH_SERVER_PROCESSES ?? 1);
  if (processes > 1 && cluster.isPrimary) return primary(processes);
  const dir = process.env.TALLY_BUILD_DIR as string;
  const databaseUrl = process.env.DATABASE_URL as string;
  const { loadConfig } = (await import(join(dir, 'src/config.ts'))) as { loadConfig: (env: NodeJS.ProcessEnv) => Record<string, unknown> };
  const { startServer } = (await import(join(dir, 'src/server.ts'))) as {
    startServer: (config: unknown, log: unknown) => Promise<{ url: string; tally: unknown; close(): Promise<void> }>;
  };
  const tuning = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('APPEND_') || k.startsWith('PROJECTIONS_')));
  const running = await startServer(
    {
      ...loadConfig(tuning),
      port: 0,
      // The servers of one build share their data directory: its service keys open each other's sealed data.
      dataDir: process.env.BENCH_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'tally-bench-compare-')),
      databaseUrl,
      adminToken: process.env.ADMIN_TOKEN,
      sandbox: true,
      logLevel: 'warn',
      rateLimit: { partnerRps: 0, userRps: 0, ipRps: 0 },
      kycLimits: { maxTransactionAmount: 1e12, dailyTransactionLimit: 1e12 },
    },
    pino({ level: 'warn' }),
  );
  if (cluster.isWorker) process.send?.({ type: 'listening', url: running.url });
  else process.stdout.write(`${JSON.stringify({ url: running.url, pids: [process.pid] })}\n`);
  process.on('message', (message: DirectLoop | SeedHistory) => {
    // BENCH_COMPARE_MIX=cards: the cards' history, made here with this build's code.
    if ('type' in message) void seed(running.tally as unknown as SeedTally, message).then((done) => process.send?.(done));
    // BENCH_DIRECT: the parent asks for loops of transfers made in this process, without HTTP.
    else void directLoop(running.tally as unknown as DirectTally, message).then((done) => process.send?.(done));
  });
  process.once('SIGTERM', () => {
    running.close().finally(() => process.exit(0));
  });
}

/** BENCH_SERVER_PROCESSES: forks the servers one after the other (each sets up on what the one before made). */
async function primary(processes: number): Promise<void> {
  const pids: number[] = [];
  let url = '';
  const dataDir = mkdtempSync(join(tmpdir(), 'tally-bench-compare-'));
  for (let i = 0; i < processes; i++) {
    const worker = cluster.fork({ BENCH_DATA_DIR: dataDir });
    url = await new Promise<string>((done, fail) => {
      worker.on('message', (m: { type?: string; url?: string }) => m.type === 'listening' && done(m.url as string));
      worker.once('exit', (code) => fail(new Error(`server process ${i + 1} exited (${code}) before listening`)));
    });
    pids.push(worker.process.pid as number);
  }
  process.stdout.write(`${JSON.stringify({ url, pids })}\n`);
  process.once('SIGTERM', () => {
    const workers = Object.values(cluster.workers ?? {});
    let left = workers.length;
    for (const w of workers)
      w?.once('exit', () => {
        if (--left === 0) process.exit(0);
      });
    for (const w of workers) w?.process.kill('SIGTERM');
  });
}

/** The cards' history asked of the build's server (compare's BENCH_COMPARE_MIX=cards): see card-seed.ts. */
export interface SeedHistory {
  type: 'seed';
  partnerId: string;
  cardIds: string[];
  spends: number;
}

/** The history made and settled (the read models and the outbox past it), or why not. */
async function seed(tally: SeedTally, message: SeedHistory): Promise<{ type: 'seeded'; error?: string }> {
  try {
    await seedHistory(
      tally,
      message.partnerId,
      message.cardIds.map((cardId) => ({ cardId })),
      message.spends,
    );
    await settleDown(tally);
    return { type: 'seeded' };
  } catch (error) {
    return { type: 'seeded', error: error instanceof Error ? error.message : String(error) };
  }
}

/** A closed loop of transfers asked of the build's Transfers service directly (compare's BENCH_DIRECT). */
export interface DirectLoop {
  partnerId: string;
  accounts: Array<{ userId: string; accountId: number }>;
  clients: number;
  warmUpSeconds: number;
  seconds: number;
}

interface DirectTally {
  ledger: {
    transfers: {
      transfer(
        user: { userId: string; partnerId: string },
        input: { fromAccountId: number; toAccountId: number; amount: string; description: string },
        ctx: { commandId: string; unkeyed: boolean; metadata: object },
      ): Promise<unknown>;
    };
  };
}

/**
 * `clients` loops, each making one transfer at a time from a random account to another one, for
 * the warm-up and then `seconds`: says `warmed` when the warm-up ends, then what the measured part
 * made (transfers that ended before its end; refusals and failures counted apart).
 */
async function directLoop(tally: DirectTally, loop: DirectLoop): Promise<{ type: 'done'; transfers: number; failures: number; seconds: number }> {
  const n = loop.accounts.length;
  const measuredFrom = Date.now() + loop.warmUpSeconds * 1_000;
  const end = measuredFrom + loop.seconds * 1_000;
  let transfers = 0;
  let failures = 0;
  const client = async () => {
    while (Date.now() < end) {
      const i = Math.floor(Math.random() * n);
      const j = (i + 1 + Math.floor(Math.random() * (n - 1))) % n;
      const from = loop.accounts[i] as DirectLoop['accounts'][number];
      const to = loop.accounts[j] as DirectLoop['accounts'][number];
      let ok = true;
      try {
        await tally.ledger.transfers.transfer(
          { userId: from.userId, partnerId: loop.partnerId },
          { fromAccountId: from.accountId, toAccountId: to.accountId, amount: '0.01', description: 'bench' },
          { commandId: randomUUID(), unkeyed: true, metadata: { correlationId: randomUUID(), actor: { kind: 'user', id: from.userId } } },
        );
      } catch {
        ok = false;
      }
      const now = Date.now();
      if (now >= measuredFrom && now < end) {
        if (ok) transfers++;
        else failures++;
      }
    }
  };
  // BENCH_CPU_PROFILE: a profile of this server's main thread over each measured part.
  const name = `direct-${basename(process.env.TALLY_BUILD_DIR ?? 'build')}-${n}-accounts-${++slices}`;
  return profiled(name, async (started) => {
    const loops = Array.from({ length: loop.clients }, client);
    await new Promise((done) => setTimeout(done, Math.max(0, measuredFrom - Date.now())));
    process.send?.({ type: 'warmed' });
    await started();
    await Promise.all(loops);
    return { type: 'done' as const, transfers, failures, seconds: loop.seconds };
  });
}

let slices = 0;

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
