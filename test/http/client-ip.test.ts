import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { clientIpResolver } from '../../src/platform/http/client-ip';
import { startTestApp } from '../support/app';

const request = (peer: string, forwardedFor?: string) =>
  ({
    socket: { remoteAddress: peer },
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
    connection: { remoteAddress: peer },
  }) as unknown as IncomingMessage;

describe('TRUST_PROXY: who the client is for the per-IP limit', () => {
  it('never believes X-Forwarded-For while unset (anyone can send it)', () => {
    const ip = clientIpResolver(undefined);
    expect(ip(request('10.0.0.5', '203.0.113.9'))).to.equal('10.0.0.5');
    expect(clientIpResolver('false')(request('10.0.0.5', '203.0.113.9'))).to.equal('10.0.0.5');
  });

  it('takes the address the trusted hops name, and no further', () => {
    const oneHop = clientIpResolver('1');
    expect(oneHop(request('10.0.0.5', '203.0.113.9'))).to.equal('203.0.113.9');
    // A client that forges a hop of its own does not get past the one proxy trusted.
    expect(oneHop(request('10.0.0.5', '198.51.100.1, 203.0.113.9'))).to.equal('203.0.113.9');
    expect(oneHop(request('10.0.0.5'))).to.equal('10.0.0.5');
  });

  it('believes only the listed proxies (addresses or CIDRs)', () => {
    const listed = clientIpResolver('10.0.0.0/8, 192.0.2.7');
    expect(listed(request('10.0.0.5', '203.0.113.9'))).to.equal('203.0.113.9');
    expect(listed(request('192.0.2.7', '198.51.100.1, 10.1.1.1'))).to.equal('198.51.100.1');
    // A peer not listed is the client, whatever it says.
    expect(listed(request('198.51.100.20', '203.0.113.9'))).to.equal('198.51.100.20');
  });

  it('refuses to start on a setting that is not an address, a CIDR or a hop count', () => {
    expect(() => clientIpResolver('not-an-ip')).to.throw();
  });

  it('over HTTP: without TRUST_PROXY, changing X-Forwarded-For does not escape the per-IP limit', async () => {
    const app = await startTestApp({ rateLimit: { partnerRps: 0, userRps: 0, ipRps: 1 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await app.http.get('/healthz').set('X-Forwarded-For', `203.0.113.${i}`)).status);
      expect(statuses).to.include(429);
    } finally {
      await app.close();
    }
    const behindProxy = await startTestApp({ rateLimit: { partnerRps: 0, userRps: 0, ipRps: 1 }, trustProxy: 'loopback' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await behindProxy.http.get('/healthz').set('X-Forwarded-For', `203.0.113.${i}`)).status);
      expect(statuses).to.deep.equal([200, 200, 200, 200, 200]);
    } finally {
      await behindProxy.close();
    }
  });
});
