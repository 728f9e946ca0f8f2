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
