import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { signedText } from '../../src/platform/audit/checkpoint';
import { privateKeyOf, publicJwkOf, signText, verifyText } from '../../src/platform/audit/signing';
import { generateKeys, loadKeys, NoAuditKeyError } from '../../src/platform/keys';
import { tempDir } from '../support/temp';

describe('audit keys', () => {
  it('are generated into DATA_DIR/keys.json, and added to a keys file from before checkpoints, then kept', () => {
    const dataDir = tempDir('tally-keys-');
    const old = generateKeys() as Partial<ReturnType<typeof generateKeys>>;
    delete old.audit;
    writeFileSync(join(dataDir, 'keys.json'), JSON.stringify(old));
    const keys = loadKeys({ dataDir, env: {} });
    expect(keys.audit).to.have.length(1);
    expect(keys.signing).to.deep.equal(old.signing);
    expect(loadKeys({ dataDir, env: {} }).audit).to.deep.equal(keys.audit);
    expect(JSON.parse(readFileSync(join(dataDir, 'keys.json'), 'utf8')).audit).to.deep.equal(keys.audit);
  });

  it('refuses TALLY_KEYS without an audit key rather than make one up per process', () => {
    const keys = generateKeys() as Partial<ReturnType<typeof generateKeys>>;
    delete keys.audit;
    expect(() => loadKeys({ dataDir: tempDir('tally-keys-'), env: { TALLY_KEYS: JSON.stringify(keys) } })).to.throw(NoAuditKeyError, /no audit key/);
  });

  it('publish an Ed25519 JWK whose kid is its RFC 7638 thumbprint, and verify only what the key signed', () => {
    const [key] = generateKeys().audit;
    if (!key) throw new Error('no key');
    const jwk = publicJwkOf(key);
    expect(Object.keys(jwk).sort()).to.deep.equal(['crv', 'kid', 'kty', 'x']);
    expect(jwk).to.include({ kty: 'OKP', crv: 'Ed25519', kid: key.kid });
    expect(key.kid).to.equal(createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${jwk.x}"}`).digest('base64url'));
    const text = signedText({ id: 'c', position: '1', streams: 1, root: 'ab', createdAt: '2026-01-01T00:00:00.000Z', kid: key.kid });
    const signature = signText(privateKeyOf(key), text);
    expect(signature).to.match(/^[A-Za-z0-9_-]{86}$/);
    expect(verifyText(jwk, text, signature)).to.equal(true);
    expect(verifyText(jwk, text.replace('"streams":1', '"streams":2'), signature)).to.equal(false);
    expect(verifyText({ ...jwk, x: 'not a key' }, text, signature)).to.equal(false);
  });
});
