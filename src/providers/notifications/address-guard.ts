import { promises as dns } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { NOTIFICATION_REFUSALS } from '../../domain/notifications/refusals';

/** Where a notification must never go outside sandbox mode: the service's own networks and their neighbours. */
export const BLOCKED_IPV4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
/**
 * IPv6 ranges refused whole. Those that carry an IPv4 address the guard can read (compatible, mapped,
 * translated, 6to4) are judged by that address instead (embeddedIpv4); NAT64 and Teredo are refused
 * whole: where they lead is the translator's or the relay's choice, not the address's.
 */
export const BLOCKED_IPV6: ReadonlyArray<readonly [string, number]> = [
  ['64:ff9b::', 96], // NAT64, well-known prefix
  ['64:ff9b:1::', 48], // NAT64, local use
  ['100::', 64], // discard
  ['2001::', 32], // Teredo
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const BLOCKED = new BlockList();
for (const [net, prefix] of BLOCKED_IPV4) BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of BLOCKED_IPV6) BLOCKED.addSubnet(net, prefix, 'ipv6');

export const BLOCKED_TARGET = NOTIFICATION_REFUSALS.urlPrivateAddress.template;

/** True for private, loopback, link-local and other non-public addresses (IPv4 carried in IPv6 judged as IPv4). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family !== 6) return true;
  const groups = ipv6Groups(address);
  if (!groups) return true;
  const carried = embeddedIpv4(groups);
  if (carried !== null) return BLOCKED.check(carried, 'ipv4');
  return BLOCKED.check(groups.map((g) => g.toString(16)).join(':'), 'ipv6');
}

/** An IPv6 address's eight 16-bit groups (a zone index dropped, a dotted IPv4 tail read), or null. */
export function ipv6Groups(address: string): number[] | null {
  let text = address.replace(/%.*$/, '').toLowerCase();
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const bytes = dotted.slice(2, 6).map(Number);
    if (bytes.some((b) => b > 255)) return null;
    const [a, b, c, d] = bytes as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? Number.parseInt(g, 16) : Number.NaN)) : []);
  const head = parse(halves[0]);
  const tail = parse(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...new Array<number>(halves.length === 1 ? 0 : missing).fill(0), ...tail];
  return groups.some(Number.isNaN) ? null : groups;
}

const dottedOf = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/**
 * The IPv4 address an IPv6 address carries where its prefix says so: IPv4-compatible `::/96` (`::` and
 * `::1` read as 0.0.0.0 and 0.0.0.1, both refused), mapped `::ffff:0:0/96`, translated
 * `::ffff:0:0:0/96`, 6to4 `2002::/16` (bits 16-47). Null for any other address.
 */
export function embeddedIpv4(groups: readonly number[]): string | null {
  const [g0, g1, g2, , g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const zeroUpTo = (n: number) => groups.slice(0, n).every((g) => g === 0);
  if (zeroUpTo(6)) return dottedOf(g6, g7);
  if (zeroUpTo(5) && g5 === 0xffff) return dottedOf(g6, g7);
  if (zeroUpTo(4) && g4 === 0xffff && g5 === 0) return dottedOf(g6, g7);
  if (g0 === 0x2002) return dottedOf(g1, g2);
  return null;
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
      throw NOTIFICATION_REFUSALS.urlHostUnresolvable();
    }
  }
  if (addresses.length === 0 || addresses.some(isBlockedAddress)) throw NOTIFICATION_REFUSALS.urlPrivateAddress();
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
