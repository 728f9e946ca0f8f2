import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { rewrapDataKeys, rotateKeks } from '../../src/cli/keys';
import { generateKeys, PEPPER_KEK_ID, type ServiceKeys } from '../../src/platform/keys';
import { ADMIN_TOKEN, type PartnerCredentials, startTestApp } from '../support/app';
import { type Customer, customer } from '../support/ledger';
import { tempDir } from '../support/temp';
import { type Received, subscribedPartner, verifiesXWebhookSignature } from '../webhooks/support';
import { capture, cliConfig, rawSql } from './support';

type App = Awaited<ReturnType<typeof startTestApp>>;

describe('tally keys rotate', function () {
  this.timeout(180_000);

  it('re-wraps every data key under a new KEK; with the old KEK removed, a restarted service still opens card and webhook secrets', async () => {
    const dataDir = tempDir('tally-keys-');
    let app: App | undefined = await startTestApp({ dataDir });
    const { databaseUrl } = app.config;
    const { partner, receiver, secret } = await subscribedPartner(app.http, 'Rotation', ['user.status.updated']);
    try {
      const who = await cardHolder(app, partner);
      const before = (await app.http.get('/api/v1/cards/secrets').set(who.bearer)).body.data;
      expect(before.cardNumber).to.match(/^[0-9]{16}$/);
      const oldKek = readKeys(dataDir).keks[0]?.kid as string;
      await app.close();
      app = undefined;

      const io = capture();
      const report = await rotateKeks(cliConfig({ databaseUrl, dataDir }), {}, io, {});
      const keks = readKeys(dataDir).keks.map((k) => k.kid);
      expect(keks).to.have.length(2);
      expect(keks[0]).to.equal(oldKek);
      expect(report).to.deep.equal({ current: keks[1], rewrapped: 2, removable: [oldKek] });
      expect(io.lines).to.deep.equal([`added: ${keks[1]}`, `current: ${keks[1]}`, 'rewrapped: 2', `removable: ${oldKek}`]);
      const wrapped = await rawSql<{ owner: string; kek_id: string }>(databaseUrl as string, 'SELECT owner, kek_id FROM data_keys ORDER BY owner');
      expect(wrapped.map((r) => r.owner)).to.deep.equal([`partner:${partner.id}`, `user:${who.id}`]);
      expect(wrapped.every((r) => r.kek_id === keks[1])).to.equal(true);
      expect((await rewrapDataKeys(cliConfig({ databaseUrl, dataDir }), {}, capture())).rewrapped, 'a second run has nothing to do').to.equal(0);

      // The operator removes the old key, as the report allows, and starts the service again.
      const keys = readKeys(dataDir);
      writeFileSync(join(dataDir, 'keys.json'), JSON.stringify({ ...keys, keks: keys.keks.filter((k) => k.kid !== oldKek) }));
      app = await startTestApp({ dataDir, databaseUrl });
      const after = await app.http.get('/api/v1/cards/secrets').set(who.bearer);
      expect(after.status, JSON.stringify(after.body)).to.equal(200);
      expect(after.body.data).to.deep.equal(before);
      expect((await app.http.get('/api/v1/cards/pin').set(who.bearer)).body.data).to.deep.equal({ pin: '2468' });
      const seen = receiver.received.length;
      const suspended = await app.http.post(`/admin/v1/users/${who.id}/suspend`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ reason: 'fraud_review' });
      expect(suspended.status).to.equal(200);
      const isSuspension = (r: Received) =>
        r.body.type === 'user.status.updated' && (r.body.data.user as { status?: string } | undefined)?.status === 'suspended';
      const delivered = (await receiver.waitFor((all) => all.slice(seen).some(isSuspension))).slice(seen).find(isSuspension);
      expect(delivered && verifiesXWebhookSignature(delivered, secret), 'signed with the secret the partner was given before the rotation').to.equal(true);
    } finally {
      await app?.close();
      await receiver.close();
    }
  });

  it('with TALLY_KEYS, prints the new TALLY_KEYS (the keys it had, plus a new KEK last) and touches nothing', async () => {
    const keys = generateKeys();
    const dataDir = tempDir('tally-keys-env-');
    const io = capture();
    expect(await rotateKeks(cliConfig({ dataDir }), {}, io, { TALLY_KEYS: JSON.stringify(keys) })).to.equal(null);
    const printed = JSON.parse(io.lines.join('')) as ServiceKeys;
    expect(printed.keks.slice(0, 1)).to.deep.equal(keys.keks);
    expect(printed.keks).to.have.length(2);
    expect({ ...printed, keks: keys.keks }).to.deep.equal(keys);
    expect(io.errText()).to.contain('tally keys rewrap');
  });

  it('gives a TALLY_KEYS without KEKs one derived from its pepper, and writes it out beside the new one', async () => {
    const { keks: _none, ...older } = generateKeys();
    const io = capture();
    await rotateKeks(cliConfig(), {}, io, { TALLY_KEYS: JSON.stringify(older) });
    const printed = JSON.parse(io.lines.join('')) as ServiceKeys;
    expect(printed.keks.map((k) => k.kid)[0]).to.equal(PEPPER_KEK_ID);
    expect(printed.keks).to.have.length(2);
  });
});

function readKeys(dataDir: string): ServiceKeys {
  return JSON.parse(readFileSync(join(dataDir, 'keys.json'), 'utf8')) as ServiceKeys;
}

/** A customer of the partner with an issued virtual card and a PIN: their data key seals its number, CVC and PIN. */
async function cardHolder(app: App, partner: PartnerCredentials): Promise<Customer> {
  const who = await customer(app.http, partner);
  const applied = await app.http.post('/api/v1/cards/application').set(who.bearer).send({ cardType: 'virtual', isTermsOfServiceAccepted: true });
  expect(applied.status, JSON.stringify(applied.body)).to.equal(201);
  const decided = await app.http.post(`/sandbox/v1/cards/applications/${applied.body.data.application.id}/approve`).set(partner.headers).send({});
  expect(decided.status).to.equal(202);
  const key = () => ({ 'x-idempotency-key': randomUUID() });
  const issued = await app.http.post('/api/v1/cards').set(who.bearer).set(key()).send({});
  expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
  const pin = await app.http.put('/api/v1/cards/pin').set(who.bearer).set(key()).send({ pin: '2468' });
  expect(pin.status, JSON.stringify(pin.body)).to.equal(200);
  return who;
}
