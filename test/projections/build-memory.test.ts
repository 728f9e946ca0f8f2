import { expect } from 'chai';
import { BuildMemory } from '../../src/platform/consumers/projection';

describe('BuildMemory (what a rebuild remembers of the rows it wrote)', () => {
  it('remembers rows up to its limit, then forgets them all and says it is no longer complete', () => {
    const memory = new BuildMemory(2);
    memory.remember('t|a', { id: 'a' });
    memory.remember('t|b', { id: 'b' });
    expect(memory.complete).to.equal(true);
    expect(memory.rows.get('t|a')).to.deep.equal({ id: 'a' });
    memory.remember('t|c', { id: 'c' });
    expect(memory.complete).to.equal(false);
    expect(memory.rows.size).to.equal(0);
    memory.remember('t|d', { id: 'd' });
    expect(memory.rows.size).to.equal(0);
  });
});
