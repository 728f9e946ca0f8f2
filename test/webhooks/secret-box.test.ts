import { createCipheriv, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { SecretBox } from '../../src/app/notifications/secrets';
import { PgliteSql } from '../../src/eventstore/sql';
import { rejection, testSealer } from '../support/sealing';

/** A secret as the log holds it from before data keys: `v1`, under a key derived from the pepper, bound to partner and secret id. */
function sealedAsV1(pepper: string, plaintext: string, partnerId: string, secretId: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(hkdfSync('sha256', pepper, 'tally', 'webhook-secrets/v1', 32)), iv);
  cipher.setAAD(Buffer.from(`partner-webhook-secret:${partnerId}:${secretId}`, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
}

describe('partner webhook secrets at rest', () => {
  let sql: PgliteSql;
  let box: SecretBox;
  const pepper = 'pepper-of-the-test-service';
  const [partnerId, secretId] = [randomUUID(), randomUUID()];

  before(async () => {
    sql = await PgliteSql.open();
    box = new SecretBox(await testSealer(sql, { pepper }));
  });

  after(async () => {
    await sql.close();
  });

  it("seals under the partner's data key, named in the sealed form, and opens only for that partner and secret id", async () => {
    const sealed = await box.seal(partnerId, secretId, 'whsec_abc');
    const [{ id } = { id: '' }] = await sql.query<{ id: string }>('SELECT id FROM data_keys WHERE owner = $1', [`partner:${partnerId}`]);
    expect(sealed.startsWith(`v2.${id}.`)).to.equal(true);
    expect(await box.open(partnerId, secretId, sealed)).to.equal('whsec_abc');
    await rejection(box.open(partnerId, randomUUID(), sealed), 'another secret id');
    await rejection(box.open(randomUUID(), secretId, sealed), 'another partner');
  });

  it('still opens a secret sealed before data keys (v1): the log keeps those for ever', async () => {
    expect(await box.open(partnerId, secretId, sealedAsV1(pepper, 'whsec_old', partnerId, secretId))).to.equal('whsec_old');
    await rejection(box.open(partnerId, secretId, sealedAsV1('another pepper', 'whsec_old', partnerId, secretId)), 'another pepper');
  });
});
