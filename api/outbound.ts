// The checks of an address the box is asked to connect to by someone else (a Client ID Metadata
// Document's URL, a receiver of notices): the special-use ranges of RFC 6890 and the machine's own
// addresses are refused unless the operator allows them, and the check runs inside the lookup the
// connection itself uses, so a name that resolves to a public address for a check and a private
// one for the connection (DNS rebinding) cannot pass. api/document-fetch.ts and
// api/notices/post.ts both connect through `guardedLookup`.
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import type { LookupFunction } from 'node:net';

/** The special-use ranges of RFC 6890 (and its successors' registry) the box never connects to, unless allowed. */
const SPECIAL_USE: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['::ffff:0:0', 96, 'ipv6'],
  ['64:ff9b::', 96, 'ipv6'],
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001::', 23, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['2002::', 16, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

/** Ranges the operator allows although special-use or the box's own, as [address, prefix]. */
export interface AddressRules {
  allowed: readonly [string, number][];
}

function blockList(ranges: readonly (readonly [string, number])[]): net.BlockList {
  const list = new net.BlockList();
  for (const [a, prefix] of ranges) list.addSubnet(a, prefix, net.isIPv6(a) ? 'ipv6' : 'ipv4');
  return list;
}

// Made once, not at each check: a receiver's address is checked at every send (a Hook's at every
// token), and building these lists and reading the interfaces cost more than the rest of a send
// over a kept connection (make bench, the hook rows).
/** One list per family: a BlockList holding ::ffff:0:0/96 would match every IPv4 address as mapped. */
const SPECIAL = {
  ipv4: blockList(SPECIAL_USE.filter(([, , f]) => f === 'ipv4').map(([a, prefix]) => [a, prefix] as const)),
  ipv6: blockList(SPECIAL_USE.filter(([, , f]) => f === 'ipv6').map(([a, prefix]) => [a, prefix] as const)),
};
/**
 * Each allow-list made a list once (by its array: the rules of a moment share it until they are
 * read again), with its answers by address: a BlockList check makes a SocketAddress, which cost as
 * much again. At most ANSWERS_KEPT answers, then they start again (a flood of addresses holds nothing).
 */
const ALLOWED = new WeakMap<AddressRules['allowed'], { list: net.BlockList; answers: Map<string, boolean> }>();
const ANSWERS_KEPT = 256;

/**
 * The family of `address`, an address already (a lookup's, or a URL's literal one): an IPv6 one has
 * a colon, an IPv4 one none. net.isIPv6's expression cost more than the rest of a send's checks.
 */
const familyOf = (address: string): 'ipv4' | 'ipv6' => (address.includes(':') ? 'ipv6' : 'ipv4');

/** Whether `address` is in one of the ranges `rules` allows. */
export function addressAllowed(address: string, rules: AddressRules): boolean {
  let allowed = ALLOWED.get(rules.allowed);
  if (!allowed) ALLOWED.set(rules.allowed, (allowed = { list: blockList(rules.allowed), answers: new Map() }));
  let answer = allowed.answers.get(address);
  if (answer === undefined) {
    answer = allowed.list.check(address, familyOf(address));
    if (allowed.answers.size >= ANSWERS_KEPT) allowed.answers.clear();
    allowed.answers.set(address, answer);
  }
  return answer;
}

/** Why the box may not connect to `address` under `rules` (special-use or the box's own, not allowed); undefined: it may. */
export function addressProblem(address: string, rules: AddressRules, own: ReadonlySet<string> = ownAddresses()): string | undefined {
  if (addressAllowed(address, rules)) return undefined;
  const family = familyOf(address);
  // An IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return addressProblem(mapped, rules, own);
  if (own.has(address)) return `${address} is the box's own address`;
  return SPECIAL[family].check(address, family) ? `${address} is a special-use address (RFC 6890)` : undefined;
}

/** How long the interfaces read stand: an address added to the machine is the box's own within it. */
const OWN_MS = 1000;
let interfaces: { until: number; addresses: ReadonlySet<string> } | undefined;

/** The addresses of this machine's interfaces (read at most once an OWN_MS). */
export function ownAddresses(): ReadonlySet<string> {
  const now = Date.now();
  if (!interfaces || interfaces.until <= now) {
    const addresses = new Set(
      Object.values(os.networkInterfaces())
        .flat()
        .map((i) => i?.address)
        .filter((a): a is string => a !== undefined),
    );
    interfaces = { until: now + OWN_MS, addresses };
  }
  return interfaces.addresses;
}

/** The address a URL's host names literally (without an IPv6 literal's brackets), or undefined for a name. */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return net.isIP(host) ? host : undefined;
}

/**
 * A lookup that resolves as the system does, then refuses every address `addressProblem` refuses,
 * with the error `refuse` makes of why. One address refused refuses the name: the connection could
 * be made to any of them.
 */
export function guardedLookup(rules: AddressRules, refuse: (why: string) => Error): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses;
      const refused = list.map((a) => addressProblem(a.address, rules)).find(Boolean);
      if (refused || !list.length) return callback(refuse(refused ?? `${hostname} has no address`), '', 4);
      if (options.all) return callback(null, list, 4);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** An address or a CIDR (`10.0.0.0/8`, `fd00::/8`, `127.0.0.1`) as [address, prefix]; undefined when it is neither. */
export function parseCidr(entry: string): [address: string, prefix: number] | undefined {
  const [address = '', prefixRaw, ...more] = entry.split('/');
  const family = net.isIP(address);
  const max = family === 6 ? 128 : 32;
  const prefix = prefixRaw === undefined ? max : Number(prefixRaw);
  if (!family || more.length || prefix > max || (prefixRaw !== undefined && !/^\d+$/.test(prefixRaw))) return undefined;
  return [address, prefix];
}
