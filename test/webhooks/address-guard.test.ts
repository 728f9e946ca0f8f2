import { expect } from 'chai';
import { embeddedIpv4, ipv6Groups, isBlockedAddress } from '../../src/providers/notifications/address-guard';

/**
 * The SSRF guard's table, written out here rather than read from the guard: a range narrowed or
 * deleted there fails on its first or last address. Each range's neighbours outside it are public,
 * so a range widened by mistake fails too.
 */
const BLOCKED_RANGES: Array<{ range: string; first: string; last: string; before?: string; after?: string }> = [
  { range: '0.0.0.0/8', first: '0.0.0.0', last: '0.255.255.255', after: '1.0.0.0' },
  { range: '10.0.0.0/8', first: '10.0.0.0', last: '10.255.255.255', before: '9.255.255.255', after: '11.0.0.0' },
  { range: '100.64.0.0/10', first: '100.64.0.0', last: '100.127.255.255', before: '100.63.255.255', after: '100.128.0.0' },
  { range: '127.0.0.0/8', first: '127.0.0.0', last: '127.255.255.255', before: '126.255.255.255', after: '128.0.0.0' },
  { range: '169.254.0.0/16', first: '169.254.0.0', last: '169.254.255.255', before: '169.253.255.255', after: '169.255.0.0' },
  { range: '172.16.0.0/12', first: '172.16.0.0', last: '172.31.255.255', before: '172.15.255.255', after: '172.32.0.0' },
  { range: '192.0.0.0/24', first: '192.0.0.0', last: '192.0.0.255', before: '191.255.255.255', after: '192.0.1.0' },
  { range: '192.168.0.0/16', first: '192.168.0.0', last: '192.168.255.255', before: '192.167.255.255', after: '192.169.0.0' },
  { range: '198.18.0.0/15', first: '198.18.0.0', last: '198.19.255.255', before: '198.17.255.255', after: '198.20.0.0' },
  { range: '224.0.0.0/4', first: '224.0.0.0', last: '239.255.255.255', before: '223.255.255.255' },
  { range: '240.0.0.0/4', first: '240.0.0.0', last: '255.255.255.255' },
  { range: '::/128', first: '::', last: '::' },
  { range: '::1/128', first: '::1', last: '::1' },
  { range: 'NAT64 64:ff9b::/96', first: '64:ff9b::', last: '64:ff9b::ffff:ffff', before: '64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff', after: '64:ff9b:0:0:0:1::' },
  { range: 'NAT64 local 64:ff9b:1::/48', first: '64:ff9b:1::', last: '64:ff9b:1:ffff:ffff:ffff:ffff:ffff', after: '64:ff9b:2::' },
  { range: 'discard 100::/64', first: '100::', last: '100::ffff:ffff:ffff:ffff', before: 'ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', after: '100:0:0:1::' },
  {
    range: 'Teredo 2001::/32',
    first: '2001::',
    last: '2001:0:ffff:ffff:ffff:ffff:ffff:ffff',
    before: '2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    after: '2001:1::',
  },
  {
    range: '2001:db8::/32',
    first: '2001:db8::',
    last: '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff',
    before: '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff',
    after: '2001:db9::',
  },
  { range: 'fc00::/7', first: 'fc00::', last: 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', before: 'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' },
  { range: 'fe80::/10', first: 'fe80::', last: 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', before: 'fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff' },
  { range: 'fec0::/10', first: 'fec0::', last: 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' },
  { range: 'ff00::/8', first: 'ff00::', last: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' },
];

/** IPv6 addresses that carry an IPv4 address, and how each is judged. */
const CARRIERS: Array<[string, boolean]> = [
  ['::127.0.0.1', true], // IPv4-compatible
  ['::7f00:1', true],
  ['::a00:1', true],
  ['::808:808', false],
  ['::ffff:127.0.0.1', true], // mapped
  ['::ffff:7f00:1', true],
  ['::ffff:169.254.169.254', true],
  ['::ffff:8.8.8.8', false],
  ['::ffff:0:7f00:1', true], // translated
  ['::ffff:0:a9fe:a9fe', true],
  ['::ffff:0:808:808', false],
  ['2002:7f00:1::1', true], // 6to4
  ['2002:a00:1::', true],
  ['2002:c0a8:101:1::1', true],
  ['2002:808:808::1', false],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true], // Teredo, refused whole
  ['64:ff9b::808:808', true], // NAT64, refused whole
  ['2606:4700:4700::1111', false], // an ordinary public address
];

describe('webhook SSRF guard: the blocked address table', () => {
  for (const r of BLOCKED_RANGES) {
    it(`refuses the first and last address of ${r.range}, and no neighbour outside it`, () => {
      expect(isBlockedAddress(r.first), r.first).to.equal(true);
      expect(isBlockedAddress(r.last), r.last).to.equal(true);
      if (r.before) expect(isBlockedAddress(r.before), r.before).to.equal(false);
      if (r.after) expect(isBlockedAddress(r.after), r.after).to.equal(false);
    });
  }

  it('judges an IPv6 address that carries an IPv4 address by that address, and refuses Teredo and NAT64 whole', () => {
    for (const [address, blocked] of CARRIERS) expect(isBlockedAddress(address), address).to.equal(blocked);
  });

  it('refuses what is not an address at all', () => {
    for (const text of ['', 'localhost', '1.2.3', '::g', '1::2::3', '256.0.0.1']) expect(isBlockedAddress(text), text).to.equal(true);
  });

  it('reads IPv6 text in all its spellings', () => {
    expect(ipv6Groups('::')).to.deep.equal([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('::ffff:1.2.3.4')).to.deep.equal([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(ipv6Groups('FE80::1%eth0')).to.deep.equal([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Groups('1:2:3:4:5:6:7:8')).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ipv6Groups('1:2:3:4:5:6:7')).to.equal(null);
    expect(ipv6Groups('1:2:3:4::5:6:7:8')).to.equal(null);
    expect(embeddedIpv4([0x2002, 0x7f00, 1, 0, 0, 0, 0, 1])).to.equal('127.0.0.1');
    expect(embeddedIpv4([0x2606, 0x4700, 0, 0, 0, 0, 0, 0x1111])).to.equal(null);
  });
});
