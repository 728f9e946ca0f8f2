import { expect } from 'chai';
import { progressBar } from '../../src/cli/progress';

describe('the rebuild progress bar', () => {
  it('redraws one line on a terminal and ends it with a newline', () => {
    const written: string[] = [];
    const bar = progressBar((t) => written.push(t), { total: 10, unit: 'events', tty: true });
    bar.update(5);
    bar.finish(10);
    expect(written).to.deep.equal([`\r[${'#'.repeat(15)}${'-'.repeat(15)}] 5/10 events`, `\r[${'#'.repeat(30)}] 10/10 events\n`]);
  });

  it('prints one line per update elsewhere, without repeating the last one', () => {
    const written: string[] = [];
    const bar = progressBar((t) => written.push(t), { total: 4, unit: 'events', tty: false });
    bar.update(4);
    bar.finish(4);
    expect(written).to.deep.equal([`[${'#'.repeat(30)}] 4/4 events\n`]);
  });

  it('clamps at full when more events arrive than were counted, and counts alone without a total', () => {
    const written: string[] = [];
    progressBar((t) => written.push(t), { total: 2, unit: 'events', tty: false }).update(3);
    progressBar((t) => written.push(t), { unit: 'events', tty: false }).update(1234);
    expect(written).to.deep.equal([`[${'#'.repeat(30)}] 3/3 events\n`, '1,234 events\n']);
  });
});
