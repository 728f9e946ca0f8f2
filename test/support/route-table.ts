import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import type supertest from 'supertest';
import type { Config } from '../../src/config';
import { allRoutes } from '../../src/http/app';
import type { RouteSpec } from '../../src/platform/http/route';
import type { RunningServer } from '../../src/server';
import { ADMIN_TOKEN, createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp } from './app';
import { activeUser, login } from './identity';
import { type Customer, customer, fund, PAYER, PAYOUT_DESTINATION } from './ledger';

/**
 * What the generated route tests (fuzz, authorization matrix) share: the route table, the contract's
 * route list, and a world of partners, users and resources to aim requests at.
 */

export const routeKey = (r: { method: string; path: string }) => `${r.method.toUpperCase()} ${r.path}`;

/** Where the contract's route list is: TALLY_ROUTES_TXT, else the repository's copy (test/fixtures/contract.routes; docs/testing.md, "Knobs"). */
export const ROUTES_TXT = process.env.TALLY_ROUTES_TXT ?? join(__dirname, '..', 'fixtures', 'contract.routes');

/** The routes of the contract's route list: METHOD PATH CREDENTIALS AREA per line; null when absent. */
export function contractRoutes(): Array<{ method: string; path: string; auth: string }> | null {
  if (!existsSync(ROUTES_TXT)) return null;
  return readFileSync(ROUTES_TXT, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [method, path, auth] = line.split(/\s+/) as [string, string, string];
      return { method: method.toUpperCase(), path, auth };
    });
}

/** The route list's entries the app serves, and those it does not (yet); null when the list is absent. */
export function servedContractRoutes(routes: RouteSpec[] = allRoutes()) {
  const contract = contractRoutes();
  if (!contract) return null;
  const served = new Set(routes.map(routeKey));
  return {
    served: contract.filter((r) => served.has(routeKey(r))),
    missing: contract.filter((r) => !served.has(routeKey(r))),
  };
}

/** Fills `{name}` segments with already percent-encoded texts. */
export function fillPath(path: string, params: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`no value for {${name}} of ${path}`);
    return value;
  });
}

export const pathParamNames = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);

export interface LoggedApp extends RunningServer {
  config: Config;
  http: supertest.Agent;
  /** Log entries at warn or above (a 5xx logs its error here). */
  problems: Array<Record<string, unknown>>;
}

/** The real app over HTTP, as startTestApp, keeping what it logs at warn and above. */
export async function startLoggedApp(overrides: Partial<Config> = {}): Promise<LoggedApp> {
  const problems: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim()) {
          try {
            problems.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            problems.push({ raw: line });
          }
        }
      done();
    },
  });
  // No background sweep: the log's head moves only through requests.
  const running = await startTestApp({ payoutResubmitSeconds: 0, ...overrides }, pino({ level: 'warn' }, sink));
  return { ...running, problems };
}

/** Partners, users and their resources: what a request can name. */
export interface World {
  app: LoggedApp;
  /** Partner A: its users are the subjects. */
  acme: PartnerCredentials;
  /** Partner B: the other partner. */
  globex: PartnerCredentials;
  /** Active, funded user of acme (the fuzz's bearer, the matrix's subject). */
  ada: Customer;
  /** Another active user of acme (transfer target; "another user's token"). */
  bob: Customer;
  /** An active user of globex with an account and a deposit. */
  carol: Customer;
  /** A user of acme suspended by the operator after logging in (its token kept). */
  suspended: Customer;
  /** Refresh tokens of acme's users (ada's own session is never handed to the fuzzer). */
  refreshOfBob: string;
  /** ada's confirmed deposit, her pending deposit, and their payment ids. */
  adaDeposit: string;
  adaPendingDeposit: string;
  adaPaymentId: string;
  adaPendingPaymentId: string;
  adaInquiryId: string;
  /** ada's accepted payout: transaction uuid and the mock payout provider's payment id. */
  adaPayout: string;
  adaPayoutPaymentId: string;
  carolDeposit: string;
  carolPaymentId: string;
  carolInquiryId: string;
  bobTransfer: string;
  /** ada's active virtual card, and a pending authorization on it. */
  adaCard: string;
  adaCardTransaction: string;
  /** A partner the fuzzer's operator calls may do anything to (keys revoked, ...). */
  spare: PartnerCredentials;
  /** Users of acme the fuzzer's operator calls may suspend, ban and reinstate. */
  victims: string[];
  projections: string[];
}

const paymentIdOf = (link: string) => decodeURIComponent(/\/api\/pay\/([^?]+)/.exec(link)?.[1] ?? '');

async function deposit(app: LoggedApp, who: Customer, amount: string) {
  const res = await app.http
    .post('/api/v1/transactions/deposit')
    .set(who.bearer)
    .send({ toAccountId: who.accountId, amount, currency: 'USDC', provider: 'mock', description: 'pending', metadata: PAYER });
  if (res.status !== 201) throw new Error(`deposit failed ${res.status} ${JSON.stringify(res.body)}`);
  return { transactionId: res.body.transactionId as string, paymentId: paymentIdOf(res.body.paymentLink as string) };
}

/** An approved application, the card issued on it, and a pending authorization of 1 USD. */
async function cardWithSpend(app: LoggedApp, partner: PartnerCredentials, who: Customer): Promise<{ cardId: string; transactionId: string }> {
  const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
  if (applied.status !== 201) throw new Error(`card application failed ${applied.status} ${JSON.stringify(applied.body)}`);
  await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
  const issued = await app.http.post('/api/v1/cards').set(who.bearer).send({});
  if (issued.status !== 201) throw new Error(`card issue failed ${issued.status} ${JSON.stringify(issued.body)}`);
  const spent = await app.http
    .post(`/sandbox/v1/cards/${issued.body.data.id}/authorizations`)
    .set(partner.headers)
    .send({ amount: '1', currency: 'USD', merchantName: 'Matrix Shop', merchantCategoryCode: '5999' });
  if (spent.status !== 201) throw new Error(`card authorization failed ${spent.status} ${JSON.stringify(spent.body)}`);
  return { cardId: issued.body.data.id as string, transactionId: spent.body.data.id as string };
}

export async function buildWorld(app: LoggedApp): Promise<World> {
  const http = app.http;
  const acme = await createPartner(http, 'Acme');
  const globex = await createPartner(http, 'Globex');
  const spare = await createPartner(http, 'Spare');
  const ada = await customer(http, acme);
  const bob = await customer(http, acme);
  const carol = await customer(http, globex);
  const suspended = await customer(http, acme);
  const adaDeposit = await fund(http, acme, ada, '20000');
  await fund(http, acme, bob, '100');
  const carolDeposit = await fund(http, globex, carol, '100');
  const pending = await deposit(app, ada, '5');
  const rows = await app.tally.sql.query<{ uuid: string; payment_id: string }>(
    `SELECT uuid::text, details->>'paymentId' AS payment_id FROM rm_transactions WHERE uuid = ANY($1::uuid[])`,
    [[adaDeposit, carolDeposit]],
  );
  const paymentOf = (uuid: string) => rows.find((r) => r.uuid === uuid)?.payment_id ?? '';
  const transfer = await http
    .post('/api/v1/transactions/transfer')
    .set(bob.bearer)
    .send({ fromAccountId: bob.accountId, toAccountId: ada.accountId, amount: '1', description: 'to ada' });
  if (transfer.status !== 201) throw new Error(`transfer failed ${transfer.status} ${JSON.stringify(transfer.body)}`);
  const payoutId = randomUUID();
  const payout = await http
    .post('/api/v1/user/payout')
    .set(ada.bearer)
    .send({
      transactionId: payoutId,
      amount: 1000,
      asset: 'COP',
      provider: 'mock',
      source: { metadata: { fundingId: 'f1' } },
      destination: PAYOUT_DESTINATION,
    });
  if (payout.status !== 200 || !payout.body.paymentId) throw new Error(`payout failed ${payout.status} ${JSON.stringify(payout.body)}`);
  const inquiryOf = async (userId: string) => {
    const [row] = await app.tally.sql.query<{ inquiry_id: string }>('SELECT inquiry_id FROM rm_kyc_verifications WHERE user_id = $1', [userId]);
    return row?.inquiry_id ?? '';
  };
  const card = await cardWithSpend(app, acme, ada);
  const { refreshToken: refreshOfBob } = await login(http, acme, bob.email);
  const victims = [];
  for (let i = 0; i < 2; i++) victims.push((await activeUser(http, acme)).id);
  const suspend = await http.post(`/admin/v1/users/${suspended.id}/suspend`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({});
  if (suspend.status !== 200) throw new Error(`suspend failed ${suspend.status} ${JSON.stringify(suspend.body)}`);
  const head = await lastWrittenPosition(app);
  if (!(await app.tally.engine.waitFor(head, { timeoutMs: 10_000 }))) throw new Error('projections did not catch up after the setup');
  return {
    app,
    acme,
    globex,
    spare,
    ada,
    bob,
    carol,
    suspended,
    refreshOfBob,
    adaDeposit,
    adaPaymentId: paymentOf(adaDeposit),
    adaPendingDeposit: pending.transactionId,
    adaPendingPaymentId: pending.paymentId,
    adaInquiryId: await inquiryOf(ada.id),
    adaPayout: payoutId,
    adaPayoutPaymentId: payout.body.paymentId as string,
    carolDeposit,
    carolPaymentId: paymentOf(carolDeposit),
    carolInquiryId: await inquiryOf(carol.id),
    bobTransfer: transfer.body.uuid as string,
    adaCard: card.cardId,
    adaCardTransaction: card.transactionId,
    victims,
    projections: app.tally.engine.projections.map((p) => p.name),
  };
}

/** One request as sent, for reports and replays. */
export interface SentRequest {
  method: string;
  /** Path and query, as sent (percent-encoded). */
  url: string;
  headers: Record<string, string>;
  /** The body's text, as sent. */
  body?: string;
}

export interface Answer {
  status: number;
  text: string;
  body: unknown;
}

/** Sends exactly `req` (no re-encoding of the URL or body). */
export async function sendRaw(http: supertest.Agent, req: SentRequest): Promise<Answer> {
  let test = http[req.method.toLowerCase() as 'get'](req.url);
  for (const [k, v] of Object.entries(req.headers)) test = test.set(k, v);
  // Keep the answer's bytes as text whatever its type (HTML pages, metrics).
  test = test.buffer(true).parse((res, done) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => done(null, Buffer.concat(chunks).toString('utf8')));
  });
  const res = req.body === undefined ? await test : await test.send(req.body);
  const text = typeof res.body === 'string' ? res.body : res.text;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, text, body };
}

/** A request as a curl command line (replayable against a running service). */
export function asCurl(req: SentRequest, base = 'http://127.0.0.1:3000'): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const parts = [`curl -sS -X ${req.method.toUpperCase()} ${q(base + req.url)}`];
  for (const [k, v] of Object.entries(req.headers)) parts.push(`-H ${q(`${k}: ${v}`)}`);
  if (req.body !== undefined)
    parts.push(req.body.length > 300 ? `--data-binary <${req.body.length} bytes, starting ${q(req.body.slice(0, 120))}>` : `--data-binary ${q(req.body)}`);
  return parts.join(' ');
}

/** The event types appended after `from` (for reports of unexpected writes). */
export async function writtenSince(app: LoggedApp, from: string): Promise<string[]> {
  const events = await app.tally.store.readAll({ fromPosition: from || undefined, maxCount: 20 });
  return events.map((e) => `${e.stream}:${e.type}`);
}
