import { expect } from 'chai';
import pg from 'pg';
import type supertest from 'supertest';
import { Admission } from '../../src/platform/http/admission';
import { LIMITS } from '../../src/platform/limits';
import { ADMIN_TOKEN, createPartner, type PartnerCredentials, startTestApp, type TestApp, uniqueEmail } from '../support/app';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Work the test finishes by hand, and the order in which works began. */
function works() {
  const begun: string[] = [];
  const finish = new Map<string, () => void>();
  const work = (name: string) => () =>
    new Promise<void>((resolve) => {
      begun.push(name);
      finish.set(name, resolve);
    });
  const done = async (name: string) => {
    finish.get(name)?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { begun, work, done };
}

describe('admission: requests in progress bounded, the rest waiting their turn', () => {
  it('runs up to its limit at once and the rest first come first served, each when a place frees', async () => {
    const gate = new Admission({ limit: 2, maxWaitMs: 60_000 });
    const { begun, work, done } = works();
    const shed: string[] = [];
    for (const name of ['a', 'b', 'c', 'd'])
      gate.enter(
        work(name),
        () => shed.push(name),
        () => false,
      );
    expect(begun).to.deep.equal(['a', 'b']);
    expect([gate.inProgress, gate.queued]).to.deep.equal([2, 2]);
    await done('b');
    expect(begun).to.deep.equal(['a', 'b', 'c']);
    await done('a');
    await done('c');
    await done('d');
    expect(begun).to.deep.equal(['a', 'b', 'c', 'd']);
    expect([gate.inProgress, gate.queued, shed.length]).to.deep.equal([0, 0, 0]);
    gate.close();
  });

  it('sheds, when its turn comes, a request that waited past its bound, and runs the one behind it that did not', async () => {
    let now = 0;
    const gate = new Admission({ limit: 1, maxWaitMs: 100, now: () => now });
    const { begun, work, done } = works();
    const shed: string[] = [];
    gate.enter(
      work('a'),
      () => shed.push('a'),
      () => false,
    );
    gate.enter(
      work('old'),
      () => shed.push('old'),
      () => false,
    );
    now = 50;
    gate.enter(
      work('young'),
      () => shed.push('young'),
      () => false,
    );
    now = 120;
    await done('a');
    expect(shed).to.deep.equal(['old']);
    expect(begun).to.deep.equal(['a', 'young']);
    expect(gate.shedCount).to.equal(1);
    await done('young');
    gate.close();
  });

  it('sheds the expired though no place frees (swept), and drops without its work one whose client went away', async () => {
    const gate = new Admission({ limit: 1, maxWaitMs: 40 });
    const { begun, work, done } = works();
    const shed: string[] = [];
    let gone = false;
    gate.enter(
      work('stuck'),
      () => shed.push('stuck'),
      () => false,
    );
    gate.enter(
      work('left'),
      () => shed.push('left'),
      () => gone,
    );
    gate.enter(
      work('waits'),
      () => shed.push('waits'),
      () => false,
    );
    gone = true;
    await sleep(150);
    expect(shed).to.deep.equal(['waits']);
    expect(gate.queued).to.equal(0);
    await done('stuck');
    expect(begun).to.deep.equal(['stuck']);
    gate.close();
  });

  it('keeps its order over a long queue (the head index, compacted)', async () => {
    const gate = new Admission({ limit: 1, maxWaitMs: 60_000 });
    const { begun, work, done } = works();
    const names = Array.from({ length: 2_500 }, (_, i) => `r${i}`);
    for (const name of names)
      gate.enter(
        work(name),
        () => {},
        () => false,
      );
    for (const name of names) await done(name);
    expect(begun).to.deep.equal(names);
    expect(gate.queued).to.equal(0);
    gate.close();
  });
});

/**
 * Over HTTP, with a bound of two requests in progress: the store's log locked by hand makes two
 * writes wait in progress, so the ones after them wait their turn.
 */
describe('admission over HTTP: a node at its bound', () => {
  const saved = { ...LIMITS.http };
  let app: TestApp;
  let partner: PartnerCredentials;
  let locker: pg.Client;

  before(async () => {
    LIMITS.http.requestsInProgress = 2;
    LIMITS.http.queuedRequestMs = 400;
    app = await startTestApp();
    partner = await createPartner(app.http, 'Gated');
    locker = new pg.Client({ connectionString: app.config.databaseUrl });
    await locker.connect();
  });
  after(async () => {
    Object.assign(LIMITS.http, saved);
    await locker?.end();
    await app?.close();
  });

  const register = (email: string) => app.http.post('/api/v1/partner/users').set(partner.headers).send({ email, countryCode: 'CO' });
  const metric = async (name: string) => {
    const text = (await app.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).text;
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  };
  const emails = async () =>
    ((await app.http.get('/api/v1/partner/users?limit=100').set(partner.headers)).body.data.items as { email: string }[]).map((u) => u.email);
  /** Waits until the node has `n` requests in progress (read from /metrics, which never waits its turn). */
  const inProgress = async (n: number) => {
    for (let i = 0; i < 100 && (await metric('tally_http_requests_in_progress')) !== n; i++) await sleep(20);
    expect(await metric('tally_http_requests_in_progress')).to.equal(n);
  };
  const lockLog = async () => {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE es_events IN EXCLUSIVE MODE');
  };
  const send = (req: supertest.Test) => new Promise<supertest.Response>((resolve, reject) => req.then(resolve, reject));

  it('answers 503 with Retry-After to a request that waited past its bound, writes nothing for it, and still answers its probes', async () => {
    const [first, second, third] = [uniqueEmail('in'), uniqueEmail('in'), uniqueEmail('shed')];
    await lockLog();
    const running = [send(register(first)), send(register(second))];
    await inProgress(2);
    const started = Date.now();
    const shed = send(register(third));
    await sleep(100);
    expect(await metric('tally_http_requests_waiting')).to.equal(1);
    expect((await app.http.get('/healthz')).status).to.equal(200);
    const answer = await shed;
    expect(Date.now() - started).to.be.within(400, 3_000);
    expect(answer.status).to.equal(503);
    expect(answer.headers['retry-after']).to.equal('1');
    expect(answer.body).to.include({ success: false, error: 'Service unavailable', code: 'service_unavailable' });
    expect(answer.body.requestId).to.equal(answer.headers['x-request-id']);
    await locker.query('COMMIT');
    expect((await Promise.all(running)).map((r) => r.status)).to.deep.equal([201, 201]);
    const listed = await emails();
    expect(listed).to.include.members([first, second]);
    expect(listed).to.not.include(third);
    expect(await metric('tally_http_requests_shed_total')).to.equal(1);
    expect((await register(uniqueEmail('after'))).status).to.equal(201);
  });

  it('does none of the work of a request whose client went away while it waited', async () => {
    const [first, second, left] = [uniqueEmail('in'), uniqueEmail('in'), uniqueEmail('left')];
    const shedBefore = await metric('tally_http_requests_shed_total');
    await lockLog();
    const running = [send(register(first)), send(register(second))];
    await inProgress(2);
    const abandoned = send(register(left).timeout(100)).catch((error: Error) => error);
    expect(await abandoned).to.be.an('error');
    await locker.query('COMMIT');
    expect((await Promise.all(running)).map((r) => r.status)).to.deep.equal([201, 201]);
    await inProgress(0);
    expect(await emails())
      .to.include.members([first, second])
      .and.not.include(left);
    expect(await metric('tally_http_requests_shed_total')).to.equal(shedBefore);
  });
});
