import pino from 'pino';
import supertest from 'supertest';
import { type Config, loadConfig } from '../../src/config';
import { type RunningServer, startServer } from '../../src/server';
import { recordingAnswers } from './answers';
import { sharedCluster } from './postgres';

export const ADMIN_TOKEN = 'test-admin-token';

/** The real app over HTTP on a fresh database of the test cluster. */
export async function startTestApp(
  overrides: Partial<Config> = {},
  log: pino.Logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
): Promise<RunningServer & { config: Config; http: supertest.Agent }> {
  const databaseUrl = await (await sharedCluster()).freshDatabase();
  const config: Config = {
    ...loadConfig({}),
    port: 0,
    databaseUrl,
    adminToken: ADMIN_TOKEN,
    sandbox: true,
    rateLimit: { partnerRps: 0, userRps: 0, ipRps: 0 },
    ...overrides,
  };
  const running = await startServer(config, log);
  return { ...running, config, http: recordingAnswers(supertest.agent(running.url)) };
}

export type TestApp = Awaited<ReturnType<typeof startTestApp>>;

/**
 * The global position of the last event written, counting every committed event: "nothing was
 * written" is judged on this. The store's headPosition is the readers' head, which stops below any
 * transaction still open (a projection's batch, the outbox's), so it can trail a write already
 * answered, and a check on it can miss a write or see one that was answered before it began.
 */
export async function lastWritten(app: TestApp): Promise<string> {
  const [row] = await app.tally.sql.query<{ last: string | null }>('SELECT max(global_position)::text AS last FROM es_events');
  return row?.last ?? '0';
}

/**
 * The position of the last event written, as the store writes positions (transaction, global
 * position), for the projections' waitFor: unlike headPosition, it is not held below a transaction
 * still open elsewhere (see lastWritten). The furthest in the positions' order (transaction first),
 * so a wait for it passes every event written before the call.
 */
export async function lastWrittenPosition(app: TestApp): Promise<string> {
  const [row] = await app.tally.sql.query<{ at: string }>(
    `SELECT lpad(transaction_id::text, 20, '0') || ':' || lpad(global_position::text, 20, '0') AS at FROM es_events ORDER BY transaction_id DESC, global_position DESC LIMIT 1`,
  );
  return row?.at ?? '';
}

/**
 * Steps the reactors by hand (stopped first) until `reached`, for at most `ms`: a step that finds
 * nothing (a transaction begun before the last write still open) is tried again 20 ms later.
 */
export async function stepReactorsUntil(app: TestApp, reached: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await reached()) && Date.now() < deadline) if (!(await app.tally.reactors.step())) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Every event written after `last` (a lastWritten answer), in order, as "stream type". */
export async function writtenSince(app: TestApp, last: string): Promise<string[]> {
  const rows = await app.tally.sql.query<{ stream_id: string; type: string }>(
    'SELECT stream_id, type FROM es_events WHERE global_position > $1::bigint ORDER BY global_position',
    [last],
  );
  return rows.map((row) => `${row.stream_id} ${row.type}`);
}

/** Two nodes of one deployment: two apps on one database. `close` stops the second, then the first. */
export async function startTwoNodes(): Promise<{ first: TestApp; second: TestApp; close(): Promise<void> }> {
  const first = await startTestApp();
  const second = await startTestApp({ databaseUrl: first.config.databaseUrl }).catch(async (error: unknown) => {
    await first.close();
    throw error;
  });
  return {
    first,
    second,
    async close() {
      await second.close();
      await first.close();
    },
  };
}

export interface PartnerCredentials {
  id: string;
  apiKey: string;
  apiSecret: string;
  headers: { 'X-Api-Key': string; 'X-Api-Secret': string };
}

export async function createPartner(http: supertest.Agent, name = 'Acme'): Promise<PartnerCredentials> {
  const res = await http.post('/admin/v1/partners').set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name });
  if (res.status !== 201) throw new Error(`partner creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { ...res.body, headers: { 'X-Api-Key': res.body.apiKey, 'X-Api-Secret': res.body.apiSecret } };
}

let emails = 0;
export const uniqueEmail = (prefix = 'user') => `${prefix}.${process.pid}.${Date.now()}.${emails++}@example.com`;
