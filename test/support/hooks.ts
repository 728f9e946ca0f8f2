import { detectDocker, stopContainers } from './containers';
import { wholeSuiteLoaded } from './answers';
import { errorCodeProblems } from './error-codes-answered';
import { stopSharedCluster } from './postgres';
import { leftoverTempDirs, removeTempDirs } from './temp';

/**
 * Root hooks. Mocha awaits this function before it loads the test files, so a file can decide
 * synchronously what to register from whether Docker is reachable (test/eventstore/kurrentdb.test.ts).
 */
export async function mochaHooks() {
  await detectDocker();
  return {
    async afterAll(this: Mocha.Context) {
      // After the whole suite (not a file or two): the error codes answered and documented agree.
      const loaded = new Set<string>();
      const walk = (suite: Mocha.Suite) => {
        if (suite.file) loaded.add(suite.file);
        for (const child of suite.suites) walk(child);
      };
      if (this.test?.parent) walk(this.test.parent);
      // CODES_CHECK=1 asks for it on a part of the suite too (the refusals no test of that part reached are then listed).
      const problems =
        (wholeSuiteLoaded(loaded) || process.env.CODES_CHECK === '1') && this.test?.parent && !hasFailures(this.test.parent) ? errorCodeProblems() : [];
      await stopSharedCluster();
      await stopContainers();
      removeTempDirs();
      const left = leftoverTempDirs();
      if (left.length > 0) throw new Error(`The tests left ${left.length} folder(s) of this run in the temp dir:\n  ${left.join('\n  ')}`);
      if (problems.length > 0)
        throw new Error(`Error codes answered and documented disagree (test/support/error-codes-answered.ts):\n  ${problems.join('\n  ')}`);
    },
  };
}

/** Whether any test of the suite failed (then the codes check would only add noise). */
function hasFailures(suite: Mocha.Suite): boolean {
  return suite.tests.some((t) => t.state === 'failed') || suite.suites.some(hasFailures);
}
