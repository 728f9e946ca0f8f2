import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import type { Resolver } from '../../src/providers/notifications/address-guard';
import { postNotification } from '../../src/providers/notifications/sender';
import { comparePositions } from '../../src/eventstore/port';
import { createPartner, lastWrittenPosition, type PartnerCredentials, startTestApp, stepReactorsUntil } from '../support/app';
import { customer, fund } from '../support/ledger';
import { subscribedPartner } from './support';

type App = Awaited<ReturnType<typeof startTestApp>>;

const PUBLIC = '93.184.216.34';
/** A name that answers one public and one loopback address, in either order. */
const MIXED_ANSWERS = [
  [
    { address: PUBLIC, family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
  [
    { address: '127.0.0.1', family: 4 },
    { address: PUBLIC, family: 4 },
  ],
];
const answering =
  (answer: Array<{ address: string; family: number }>): Resolver =>
  async () =>
    answer;

/**
 * Rules of partner notifications a mutation audit found no test held (a one-line change to each left
 * every test green, or only a flaky crash test red): each is checked here deterministically.
 */
describe('notification rules held: mixed DNS answers, the outbox transaction, the inbox tolerance', function () {
  this.timeout(60_000);

  describe('a host with one public and one private address, outside sandbox mode', () => {
    let app: App;
    let acme: PartnerCredentials;
    before(async () => {
      app = await startTestApp({ sandbox: false });
      acme = await createPartner(app.http, 'Mixed');
    });
    after(() => app?.close());

    it('is refused at save (PUT partner/webhooks), whichever address comes first', async () => {
      const { endpoints } = app.tally.notifications;
      const saved = endpoints.resolve;
      try {
        for (const answer of MIXED_ANSWERS) {
          Object.assign(endpoints, { resolve: answering(answer) });
          const res = await app.http.put('/api/v1/partner/webhooks').set(acme.headers).send({ url: 'https://mixed.example/hooks' });
          expect([res.status, res.body], JSON.stringify(answer)).to.deep.equal([
            400,
            {
              success: false,
              error: 'url must not point to a private, loopback or link-local address',
              code: 'webhook_url_private_address',
              param: 'url',
              requestId: res.body.requestId,
            },
          ]);
        }
        // Control: the same name answering its public address alone is saved, so the answers above were what refused it.
        Object.assign(endpoints, { resolve: answering([{ address: PUBLIC, family: 4 }]) });
        expect((await app.http.put('/api/v1/partner/webhooks').set(acme.headers).send({ url: 'https://mixed.example/hooks' })).status).to.equal(200);
      } finally {
        Object.assign(endpoints, { resolve: saved });
      }
    });

    it('is never connected to at delivery, whichever address comes first', async () => {
      // A loopback listener: a connection to it is a notification the guard let through.
      let connections = 0;
      const trap = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
      const port = (trap.address() as AddressInfo).port;
      try {
        for (const answer of MIXED_ANSWERS) {
          const result = await postNotification(
            `http://mixed.example:${port}/hooks`,
            '{}',
            {},
            { timeoutMs: 2_000, publicOnly: true, resolve: answering(answer) },
          );
          expect(result, JSON.stringify(answer)).to.deep.include({
            ok: false,
            httpStatus: null,
            error: 'refused: mixed.example resolves to a non-public address',
          });
        }
        expect(connections).to.equal(0);
        // The trap does count: the same port, reached without the guard, is one connection.
        await postNotification(`http://127.0.0.1:${port}/hooks`, '{}', {}, { timeoutMs: 2_000, publicOnly: false });
        expect(connections).to.equal(1);
      } finally {
        await new Promise<void>((resolve) => trap.close(() => resolve()));
      }
    });
  });

  /** The outbox stepped by hand (stopped first), with its checkpoint and deliveries read from the database. */
  const outboxOf = (app: () => App) => ({
    async checkpoint(): Promise<string> {
      return (await app().tally.sql.query<{ position: string }>(`SELECT position FROM projection_checkpoints WHERE name = 'outbox'`))[0]?.position ?? '';
    },
    async deliveredUuids(partnerId: string): Promise<string[]> {
      const rows = await app().tally.sql.query<{ body: string }>(`SELECT body FROM webhook_deliveries WHERE partner_id = $1 ORDER BY sequence`, [partnerId]);
      return rows.map((r) => (JSON.parse(r.body) as { data: { uuid: string } }).data.uuid);
    },
    /** Steps until the checkpoint reaches the last event written (a step that throws is let throw). */
    async drain(): Promise<void> {
      const head = await lastWrittenPosition(app());
      await stepReactorsUntil(app(), async () => comparePositions(await this.checkpoint(), head) >= 0);
      expect(comparePositions(await this.checkpoint(), head), 'the outbox reached the head').to.be.at.least(0);
    },
  });

  describe('the outbox, while no partner listened yet', () => {
    let app: App;
    const outbox = outboxOf(() => app);
    before(async () => {
      app = await startTestApp();
      await app.tally.reactors.stop();
    });
    after(() => app?.close());

    it('skips no event it has not read: two endpoints configured one after the other both get their notifications', async () => {
      const first = await createPartner(app.http, 'First');
      const second = await createPartner(app.http, 'Second');
      const who = await customer(app.http, second);
      for (const partner of [first, second]) {
        const put = await app.http
          .put('/api/v1/partner/webhooks')
          .set(partner.headers)
          .send({ url: 'http://127.0.0.1:9/hooks', events: ['deposit.completed'] });
        expect(put.status).to.equal(200);
      }
      const deposit = await fund(app.http, second, who, '3');
      await outbox.drain();
      expect(await outbox.deliveredUuids(second.id)).to.deep.equal([deposit]);
    });
  });

  describe('the outbox and its transaction', () => {
    let app: App;
    const outbox = outboxOf(() => app);
    before(async () => {
      app = await startTestApp();
      await app.tally.reactors.stop();
    });
    after(async () => {
      await app.tally.sql.query(`DROP TRIGGER IF EXISTS test_fault ON webhook_deliveries`);
      await app.tally.sql.query(`DROP TRIGGER IF EXISTS test_fault ON projection_checkpoints`);
      await app?.close();
    });

    /**
     * A fault in one statement of the step: the trigger raises until dropped. On the checkpoints, only
     * the outbox's row (the projections' checkpoints share the table).
     */
    async function withFault(table: 'webhook_deliveries' | 'projection_checkpoints', when: string, fn: () => Promise<void>): Promise<void> {
      const only = table === 'projection_checkpoints' ? ` WHEN (NEW.name = 'outbox')` : '';
      await app.tally.sql.query(`CREATE OR REPLACE FUNCTION test_fault() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'planted fault'; END $$ LANGUAGE plpgsql`);
      await app.tally.sql.query(`CREATE TRIGGER test_fault BEFORE ${when} ON ${table} FOR EACH ROW${only} EXECUTE FUNCTION test_fault()`);
      try {
        await fn();
      } finally {
        await app.tally.sql.query(`DROP TRIGGER test_fault ON ${table}`);
      }
    }

    async function listening(name: string) {
      const { partner, receiver } = await subscribedPartner(app.http, name, ['deposit.completed']);
      await receiver.close();
      const who = await customer(app.http, partner);
      await outbox.drain();
      return { partner, who };
    }

    it('does not move its checkpoint when a delivery cannot be inserted, and makes the deliveries once the fault is gone', async () => {
      const { partner, who } = await listening('Insert fault');
      const deposit = await fund(app.http, partner, who, '4');
      const before = await outbox.checkpoint();
      await withFault('webhook_deliveries', 'INSERT', async () => {
        let error: unknown;
        await app.tally.reactors.step().catch((e: unknown) => {
          error = e;
        });
        expect(String(error)).to.contain('planted fault');
        expect(await outbox.checkpoint()).to.equal(before);
      });
      await outbox.drain();
      expect(await outbox.deliveredUuids(partner.id)).to.deep.equal([deposit]);
    });

    it('shows no delivery when its checkpoint cannot move, and makes each once the fault is gone', async () => {
      const { partner, who } = await listening('Checkpoint fault');
      const deposit = await fund(app.http, partner, who, '5');
      const before = await outbox.checkpoint();
      await withFault('projection_checkpoints', 'UPDATE OF position', async () => {
        let error: unknown;
        await app.tally.reactors.step().catch((e: unknown) => {
          error = e;
        });
        expect(String(error)).to.contain('planted fault');
        expect(await outbox.checkpoint()).to.equal(before);
        expect(await outbox.deliveredUuids(partner.id)).to.deep.equal([]);
      });
      await outbox.drain();
      expect(await outbox.deliveredUuids(partner.id)).to.deep.equal([deposit]);
    });
  });

  describe('the sandbox webhook inbox, on the timestamp of a correctly signed message', () => {
    let app: App;
    let deliveryId: string;
    let secret: string;
    before(async () => {
      app = await startTestApp();
      const partner = await createPartner(app.http, 'Inbox');
      const put = await app.http
        .put('/api/v1/partner/webhooks')
        .set(partner.headers)
        .send({ url: `${app.url}/sandbox/v1/webhook-inbox`, events: ['deposit.completed'] });
      secret = put.body.data.secret;
      await fund(app.http, partner, await customer(app.http, partner), '2');
      const deadline = Date.now() + 10_000;
      for (;;) {
        const [row] = await app.tally.sql.query<{ id: string }>('SELECT id::text FROM webhook_deliveries WHERE partner_id = $1', [partner.id]);
        if (row) {
          deliveryId = row.id;
          break;
        }
        if (Date.now() > deadline) throw new Error('no delivery was made');
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    after(() => app?.close());

    /** A message signed correctly (Standard Webhooks, with the partner's secret) for `offsetSeconds` from now. */
    const signedAt = (offsetSeconds: number) => {
      const t = Math.floor(Date.now() / 1000) + offsetSeconds;
      const raw = JSON.stringify({ id: deliveryId, note: randomUUID() });
      const signature = new Webhook(secret).sign(deliveryId, new Date(t * 1000), raw);
      return app.http
        .post('/sandbox/v1/webhook-inbox')
        .set({ 'Content-Type': 'application/json', 'webhook-id': deliveryId, 'webhook-timestamp': String(t), 'webhook-signature': signature })
        .send(raw);
    };

    for (const [name, offsetSeconds] of [
      ['301 seconds old', -301],
      ['an hour old', -3_600],
      ['310 seconds ahead', 310],
    ] as const)
      it(`refuses a message ${name} (401), though its signature is right for its timestamp`, async () => {
        const res = await signedAt(offsetSeconds);
        expect([res.status, res.body]).to.deep.equal([
          401,
          { success: false, error: 'Invalid webhook signature', code: 'invalid_webhook_signature', requestId: res.body.requestId },
        ]);
      });

    for (const [name, offsetSeconds] of [
      ['295 seconds old', -295],
      ['295 seconds ahead', 295],
      ['sent now', 0],
    ] as const)
      it(`keeps a message ${name}, just inside the five minutes`, async () => {
        const res = await signedAt(offsetSeconds);
        expect([res.status, res.body]).to.deep.equal([200, { success: true, received: true }]);
      });
  });
});
