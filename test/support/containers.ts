import type { StartedTestContainer } from 'testcontainers';

/**
 * Postgres and KurrentDB in Docker for the tests, through testcontainers, when a Docker engine is
 * reachable. The images are those docker-compose.yml runs (test/support/containers.test.ts checks).
 * KurrentDB is a GenericContainer: @testcontainers/kurrentdb comes with testcontainers 12, which needs a
 * newer Node than ours.
 *
 * The root hook stops every container when the run ends; a run that is killed or interrupted leaves
 * them to testcontainers' reaper (Ryuk), which removes a session's containers once its process is gone.
 */
export const POSTGRES_IMAGE = 'postgres:16';
export const KURRENTDB_IMAGE = 'docker.kurrent.io/kurrent-latest/kurrentdb:25.1.4';
const KURRENTDB_PORT = 2113;

export type DockerAnswer = { reachable: true } | { reachable: false; reason: string };

let detection: Promise<DockerAnswer> | undefined;
let answer: DockerAnswer | undefined;

/** testcontainers' own detection (DOCKER_HOST, ~/.testcontainers.properties, the usual sockets), asked once. */
export function detectDocker(): Promise<DockerAnswer> {
  detection ??= import('testcontainers')
    .then(({ getContainerRuntimeClient }) => getContainerRuntimeClient())
    .then(
      (): DockerAnswer => ({ reachable: true }),
      (error: unknown): DockerAnswer => ({ reachable: false, reason: `testcontainers: ${error instanceof Error ? error.message : String(error)}` }),
    )
    .then((found) => {
      answer = found;
      return found;
    });
  return detection;
}

/** The answer the root hooks awaited before the test files loaded (a file deciding what to register needs it then). */
export function dockerAnswer(): DockerAnswer {
  if (!answer) throw new Error('Docker detection has not run: the root hooks (test/support/hooks.ts) await detectDocker() first');
  return answer;
}

const running = new Set<StartedTestContainer>();

async function started<T extends StartedTestContainer>(container: Promise<T>): Promise<T> {
  const value = await container;
  running.add(value);
  return value;
}

async function stop(container: StartedTestContainer): Promise<void> {
  running.delete(container);
  await container.stop();
}

/** A Postgres server in a container, set up as the local throwaway cluster is (no durability, 200 connections). */
export async function startPostgresContainer(): Promise<{ adminUrl: string; stop(): Promise<void> }> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const settings = ['max_connections=200', 'shared_buffers=256MB', 'fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];
  const container = await started(new PostgreSqlContainer(POSTGRES_IMAGE).withCommand(['postgres', ...settings.flatMap((setting) => ['-c', setting])]).start());
  process.stderr.write(`Tests' PostgreSQL: ${POSTGRES_IMAGE} in Docker (testcontainers)\n`);
  return { adminUrl: container.getConnectionUri(), stop: () => stop(container) };
}

/** A single-node, insecure KurrentDB in a container, ready once its liveness endpoint answers. */
export async function startKurrentDbContainer(): Promise<{ connectionString: string; stop(): Promise<void> }> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await started(
    new GenericContainer(KURRENTDB_IMAGE)
      .withEnvironment({ KURRENTDB_CLUSTER_SIZE: '1', KURRENTDB_RUN_PROJECTIONS: 'None', KURRENTDB_INSECURE: 'true' })
      .withExposedPorts(KURRENTDB_PORT)
      .withWaitStrategy(Wait.forHttp('/health/live', KURRENTDB_PORT).forStatusCodeMatching((status) => status >= 200 && status < 300))
      .withStartupTimeout(120_000)
      .start(),
  );
  const connectionString = `kurrentdb://${container.getHost()}:${container.getMappedPort(KURRENTDB_PORT)}?tls=false`;
  return { connectionString, stop: () => stop(container) };
}

/** Stops what is still running (the root hook's last step). */
export async function stopContainers(): Promise<void> {
  await Promise.all([...running].map(stop));
}
