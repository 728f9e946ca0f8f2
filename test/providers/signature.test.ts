import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { WebhookSignatureError } from '../../src/providers/errors';
import { computeSignature, headerValue, signPayload, verifySignature } from '../../src/providers/signature';

const SECRET = 'wbhsec_test_0123456789abcdef';
const NOW = 1_760_000_000;
const BODY = Buffer.from('{"id":"evt_1","data":{"amount":"10.00","name":"Zoë"}}', 'utf8');

function rejects(fn: () => unknown, message?: RegExp): void {
  expect(fn).to.throw(WebhookSignatureError, message);
}

describe('webhook signatures (t=..,v1=..)', () => {
  it('signs as hex HMAC-SHA256 of "<t>.<raw body>" with the secret', () => {
    const expected = createHmac('sha256', SECRET).update(`${NOW}.`).update(BODY).digest('hex');
    expect(signPayload(SECRET, BODY, NOW)).to.equal(`t=${NOW},v1=${expected}`);
    expect(computeSignature(SECRET, BODY, NOW)).to.equal(expected);
  });

  it('signs a string body and the same bytes as a Buffer identically', () => {
    expect(signPayload(SECRET, BODY.toString('utf8'), NOW)).to.equal(signPayload(SECRET, BODY, NOW));
  });

  it('accepts its own signature and returns the signed timestamp', () => {
    expect(verifySignature(SECRET, BODY, signPayload(SECRET, BODY, NOW), { nowSeconds: NOW })).to.equal(NOW);
  });

  it('accepts a header with several v1 values when any of them matches (secret roll)', () => {
    const good = computeSignature(SECRET, BODY, NOW);
    const other = computeSignature('old-secret', BODY, NOW);
    expect(verifySignature(SECRET, BODY, `t=${NOW},v1=${other},v1=${good}`, { nowSeconds: NOW })).to.equal(NOW);
  });

  it("accepts Persona's space-separated pairs during rotation, whichever pair is ours", () => {
    const oldPair = signPayload('previous-secret', BODY, NOW);
    const newPair = signPayload(SECRET, BODY, NOW + 1);
    expect(verifySignature(SECRET, BODY, `${oldPair} ${newPair}`, { nowSeconds: NOW })).to.equal(NOW + 1);
    expect(verifySignature('previous-secret', BODY, `${oldPair} ${newPair}`, { nowSeconds: NOW })).to.equal(NOW);
  });

  it('accepts several of our own secrets while we rotate', () => {
    const header = signPayload('new-secret', BODY, NOW);
    expect(verifySignature(['old-secret', 'new-secret'], BODY, header, { nowSeconds: NOW })).to.equal(NOW);
  });

  it('accepts a repeated header given as an array', () => {
    const header = [signPayload('someone-else', BODY, NOW), signPayload(SECRET, BODY, NOW)];
    expect(verifySignature(SECRET, BODY, header, { nowSeconds: NOW })).to.equal(NOW);
  });

  it('ignores unknown schemes such as v0 next to a valid v1', () => {
    const header = `t=${NOW},v0=${'0'.repeat(64)},v1=${computeSignature(SECRET, BODY, NOW)}`;
    expect(verifySignature(SECRET, BODY, header, { nowSeconds: NOW })).to.equal(NOW);
  });

  it('accepts upper-case hex, since the bytes are compared, not the text', () => {
    const header = `t=${NOW},v1=${computeSignature(SECRET, BODY, NOW).toUpperCase()}`;
    expect(verifySignature(SECRET, BODY, header, { nowSeconds: NOW })).to.equal(NOW);
  });

  it('rejects a body changed by one byte', () => {
    const header = signPayload(SECRET, BODY, NOW);
    const tampered = Buffer.from(BODY);
    tampered[tampered.length - 2] = 0x20;
    rejects(() => verifySignature(SECRET, tampered, header, { nowSeconds: NOW }), /No signature matches/);
  });

  it('rejects a re-serialised body even when the JSON is equivalent (raw bytes are signed)', () => {
    const header = signPayload(SECRET, BODY, NOW);
    const reserialised = JSON.stringify(JSON.parse(BODY.toString('utf8')), null, 1);
    rejects(() => verifySignature(SECRET, reserialised, header, { nowSeconds: NOW }));
  });

  it('rejects a signature made with another secret', () => {
    rejects(() => verifySignature(SECRET, BODY, signPayload('wrong-secret', BODY, NOW), { nowSeconds: NOW }), /No signature matches/);
  });

  it('rejects a timestamp swapped in after signing', () => {
    const v1 = computeSignature(SECRET, BODY, NOW - 1000);
    rejects(() => verifySignature(SECRET, BODY, `t=${NOW},v1=${v1}`, { nowSeconds: NOW }), /No signature matches/);
  });

  it('accepts up to exactly 300 s of age and rejects 301 s, in both directions', () => {
    expect(verifySignature(SECRET, BODY, signPayload(SECRET, BODY, NOW - 300), { nowSeconds: NOW })).to.equal(NOW - 300);
    expect(verifySignature(SECRET, BODY, signPayload(SECRET, BODY, NOW + 300), { nowSeconds: NOW })).to.equal(NOW + 300);
    rejects(() => verifySignature(SECRET, BODY, signPayload(SECRET, BODY, NOW - 301), { nowSeconds: NOW }), /tolerance/);
    rejects(() => verifySignature(SECRET, BODY, signPayload(SECRET, BODY, NOW + 301), { nowSeconds: NOW }), /tolerance/);
  });

  it('honours a configured tolerance', () => {
    const header = signPayload(SECRET, BODY, NOW - 20);
    expect(verifySignature(SECRET, BODY, header, { nowSeconds: NOW, toleranceSeconds: 30 })).to.equal(NOW - 20);
    rejects(() => verifySignature(SECRET, BODY, header, { nowSeconds: NOW, toleranceSeconds: 10 }), /tolerance/);
  });

  it('uses the system clock by default', () => {
    const now = Math.floor(Date.now() / 1000);
    expect(verifySignature(SECRET, BODY, signPayload(SECRET, BODY, now))).to.equal(now);
    rejects(() => verifySignature(SECRET, BODY, signPayload(SECRET, BODY, now - 3600)), /tolerance/);
  });

  it('rejects a missing or empty header', () => {
    rejects(() => verifySignature(SECRET, BODY, undefined, { nowSeconds: NOW }), /Missing/);
    rejects(() => verifySignature(SECRET, BODY, '  ', { nowSeconds: NOW }), /Missing/);
    rejects(() => verifySignature(SECRET, BODY, [], { nowSeconds: NOW }), /Missing/);
  });

  it('rejects headers without a usable t and v1 pair', () => {
    const v1 = computeSignature(SECRET, BODY, NOW);
    rejects(() => verifySignature(SECRET, BODY, `v1=${v1}`, { nowSeconds: NOW }), /No v1/);
    rejects(() => verifySignature(SECRET, BODY, `t=${NOW}`, { nowSeconds: NOW }), /No v1/);
    rejects(() => verifySignature(SECRET, BODY, 'garbage', { nowSeconds: NOW }), /No v1/);
    rejects(() => verifySignature(SECRET, BODY, `t=${NOW},v1=${v1.slice(0, 40)}`, { nowSeconds: NOW }), /No v1/);
    rejects(() => verifySignature(SECRET, BODY, `t=${NOW},v1=${v1.slice(0, 62)}zz`, { nowSeconds: NOW }), /No v1/);
  });

  it('rejects timestamps that are not plain digits', () => {
    const v1 = computeSignature(SECRET, BODY, NOW);
    rejects(() => verifySignature(SECRET, BODY, `t=1.76e9,v1=${v1}`, { nowSeconds: NOW }), /timestamp/);
    rejects(() => verifySignature(SECRET, BODY, `t=-5,v1=${v1}`, { nowSeconds: NOW }), /timestamp/);
  });

  it('rejects absurdly long headers before doing any HMAC work', () => {
    rejects(() => verifySignature(SECRET, BODY, `t=${NOW},v1=${'a'.repeat(5000)}`, { nowSeconds: NOW }), /too long/);
  });

  it('refuses an empty secret as a configuration error, not a bad request', () => {
    expect(() => signPayload('', BODY, NOW)).to.throw(Error, /secret/);
    expect(() => verifySignature('', BODY, signPayload(SECRET, BODY, NOW), { nowSeconds: NOW })).to.throw(Error, /secret/);
    expect(() => verifySignature([], BODY, signPayload(SECRET, BODY, NOW), { nowSeconds: NOW })).to.throw(Error, /secret/);
  });

  it('finds headers whatever their case', () => {
    expect(headerValue({ 'X-Signature': 'a' }, 'x-signature')).to.equal('a');
    expect(headerValue({ 'persona-signature': 'b' }, 'Persona-Signature')).to.equal('b');
    expect(headerValue({}, 'x-signature')).to.equal(undefined);
  });
});
