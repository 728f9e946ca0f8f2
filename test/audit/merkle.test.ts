import { expect } from 'chai';
import { jcs } from '../../src/platform/audit/canonical-json';
import { HeadsTree, type Head, leafInput } from '../../src/platform/audit/heads-tree';
import { inclusionPath, leafHash, merkleRoot, nodeHash, sha256, verifyInclusion } from '../../src/platform/audit/merkle';
import { compareUtf8, sortUtf8 } from '../../src/platform/audit/order';

const leaves = (n: number) => Array.from({ length: n }, (_, i) => leafHash(`leaf ${i}`));

describe('audit: RFC 6962 Merkle tree', () => {
  it('roots of 1, 2, 3 and 7 leaves follow the recursive definition', () => {
    const [a, b, c, d, e, f, g] = leaves(7) as Buffer[];
    expect(merkleRoot([a] as Buffer[]).equals(a as Buffer)).to.equal(true);
    expect(merkleRoot([a, b] as Buffer[]).equals(nodeHash(a as Buffer, b as Buffer))).to.equal(true);
    expect(merkleRoot([a, b, c] as Buffer[]).equals(nodeHash(nodeHash(a as Buffer, b as Buffer), c as Buffer))).to.equal(true);
    const left = nodeHash(nodeHash(a as Buffer, b as Buffer), nodeHash(c as Buffer, d as Buffer));
    const right = nodeHash(nodeHash(e as Buffer, f as Buffer), g as Buffer);
    expect(merkleRoot([a, b, c, d, e, f, g] as Buffer[]).toString('hex')).to.equal(nodeHash(left, right).toString('hex'));
    expect(merkleRoot([]).toString('hex')).to.equal('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('hashes a leaf as SHA-256(0x00 || input) and a node as SHA-256(0x01 || left || right)', () => {
    expect(leafHash('abc').equals(sha256(Buffer.concat([Buffer.from([0]), Buffer.from('abc')])))).to.equal(true);
    const [a, b] = leaves(2) as [Buffer, Buffer];
    expect(nodeHash(a, b).equals(sha256(Buffer.concat([Buffer.from([1]), a, b])))).to.equal(true);
  });

  it('verifies every proof of every leaf of trees of 1 to 17 leaves, and no tampered one', () => {
    for (let n = 1; n <= 17; n++) {
      const all = leaves(n);
      const root = merkleRoot(all);
      for (let m = 0; m < n; m++) {
        const path = inclusionPath(all, m);
        expect(verifyInclusion(all[m] as Buffer, m, n, path, root), `leaf ${m} of ${n}`).to.equal(true);
        expect(verifyInclusion(leafHash('another'), m, n, path, root), `another leaf at ${m} of ${n}`).to.equal(false);
        if (path.length > 0) {
          const bent = path.map((p, i) => (i === path.length - 1 ? leafHash('bent') : p));
          expect(verifyInclusion(all[m] as Buffer, m, n, bent, root), `bent path ${m} of ${n}`).to.equal(false);
          expect(verifyInclusion(all[m] as Buffer, m, n, path.slice(1), root), `short path ${m} of ${n}`).to.equal(false);
        }
        if (n > 1) expect(verifyInclusion(all[m] as Buffer, (m + 1) % n, n, path, root), `wrong index ${m} of ${n}`).to.equal(false);
        expect(verifyInclusion(all[m] as Buffer, n, n, path, root), `index past the tree ${m} of ${n}`).to.equal(false);
      }
    }
  });
});

describe('audit: RFC 8785 canonical JSON', () => {
  it('sorts members by UTF-16 code units and writes primitives as ECMAScript does', () => {
    expect(jcs({ b: 1, a: [true, null, 'x'], c: { z: -0, y: 'é\n"' } })).to.equal('{"a":[true,null,"x"],"b":1,"c":{"y":"é\\n\\"","z":0}}');
    // RFC 8785 3.2.3: "\u20ac" (€) sorts before "\ud83d\ude00" (😀) by UTF-16 units, though not by code point.
    expect(jcs({ '😀': 1, '€': 2, '\r': 3, '1': 4 })).to.equal('{"\\r":3,"1":4,"€":2,"😀":1}');
    expect(jcs({ stream: 's', revision: 3, hash: 'ab' })).to.equal('{"hash":"ab","revision":3,"stream":"s"}');
    expect(jcs('\u0001\u001f</')).to.equal('"\\u0001\\u001f</"');
  });

  it('refuses what RFC 8785 cannot write the same way everywhere', () => {
    expect(() => jcs(1.5)).to.throw(/safe integer/);
    expect(() => jcs(Number.NaN)).to.throw(/safe integer/);
    expect(() => jcs('\ud800')).to.throw(/lone surrogate/);
    expect(() => jcs({ a: undefined })).to.throw(/no JSON form/);
  });
});

describe('audit: the incremental heads tree', () => {
  it('orders streams by UTF-8 bytes, not UTF-16 units', () => {
    expect(['b', '\uffff', '😀', 'a'].sort(compareUtf8)).to.deep.equal(['a', 'b', '\uffff', '😀']);
    expect(sortUtf8(['b', '\uffff', '😀', 'a'])).to.deep.equal(['a', 'b', '\uffff', '😀']);
    expect(sortUtf8(['b', 'c', 'a'])).to.deep.equal(['a', 'b', 'c']);
    expect(Buffer.compare(Buffer.from('\uffff'), Buffer.from('😀'))).to.equal(-1);
  });

  it('has the from-scratch root and proofs over random sequences of updates and inserts, settled in slices or at once', async () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 6; round++) {
      const tree = new HeadsTree();
      const heads = new Map<string, Head>();
      for (let step = 0; step < 40; step++) {
        const changes = 1 + random(12);
        for (let c = 0; c < changes; c++) {
          const stream = `s-${random(3 + step * 3)}${['', 'é', '😀', '\uffff'][random(4)]}`;
          const head = { stream, revision: (heads.get(stream)?.revision ?? -1) + 1, hash: `${random(1_000_000)}`.padStart(64, '0') };
          heads.set(stream, head);
          tree.set(head);
        }
        if (step % 2 === 0) await tree.settle();
        const sorted = [...heads.values()].sort((a, b) => compareUtf8(a.stream, b.stream));
        const all = sorted.map((h) => leafHash(leafInput(h)));
        const root = merkleRoot(all);
        expect(tree.rootHex(), `round ${round} step ${step}`).to.equal(root.toString('hex'));
        expect(tree.size).to.equal(sorted.length);
        const probe = sorted[random(sorted.length)] as Head;
        const proof = tree.proof(probe.stream);
        expect(proof?.path.map((p) => p.toString('hex'))).to.deep.equal(inclusionPath(all, proof?.index ?? -1).map((p) => p.toString('hex')));
        expect(verifyInclusion(leafHash(leafInput(probe)), proof?.index ?? -1, sorted.length, proof?.path ?? [], root)).to.equal(true);
      }
    }
  });

  it('settles a large change in slices, letting the event loop run, and refuses use meanwhile', async () => {
    const tree = new HeadsTree();
    const heads: Head[] = [];
    const add = (stream: string) => {
      const head = { stream, revision: 0, hash: `${stream.length}`.padStart(64, '7') };
      heads.push(head);
      tree.set(head);
    };
    for (let i = 0; i < 20_000; i++) add(`s-${String(i).padStart(6, '0')}`);
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    const settled = tree.settle();
    expect(() => tree.rootHex()).to.throw(/settles/);
    await settled;
    add('a-first');
    await tree.settle();
    clearInterval(ticking);
    expect(turns).to.be.greaterThan(0);
    const sorted = heads.sort((a, b) => compareUtf8(a.stream, b.stream));
    expect(tree.rootHex()).to.equal(merkleRoot(sorted.map((h) => leafHash(leafInput(h)))).toString('hex'));
  });

  it('answers no proof for a stream it has no head of', () => {
    const tree = new HeadsTree();
    tree.set({ stream: 'a', revision: 0, hash: '0'.repeat(64) });
    expect(tree.proof('b')).to.equal(undefined);
  });
});
