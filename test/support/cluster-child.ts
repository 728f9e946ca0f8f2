import { startTestCluster } from './postgres';

/**
 * Child process of test/support/cluster-cleanup.test.ts: starts a throwaway cluster, says "ready" on
 * stdout and waits to be signalled or killed.
 */
startTestCluster().then(
  () => {
    process.stdout.write('ready\n');
    setInterval(() => {}, 60_000);
  },
  (error) => {
    process.stderr.write(`${error}\n`);
    process.exit(1);
  },
);
