import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { isOutage, Outage } from '../../src/platform/outage';
import { StoreUnavailableError, WrongExpectedRevisionError } from '../../src/eventstore/port';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A pino logger whose lines land in `lines`, parsed. */
function capture(): { log: pino.Logger; lines: Array<{ level: number; msg: string; err?: { message: string }; downMs?: number; failures?: number }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('store outage tracking', () => {
  describe('isOutage', () => {
    it('knows a store out of reach', () => {
      expect(isOutage(new StoreUnavailableError(refused()))).to.equal(true);
      expect(isOutage(refused())).to.equal(true);
      expect(isOutage(new Error('Connection terminated unexpectedly'))).to.equal(true);
      expect(isOutage(new Error('Client has encountered a connection error and is not queryable'))).to.equal(true);
      expect(isOutage(new Error('timeout exceeded when trying to connect'))).to.equal(true);
      expect(isOutage(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).to.equal(true);
      expect(isOutage(Object.assign(new Error('the database system is starting up'), { code: '57P03' }))).to.equal(true);
      expect(isOutage(Object.assign(new Error('connection failure'), { code: '08006' }))).to.equal(true);
    });

    it('does not take a bug or a refusal for one', () => {
      expect(isOutage(new Error('boom'))).to.equal(false);
      expect(isOutage(Object.assign(new Error('duplicate key'), { code: '23505' }))).to.equal(false);
      expect(isOutage(Object.assign(new Error('syntax error'), { code: '42601' }))).to.equal(false);
      expect(isOutage(new WrongExpectedRevisionError('s', 1, 2))).to.equal(false);
      expect(isOutage(undefined)).to.equal(false);
      expect(isOutage('Connection terminated')).to.equal(false);
    });
  });

  describe('Outage', () => {
    it('logs the first failure once, counts the rest, and logs once when available() ends it', () => {
      const { log, lines } = capture();
      const outage = new Outage(log, async () => Promise.reject(refused()), 60_000);
      try {
        expect(outage.down).to.equal(false);
        outage.available();
        expect(lines).to.have.length(0);
        for (let i = 0; i < 1_000; i++) outage.unavailable(refused());
        expect(outage.down).to.equal(true);
        expect(lines.map((l) => [l.level, l.msg])).to.deep.equal([[50, 'store unavailable: answering 503 until it is back']]);
        expect(lines[0]?.err?.message).to.equal('connect ECONNREFUSED 127.0.0.1:5432');
        outage.available();
        outage.available();
        expect(outage.down).to.equal(false);
        expect(lines.map((l) => [l.level, l.msg])).to.deep.equal([
          [50, 'store unavailable: answering 503 until it is back'],
          [40, 'store is back'],
        ]);
        expect(lines[1]?.failures).to.equal(1_000);
        expect(lines[1]?.downMs).to.be.a('number');
        // A second outage is a change again: logged again, counted afresh.
        outage.unavailable(refused());
        outage.available();
        expect(lines).to.have.length(4);
        expect(lines[3]?.failures).to.equal(1);
      } finally {
        outage.close();
      }
    });

    it('probes while down and logs the store back at the first probe that succeeds', async () => {
      const { log, lines } = capture();
      let up = false;
      let probes = 0;
      const outage = new Outage(
        log,
        async () => {
          probes++;
          if (!up) throw refused();
        },
        10,
      );
      try {
        await sleep(50);
        expect(probes, 'no probe while the store is up').to.equal(0);
        outage.unavailable(refused());
        await sleep(60);
        expect(probes).to.be.greaterThan(1);
        expect(outage.down).to.equal(true);
        expect(lines).to.have.length(1);
        up = true;
        const deadline = Date.now() + 2_000;
        while (outage.down && Date.now() < deadline) await sleep(5);
        expect(outage.down).to.equal(false);
        expect(lines.map((l) => l.msg)).to.deep.equal(['store unavailable: answering 503 until it is back', 'store is back']);
        const after = probes;
        await sleep(50);
        expect(probes, 'no probe once it is back').to.equal(after);
      } finally {
        outage.close();
      }
    });

    it('stops probing when closed', async () => {
      const { log } = capture();
      let probes = 0;
      const outage = new Outage(
        log,
        async () => {
          probes++;
          throw refused();
        },
        5,
      );
      outage.unavailable(refused());
      await sleep(30);
      outage.close();
      const seen = probes;
      await sleep(30);
      expect(probes).to.equal(seen);
    });
  });
});
