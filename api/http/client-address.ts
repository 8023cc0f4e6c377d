// The address a request comes from, for throttling and logs. X-Forwarded-For is
// believed only as far as the hops are proxies the box was told to trust
// (BOXAUTH_TRUSTED_PROXIES, none by default): otherwise anyone could name any
// address, and every guess of a password would come from somewhere new.
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Config } from '../config.js';

/** IPv4 addresses that arrive as IPv4-mapped IPv6 (::ffff:10.0.0.1) are compared as IPv4. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

export type AddressOf = (req: IncomingMessage) => string;

/** Whether an address is one of the proxies the box trusts (BOXAUTH_TRUSTED_PROXIES). */
export function proxyCheck(trusted: Config['trustedProxies']): (address: string) => boolean {
  const proxies = new net.BlockList();
  for (const [address, prefix] of trusted) proxies.addSubnet(address, prefix, net.isIPv6(address) ? 'ipv6' : 'ipv4');
  return (address) => {
    const family = net.isIP(address);
    return family !== 0 && proxies.check(address, family === 6 ? 'ipv6' : 'ipv4');
  };
}

/** The TCP peer of a request, IPv4-mapped addresses as IPv4. */
export const peerAddress = (req: IncomingMessage): string => plain(req.socket.remoteAddress ?? 'unknown');

export function addressResolver(trusted: Config['trustedProxies']): AddressOf {
  const isProxy = proxyCheck(trusted);
  return (req) => {
    let address = peerAddress(req);
    if (!trusted.length || !isProxy(address)) return address;
    // From the nearest hop outwards, past trusted proxies only (as express's proxy-addr does).
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((h) => plain(h.trim()))
      .filter(Boolean);
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!net.isIP(hops[i]!)) break;
      address = hops[i]!;
      if (!isProxy(address)) break;
    }
    return address;
  };
}
