import { existsSync } from 'node:fs';
import { expect } from 'chai';
import pino from 'pino';
import { ModuleThread } from '../../src/platform/module-thread';
import { threadNice } from '../support/threads';

const ECHO = require.resolve('../fixtures/module-thread-echo');

/** A module in a worker thread of its own, called by name (src/platform/module-thread.ts; the checkpointer's thread uses it). */
describe('a module thread', () => {
  const events: Array<{ name: string; payload: unknown }> = [];
  const exits: number[] = [];
  let thread: ModuleThread;

  beforeEach(() => {
    events.length = 0;
    exits.length = 0;
    thread = new ModuleThread({
      file: ECHO,
      data: { greeting: 'hello' },
      log: pino({ level: 'silent' }),
      onEvent: (name, payload) => events.push({ name, payload }),
      onExit: (code) => exits.push(code),
    });
  });
  afterEach(() => thread.stop());

  it('answers calls by name with the data it was started with, and tells events before the answer of the call that told them', async () => {
    expect(await thread.call('echo', 1, 'two')).to.deep.equal({ greeting: 'hello', args: [1, 'two'] });
    expect(await thread.call('tell', 'signed')).to.equal('told');
    expect(events).to.deep.equal([{ name: 'signed', payload: { told: true } }]);
  });

  it("fails a call with the module's error, and refuses a method the module lacks", async () => {
    let failed: unknown;
    await thread.call('fail').catch((error) => (failed = error));
    expect((failed as Error).message).to.equal('it failed in there');
    await thread.call('nothing').catch((error) => (failed = error));
    expect((failed as Error).message).to.equal('no such call: nothing');
    expect(await thread.call('echo')).to.deep.equal({ greeting: 'hello', args: [] });
  });

  it('fails the calls in flight when the worker ends on its own, says so, and starts a new one at the next call', async () => {
    const results = await Promise.allSettled([thread.call('exit'), thread.call('echo', 'lost')]);
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.status))).to.deep.equal([
      'the module thread exited (3)',
      'the module thread exited (3)',
    ]);
    expect(exits).to.deep.equal([3]);
    expect(await thread.call('echo', 'again')).to.deep.equal({ greeting: 'hello', args: ['again'] });
  });

  it("calls the module's stop and ends the worker, which is not an exit of its own", async () => {
    await thread.call('echo');
    await thread.stop();
    await thread.stop();
    expect(exits).to.deep.equal([]);
  });

  it('runs a background module at the lowest CPU priority, and only its own thread (Linux)', async function () {
    if (!existsSync('/proc/thread-self/stat')) this.skip();
    const before = threadNice();
    const background = new ModuleThread({ file: ECHO, data: { greeting: 'hi' }, log: pino({ level: 'silent' }), onEvent: () => {}, background: true });
    try {
      expect(await background.call('nice')).to.equal(19);
      expect(await thread.call('nice')).to.equal(before);
      expect(threadNice()).to.equal(before);
    } finally {
      await background.stop();
    }
  });
});
