import { promises as dns } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { DomainError } from '../domain/decider';

/** Where a notification must never go outside sandbox mode: the service's own networks and their neighbours. */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

export const BLOCKED_TARGET = 'url must not point to a private, loopback or link-local address';

/** True for private, loopback, link-local and other non-public addresses (IPv4-mapped IPv6 included). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped?.[1]) return BLOCKED.check(mapped[1], 'ipv4');
  return BLOCKED.check(address, 'ipv6');
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/** A host name's addresses, as dns.lookup with `all` answers them: the system's, or a test's own (DNS rebinding tests). */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (host) => dns.lookup(host, { all: true });

/** Resolves a host name (bounded in time) to all its addresses. */
function resolveAll(host: string, timeoutMs: number, resolve: Resolver): Promise<Array<{ address: string; family: number }>> {
  return new Promise((done, reject) => {
    const timer = setTimeout(() => reject(new Error(`DNS lookup of ${host} took over ${timeoutMs} ms`)), timeoutMs);
    resolve(host).then(
      (addresses) => {
        clearTimeout(timer);
        done(addresses);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * The PUT-time check: the host must resolve, and to public addresses only. Delivery checks again
 * (guardedLookup): a name may be repointed at an internal address later (DNS rebinding).
 */
export async function checkPublicTarget(url: URL, resolve: Resolver = systemResolver, timeoutMs = 5_000): Promise<void> {
  const host = hostOf(url);
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await resolveAll(host, timeoutMs, resolve)).map((a) => a.address);
    } catch {
      throw new DomainError('invalid', 'url host does not resolve');
    }
  }
  if (addresses.length === 0 || addresses.some(isBlockedAddress)) throw new DomainError('invalid', BLOCKED_TARGET);
}

/**
 * A `lookup` for node's http(s).request that refuses blocked addresses: the connection goes to the
 * very address that was checked, so a name that changes between a check and the connect cannot slip
 * through. Hosts given as literal addresses skip `lookup`: the sender checks those itself.
 */
export function guardedLookup(resolve: Resolver = systemResolver, timeoutMs = 5_000): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(hostname, timeoutMs, resolve).then(
      (list) => {
        if (list.length === 0 || list.some((a) => isBlockedAddress(a.address)))
          return callback(new Error(`refused: ${hostname} resolves to a non-public address`), '', undefined);
        if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
        const first = list[0] as { address: string; family: number };
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', undefined),
    );
  };
}

export { hostOf };
