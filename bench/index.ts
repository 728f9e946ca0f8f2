import { runAuditExportBench } from './audit-export';
import { runCardHistoryBench } from './card-history';
import { runCardsBench } from './cards';
import { runCheckpointsBench } from './checkpoints';
import { runCompareBench } from './compare';
import { runLedgerBench } from './ledger';
import { runPersonalDataBench } from './personal-data';
import { runStoreBench } from './store';
import { runWebhooksBench } from './webhooks';

/** `npm run bench -- <name>`: benchmarks print figures; they assert nothing. */
const benches: Record<string, { description: string; run: () => Promise<void> }> = {
  store: {
    description: 'event store appends, command appends and a projection rebuild on a throwaway durable PostgreSQL (or DATABASE_URL)',
    run: runStoreBench,
  },
  ledger: {
    description:
      'HTTP transfers/s through the in-process server over 50, 10 and 2 accounts, and a transfer out of a long account, on a durable PostgreSQL; then the same loops on the embedded store (PGlite), with the ratio',
    run: runLedgerBench,
  },
  webhooks: {
    description:
      'partner notifications delivered/s to a local receiver (worker thread) while HTTP transfers run, beside transfers/s, and the p99 lag from append to first attempt',
    run: runWebhooksBench,
  },
  compare: {
    description:
      'two builds side by side: this checkout and BENCH_COMPARE_WITH (another checkout with its node_modules), each a server process on one throwaway durable PostgreSQL, loaded in turn in short slices of the ledger closed loop; transfers/s and CPU per transfer of each, and the ratio',
    run: runCompareBench,
  },
  cards: {
    description:
      "sandbox card authorizations/s and transfers/s through HTTP in one closed loop (64 callers, half each, over 50 cards and their accounts) on a durable PostgreSQL, with the ratio and the authorizations p50/p99; then the same mix offered at fixed rates (open loops), with the latencies from each request's due time",
    run: runCardsBench,
  },
  'card-history': {
    description:
      "one card authorization decided and folded (no database, no HTTP) on a card keeping 10 to 10,000 spends of a year, 10% of them pending (holds on its account): the main thread's microseconds per authorization by the card's history",
    run: runCardHistoryBench,
  },
  'audit-export': {
    description:
      "an auditor's GET /audit/v1/events over a whole log of BENCH_EXPORT_EVENTS events (default 1,000,000) on a durable PostgreSQL, streamed as NDJSON: events/s, MB/s, CPU per event and the process's memory while it streams",
    run: runAuditExportBench,
  },
  checkpoints: {
    description:
      'audit checkpoints with 1,000,000 streams in the audit read model on a durable PostgreSQL, through the real Checkpointer: the first after a start, then with 1,000 streams changed (half new); time, event-loop holds, heap and the heads the node holds; proofs on the node that signed and on another',
    run: runCheckpointsBench,
  },
  'personal-data': {
    description:
      "the sealed store against the same store unwrapped, in alternating rounds on a durable PostgreSQL: a profile written (new user, key held), a profile read, and a transfer's TransactionCreated; ops/s and node CPU per op",
    run: runPersonalDataBench,
  },
};

function usage(): string {
  const lines = Object.entries(benches).map(([name, b]) => `  ${name.padEnd(8)} ${b.description}`);
  return [
    'Usage: npm run bench -- <bench>',
    '',
    'Benches:',
    ...lines,
    '',
    'Environment: BENCH_SECONDS (per measurement, default 5; ledger 10), BENCH_REBUILD_EVENTS (store, default 1000000), DATABASE_URL',
    '  ledger: BENCH_CLIENTS (default 64), BENCH_OPEN_RATES (part 1b, default 25%,50%,90% of the 50-account closed loop; 0 skips), BENCH_OPEN_SECONDS, BENCH_HISTORY (events of the long account, default 100000), BENCH_SAMPLES (default 500), BENCH_EMBEDDED_CLIENTS (default 32; 0 skips the embedded part), BENCH_POSTGRES=0 (the embedded part alone)',
    '  webhooks: BENCH_CLIENTS (default 32), BENCH_WEBHOOK_PARTNERS (default 4), BENCH_WEBHOOK_ACCOUNTS (per partner, default 10)',
    "  compare: BENCH_COMPARE_WITH (required: the other checkout, with node_modules), BENCH_ACCOUNTS (default 50,2), BENCH_CLIENTS (default 64), BENCH_SLICE_SECONDS (default 4), BENCH_ROUNDS (default 6), BENCH_OPEN_RATES (open loops instead: transfers/s, or 25% of the closed loop; p50/p99 and CPU per transfer of each build), BENCH_THIS_ENV / BENCH_OTHER_ENV (settings of each server; BENCH_SERVER_PROCESSES=2: that build as two processes on one database), BENCH_COMPARE_MIX=cards (the cards bench's mix: authorizations and transfers, BENCH_ACCOUNTS card holders with BENCH_CARD_HISTORY spends each; per request, authorization p99)",
    '  audit-export: BENCH_EXPORT_EVENTS (default 1000000)',
    '  card-history: BENCH_CARD_SPENDS (default 10,100,1000,10000), BENCH_PENDING_SHARE (default 0.1), BENCH_SPENDS_TODAY (pending spends earlier the same day, default 0), BENCH_SECONDS (per size, default 1)',
    '  cards: BENCH_CLIENTS (default 64, half authorize, half transfer), BENCH_CARDS (default 50), BENCH_CARD_HISTORY (settled spends per card before the run, one a day, default 365; 0 new cards), BENCH_OPEN_RATES (default 25%,50%,75%,90% of the closed loop; or requests/s; 0 skips), BENCH_OPEN_SECONDS, BENCH_OPEN_CONNECTIONS (default 1024), BENCH_CPU_PROFILE, BENCH_PG_SETTINGS',
    '  checkpoints: BENCH_CHECKPOINT_STREAMS (default 1000000), BENCH_CHECKPOINT_CHANGED (default 1000)',
    '  personal-data: BENCH_SECONDS (per round and side, default 2), BENCH_ROUNDS (default 5)',
  ].join('\n');
}

async function main(): Promise<number> {
  const name = process.argv[2];
  if (name === '-h' || name === '--help') {
    console.log(usage());
    return 0;
  }
  const bench = name ? benches[name] : undefined;
  if (!bench) {
    console.error(`${name ? `Unknown bench "${name}"` : 'No bench given'}\n\n${usage()}`);
    return 1;
  }
  await bench.run();
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
