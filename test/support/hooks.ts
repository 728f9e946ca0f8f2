import { detectDocker, stopContainers } from './containers';
import { stopSharedCluster } from './postgres';
import { leftoverTempDirs, removeTempDirs } from './temp';

/**
 * Root hooks. Mocha awaits this function before it loads the test files, so a file can decide
 * synchronously what to register from whether Docker is reachable (test/eventstore/kurrentdb.test.ts).
 */
export async function mochaHooks() {
  await detectDocker();
  return {
    async afterAll() {
      await stopSharedCluster();
      await stopContainers();
      removeTempDirs();
      const left = leftoverTempDirs();
      if (left.length > 0) throw new Error(`The tests left ${left.length} folder(s) of this run in the temp dir:\n  ${left.join('\n  ')}`);
    },
  };
}
