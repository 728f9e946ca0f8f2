import { runStoreBench } from './store';

/** `npm run bench -- <name>`: benchmarks print figures; they assert nothing. */
const benches: Record<string, { description: string; run: () => Promise<void> }> = {
  store: {
    description: 'event store appends, command appends and a projection rebuild on a throwaway durable PostgreSQL (or DATABASE_URL)',
    run: runStoreBench,
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
    'Environment: BENCH_SECONDS (per measurement, default 5), BENCH_REBUILD_EVENTS (default 1000000), DATABASE_URL',
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
