import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { generateKeys, loadKeys, PEPPER_KEK_ID, type ServiceKeys } from '../../src/platform/keys';
import { tempDir } from '../support/temp';

describe('the key-encryption keys in the service keys', () => {
  const read = (dir: string) => JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')) as ServiceKeys;

  it('generates one into a new keys.json, and keeps it from one start to the next', () => {
    const dir = tempDir('tally-keys-file-');
    const first = loadKeys({ dataDir: dir, env: {} });
    expect(first.keks).to.have.length(1);
    expect(loadKeys({ dataDir: dir, env: {} }).keks).to.deep.equal(first.keks);
    expect(statSync(join(dir, 'keys.json')).mode & 0o777).to.equal(0o600);
  });

  it('adds one to a keys.json from before KEKs, and writes it there', () => {
    const dir = tempDir('tally-keys-old-');
    const { keks: _none, ...older } = generateKeys();
    writeFileSync(join(dir, 'keys.json'), JSON.stringify(older));
    const loaded = loadKeys({ dataDir: dir, env: {} });
    expect(loaded.keks).to.have.length(1);
    expect(read(dir).keks).to.deep.equal(loaded.keks);
    expect(read(dir).pepper).to.equal(older.pepper);
  });

  it('refuses an empty list rather than make a new key (every data key would be lost)', () => {
    const dir = tempDir('tally-keys-empty-');
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ ...generateKeys(), keks: [] }));
    expect(() => loadKeys({ dataDir: dir, env: {} })).to.throw('empty "keks"');
    expect(() => loadKeys({ dataDir: dir, env: { TALLY_KEYS: JSON.stringify({ ...generateKeys(), keks: [] }) } })).to.throw('TALLY_KEYS has an empty "keks"');
  });

  it('derives the same one from the pepper of a TALLY_KEYS without KEKs, on every node and at every start', () => {
    const { keks: _none, ...older } = generateKeys();
    const env = { TALLY_KEYS: JSON.stringify(older) };
    const [a, b] = [loadKeys({ dataDir: tempDir('tally-keys-a-'), env }), loadKeys({ dataDir: tempDir('tally-keys-b-'), env })];
    expect(a.keks.map((k) => k.kid)).to.deep.equal([PEPPER_KEK_ID]);
    expect(a.keks).to.deep.equal(b.keks);
    expect(a.keks[0]?.secret).not.to.equal(older.pepper);
  });
});
