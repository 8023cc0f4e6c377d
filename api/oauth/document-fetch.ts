// The box's one fetch of an address a stranger names: a Client ID Metadata Document at its client_id
// URL (draft-ietf-oauth-client-id-metadata-document). Its guards, each a rule of the draft:
// - §8.6: "Authorization servers MUST NOT fetch a Client ID Metadata Document URL [...] that
//   resolve[s] to special-use IP addresses as defined in [RFC6890]." The address is checked after
//   the name is resolved, in the lookup the connection itself uses, so a name that resolves to a
//   public address for a check and a private one for the connection (DNS rebinding) cannot pass.
//   The box's own addresses (its interfaces) are refused as well, and the box's own URL by name.
//   An operator may allow some ranges (BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: a development box,
//   §8.6's "MAY relax this restriction to allow fetching from loopback addresses").
// - §5: "The authorization server MUST NOT automatically follow HTTP redirects"; any answer but 200
//   is an error.
// - §8.7: "stopping after a maximum number of bytes and treating the response as an error if that
//   limit is reached before the document has been fully read" (5 KiB).
// - a time limit on the whole exchange, connection to last byte: a slow server holds no request.
import dns from 'node:dns';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import type { LookupFunction } from 'node:net';
import { MAX_DOCUMENT_BYTES } from './client-metadata.js';

/** The special-use ranges of RFC 6890 (and its successors' registry) the box never fetches from, unless allowed. */
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

/** What the fetch is held to. */
export interface FetchRules {
  /** Ranges the operator allows although special-use or the box's own, as [address, prefix]. */
  allowed: readonly [string, number][];
  timeoutMs: number;
  /** The box's own base URL: never fetched, whatever its address. */
  boxUrl: string;
}

/** A document fetched: its JSON and the headers that say how long it stands. */
export interface FetchedDocument {
  body: unknown;
  cacheControl: string | undefined;
  expires: string | undefined;
  date: string | undefined;
}

/** Why a document could not be had: said to the log and (without the address) to the person. */
export class DocumentFetchError extends Error {}

/** Whether `address` may be fetched from under `rules`: not special-use nor the box's own, unless allowed. */
export function addressProblem(address: string, rules: Pick<FetchRules, 'allowed'>, own = ownAddresses()): string | undefined {
  const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
  const allowed = new net.BlockList();
  for (const [a, prefix] of rules.allowed) allowed.addSubnet(a, prefix, net.isIPv6(a) ? 'ipv6' : 'ipv4');
  if (allowed.check(address, family)) return undefined;
  // An IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return addressProblem(mapped, rules, own);
  if (own.has(address)) return `${address} is the box's own address`;
  // One list per family: a BlockList holding ::ffff:0:0/96 would match every IPv4 address as mapped.
  const special = new net.BlockList();
  for (const [a, prefix, f] of SPECIAL_USE) if (f === family) special.addSubnet(a, prefix, f);
  return special.check(address, family) ? `${address} is a special-use address (RFC 6890)` : undefined;
}

/** The addresses of this machine's interfaces. */
function ownAddresses(): Set<string> {
  return new Set(
    Object.values(os.networkInterfaces())
      .flat()
      .map((i) => i?.address)
      .filter((a): a is string => a !== undefined),
  );
}

/** A lookup that resolves as the system does, then refuses every address `addressProblem` refuses. */
function guardedLookup(rules: FetchRules): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses;
      const refused = list.map((a) => addressProblem(a.address, rules)).find(Boolean);
      // One address refused refuses the name: the connection could be made to any of them.
      if (refused || !list.length) return callback(new DocumentFetchError(refused ?? `${hostname} has no address`), '', 4);
      if (options.all) return callback(null, list, 4);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/** GET `url` (a Client Identifier URL, already checked: ./client-metadata.ts clientIdUrlProblem) under `rules`. */
export function fetchClientDocument(url: string, rules: FetchRules): Promise<FetchedDocument> {
  const target = new URL(url);
  // The box by its own name and port, whatever the scheme: its address may be one the operator allowed.
  if (target.host === new URL(rules.boxUrl).host) return Promise.reject(new DocumentFetchError('the URL is the box itself'));
  // A literal address is not looked up: it is checked here.
  const literal = net.isIP(target.hostname.replace(/^\[|\]$/g, '')) ? target.hostname.replace(/^\[|\]$/g, '') : undefined;
  const literalProblem = literal && addressProblem(literal, rules);
  if (literalProblem) return Promise.reject(new DocumentFetchError(literalProblem));
  return new Promise((resolve, reject) => {
    const request = https.request(
      target,
      {
        method: 'GET',
        headers: { Accept: 'application/json' },
        lookup: guardedLookup(rules),
        // No connection is kept or shared: each fetch resolves and checks the name afresh.
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status !== 200) {
          response.resume();
          return reject(
            new DocumentFetchError(
              status >= 300 && status < 400
                ? `it answered a redirect (${status}), which the box does not follow`
                : `it answered ${status}, not 200`,
            ),
          );
        }
        const media = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        // Draft §4: "MAY also be served with more specific content types as long as the response is JSON".
        if (media !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(media)) {
          response.resume();
          return reject(new DocumentFetchError(`it answered ${media || 'no content type'}, not JSON`));
        }
        if (Number(response.headers['content-length'] ?? 0) > MAX_DOCUMENT_BYTES) {
          request.destroy();
          return reject(new DocumentFetchError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_DOCUMENT_BYTES) {
            request.destroy();
            reject(new DocumentFetchError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`));
          } else chunks.push(chunk);
        });
        response.on('error', () => reject(new DocumentFetchError('the answer broke off')));
        response.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return reject(new DocumentFetchError('the document is not JSON'));
          }
          const header = (name: string): string | undefined => {
            const v = response.headers[name];
            return Array.isArray(v) ? v.join(', ') : v;
          };
          resolve({ body, cacheControl: header('cache-control'), expires: header('expires'), date: header('date') });
        });
      },
    );
    // The whole exchange, not each idle gap: a server that trickles a byte a second is cut off too.
    const timer = setTimeout(() => {
      request.destroy();
      reject(new DocumentFetchError(`no whole answer within ${rules.timeoutMs} ms`));
    }, rules.timeoutMs);
    request.on('close', () => clearTimeout(timer));
    request.on('error', (err) =>
      reject(
        err instanceof DocumentFetchError
          ? err
          : new DocumentFetchError(`it could not be reached (${(err as NodeJS.ErrnoException).code ?? err.name})`),
      ),
    );
    request.end();
  });
}
