import { expect } from 'chai';
import { fixed, money, moneyUnits } from '../../src/domain/ledger/money';
import { heldUnits } from '../../src/domain/ledger/account';
import { bucketMapOf, emptyBucketMap, entriesOf, getIn, setIn } from '../../src/platform/bucket-map';

describe('a bucket map (persistent, by a hash of the key)', () => {
  it('sets, replaces and removes entries into new maps, leaving the map before as it was', () => {
    const one = setIn(setIn(emptyBucketMap<string>(), 'a', '1'), 'b', '2');
    const two = setIn(setIn(one, 'a', '3'), 'b', undefined);
    expect([one.toJSON(), one.size]).to.deep.equal([{ a: '1', b: '2' }, 2]);
    expect([two.toJSON(), two.size]).to.deep.equal([{ a: '3' }, 1]);
    expect(setIn(two, 'missing', undefined)).to.equal(two);
    expect(emptyBucketMap<string>().size).to.equal(0);
    expect([getIn(two, 'b'), getIn(two, 'a'), getIn(two, 'constructor'), getIn(two, 'toString')]).to.deep.equal([undefined, '3', undefined, undefined]);
  });

  it('changes one bucket per change and shares the other 63', () => {
    const many = bucketMapOf(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`hold-${i}`, '1'])));
    const next = setIn(many, 'hold-5000', '2');
    expect(next.buckets.filter((bucket, i) => bucket !== many.buckets[i])).to.have.length(1);
    expect([next.size, entriesOf(next).length]).to.deep.equal([5_001, 5_001]);
  });

  it('answers as a record would through many changes, and prints as one', () => {
    let map = emptyBucketMap<string>();
    const record: Record<string, string> = {};
    for (let i = 0; i < 2_000; i++) {
      const key = `k${(i * 7919) % 613}`;
      if (i % 3 === 2) {
        map = setIn(map, key, undefined);
        delete record[key];
      } else {
        map = setIn(map, key, String(i));
        record[key] = String(i);
      }
      expect(map.size).to.equal(Object.keys(record).length);
    }
    expect(JSON.parse(JSON.stringify(map))).to.deep.equal(record);
    expect(bucketMapOf(record).toJSON()).to.deep.equal(record);
    for (const [key, value] of Object.entries(record)) expect(getIn(map, key)).to.equal(value);
  });

  it("sums an account's holds from its buckets' sums, in units of 10^-8, as adding every hold would", () => {
    let holds = emptyBucketMap<string>();
    let plain = money(0);
    for (let i = 0; i < 500; i++) {
      const amount = fixed(money(i).div(7));
      holds = setIn(holds, `t${i}`, amount);
      plain = plain.plus(money(amount));
      if (i % 5 === 0) {
        plain = plain.minus(money(getIn(holds, `t${i - 1}`) ?? '0'));
        holds = setIn(holds, `t${i - 1}`, undefined);
      }
      expect(heldUnits(holds), `after ${i}`).to.equal(moneyUnits(fixed(plain)));
    }
  });
});
