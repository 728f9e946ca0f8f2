import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import proxyAddr from 'proxy-addr';

/** Who the client is when the socket has no peer address (it closed before we asked). */
export const UNKNOWN_CLIENT = 'unknown';

const peerOf = (req: IncomingMessage) => req.socket.remoteAddress ?? UNKNOWN_CLIENT;

/**
 * Who the client is (the per-IP limit, a card application's `ipAddress`): the socket's peer, unless
 * TRUST_PROXY says which proxies in front may name it in X-Forwarded-For (a hop count, or their
 * addresses/CIDRs). Anyone can send the header, so without that setting it is never believed; and a
 * forwarded value that is not an IP address (text, markup, control bytes) is ignored for the peer.
 */
export function clientIpResolver(trustProxy: string | undefined): (req: IncomingMessage) => string {
  const setting = trustProxy?.trim();
  if (!setting || setting === 'false' || setting === '0') return peerOf;
  const trust = /^\d+$/.test(setting)
    ? (_address: string, hop: number) => hop < Number(setting)
    : proxyAddr.compile(
        setting
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
  return (req) => {
    const named = proxyAddr(req, trust);
    return isIP(named) ? named : peerOf(req);
  };
}
