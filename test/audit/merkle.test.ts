import { expect } from 'chai';
import { jcs } from '../../src/platform/audit/canonical-json';
import { BlockedTree, type Head, headLeaf, leafInput, MerkleStream } from '../../src/platform/audit/merkle-stream';
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

describe('audit: the tree from leaves streamed in order', () => {
  it('orders streams by UTF-8 bytes, not UTF-16 units', () => {
    expect(['b', '\uffff', '😀', 'a'].sort(compareUtf8)).to.deep.equal(['a', 'b', '\uffff', '😀']);
    expect(sortUtf8(['b', '\uffff', '😀', 'a'])).to.deep.equal(['a', 'b', '\uffff', '😀']);
    expect(sortUtf8(['b', 'c', 'a'])).to.deep.equal(['a', 'b', 'c']);
    expect(Buffer.compare(Buffer.from('\uffff'), Buffer.from('😀'))).to.equal(-1);
  });

  it("gives the recursive definition's root for every count from 0 to 70", () => {
    for (let n = 0; n <= 70; n++) {
      const stream = new MerkleStream();
      for (const leaf of leaves(n)) stream.push(leaf);
      expect(stream.root().toString('hex'), `${n} leaves`).to.equal(merkleRoot(leaves(n)).toString('hex'));
      expect(stream.size).to.equal(n);
    }
  });

  it('keeps a tree as its runs of leaves, and proves every leaf of trees of 1 to 40 leaves as RFC 9162 does', async () => {
    for (const blockLeaves of [1, 4, 8]) {
      for (let n = 1; n <= 40; n++) {
        const heads: Head[] = Array.from({ length: n }, (_, i) => ({ stream: `s-${String(i).padStart(3, '0')}`, revision: i, hash: `${i}`.padStart(64, '0') }));
        const all = heads.map(headLeaf);
        const root = merkleRoot(all);
        async function* pages() {
          for (let i = 0; i < n; i += 7) yield heads.slice(i, i + 7).map((h) => ({ stream: h.stream, leaf: headLeaf(h) }));
        }
        const tree = await BlockedTree.fold(pages(), blockLeaves);
        expect(tree.root().equals(root), `${n} leaves in runs of ${blockLeaves}`).to.equal(true);
        for (let m = 0; m < n; m++) {
          const block = tree.blockOf(heads[m]?.stream as string);
          const start = block * blockLeaves;
          const proof = tree.proof(block, all.slice(start, start + tree.blockSize(block)), m - start);
          expect(proof?.index, `${m} of ${n}`).to.equal(m);
          expect(proof?.path.map((p) => p.toString('hex'))).to.deep.equal(inclusionPath(all, m).map((p) => p.toString('hex')));
          expect(verifyInclusion(all[m] as Buffer, m, n, proof?.path ?? [], root)).to.equal(true);
        }
      }
    }
  });

  it('gives no proof from leaves that are not the run it was folded from', async () => {
    const heads: Head[] = ['a', 'b', 'c', 'd', 'e'].map((stream) => ({ stream, revision: 0, hash: '0'.repeat(64) }));
    async function* pages() {
      yield heads.map((h) => ({ stream: h.stream, leaf: headLeaf(h) }));
    }
    const tree = await BlockedTree.fold(pages(), 4);
    expect(tree.blockOf('0')).to.equal(-1);
    expect(tree.blockOf('e')).to.equal(1);
    const changed = heads.slice(0, 4).map((h, i) => headLeaf(i === 2 ? { ...h, revision: 1 } : h));
    expect(tree.proof(0, changed, 1)).to.equal(undefined);
    expect(tree.proof(0, changed.slice(0, 3), 1)).to.equal(undefined);
  });

  it('has the leaf input the formats fix: the canonical JSON of {stream, revision, hash}', () => {
    expect(leafInput({ stream: 'a', revision: 1, hash: 'ff' })).to.equal(jcs({ hash: 'ff', revision: 1, stream: 'a' }));
  });
});
