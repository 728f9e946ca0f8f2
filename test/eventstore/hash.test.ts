import { expect } from 'chai';
import { canonicalJson, eventDigest, sha256Hex } from '../../src/eventstore/hash';

/**
 * The hash chain's definition must never drift: stored chains are verified against it. These texts
 * and this digest were produced by the first implementation and must stay exactly the same.
 */
describe('hash chain definition (golden values)', () => {
  it('writes canonical JSON with sorted keys, undefined members left out, arrays in order', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x', { z: undefined, y: 2.5 }], é: 'ü', A: { nested: { k: '0.10000000' } }, u: undefined })).to.equal(
      '{"A":{"nested":{"k":"0.10000000"}},"a":[true,null,"x",{"y":2.5}],"b":1,"é":"ü"}',
    );
    expect(canonicalJson([])).to.equal('[]');
    expect(canonicalJson({})).to.equal('{}');
    expect(canonicalJson('text "quoted"\n')).to.equal('"text \\"quoted\\"\\n"');
    expect(canonicalJson([undefined, 42, null])).to.equal('[null,42,null]');
  });

  it('orders the keys of small and large objects as the default sort does (integer-like, non-ASCII and surrogate keys included)', () => {
    const alphabet = ['a', 'B', 'é', '1', '10', '2', '_', '\u{1F600}', '\uFFFD', 'Z'];
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let round = 0; round < 300; round++) {
      const object: Record<string, number> = {};
      const size = Math.floor(random() * 24);
      for (let i = 0; i < size; i++) {
        const length = 1 + Math.floor(random() * 3);
        object[Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')] = i;
      }
      const expected = `{${Object.keys(object)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${object[k]}`)
        .join(',')}}`;
      expect(canonicalJson(object)).to.equal(expected);
    }
  });

  it('digests an event as it always did (stream, lower-cased id, type, data, metadata)', () => {
    const digest = eventDigest({
      stream: 'account-7',
      id: 'AB9C5C2E-7F1A-4B8E-9F3D-2C6E8A1B0D4F',
      type: 'AccountDebited',
      data: { amount: '0.01', reason: 'transfer', transactionId: 't' },
      metadata: { correlationId: 'c', actor: { kind: 'user', id: 'u' } },
    });
    expect(digest).to.equal('e287a77a6ca67f099bd2a060534d727c124ddf76e9297e5daef08082e11842d2');
  });

  it('hashes the UTF-8 bytes of a text (non-ASCII included)', () => {
    expect(sha256Hex('Zoë pays 5 € 😀')).to.equal('6784df172e2daccc675ed7f13f4727a1cc3265b576d516e74a0cea37e9400125');
  });
});
