// The box's one fetch of an address a stranger names: a Client ID Metadata Document at its client_id
// URL (draft-ietf-oauth-client-id-metadata-document), and a Client's JWK Set at its jwks_uri
// (./client-assertion.ts), held to the same rules. Its guards, each a rule of the draft:
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
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Config } from '../config.js';
import { addressProblem, guardedLookup, literalAddress, type AddressRules } from '../outbound.js';
import { MAX_DOCUMENT_BYTES } from './client-metadata.js';

/** What the fetch is held to. */
export interface FetchRules extends AddressRules {
  timeoutMs: number;
  /** The box's own base URL: never fetched, whatever its address. */
  boxUrl: string;
  /** The most bytes of a document read (default: a Client ID Metadata Document's, MAX_DOCUMENT_BYTES). */
  maxBytes?: number;
  /** The Accept header (default application/json); a JWK Set may be served as application/jwk-set+json only (kube-apiserver). */
  accept?: string;
  /** PEM certificates to trust instead of the system's roots (an endpoint an admin declared with its private CA). */
  ca?: string;
}

/**
 * The rules of every document a client names (its metadata document, jwks_uri, sector document):
 * the box's client-metadata settings (BOXAUTH_CLIENT_METADATA_*), and never the box itself.
 */
export const clientDocumentRules = (config: Pick<Config, 'clientMetadata' | 'baseUrl'>): FetchRules => ({
  allowed: config.clientMetadata.allowedAddresses,
  timeoutMs: config.clientMetadata.timeoutMs,
  boxUrl: config.baseUrl,
});

/** A document fetched: its JSON and the headers that say how long it stands. */
export interface FetchedDocument {
  body: unknown;
  cacheControl: string | undefined;
  expires: string | undefined;
  date: string | undefined;
}

/** Why a document could not be had: said to the log and (without the address) to the person. */
export class DocumentFetchError extends Error {}

/**
 * The guard refused the address a name resolved to (or a literal one): its message names that
 * address, which is for the box's log, not for whoever sent the URL (it would map the box's
 * network for them: which names resolve where, from inside).
 */
export class AddressRefused extends DocumentFetchError {}

/** A lookup that refuses every special-use address, or the box's own, that `rules` does not allow (../outbound.ts). */
const lookupUnder = (rules: FetchRules): LookupFunction => guardedLookup(rules, (why) => new AddressRefused(why));

/** GET `url` (a Client Identifier URL, already checked: ./client-metadata.ts clientIdUrlProblem) under `rules`. */
export function fetchClientDocument(url: string, rules: FetchRules): Promise<FetchedDocument> {
  const target = new URL(url);
  const maxBytes = rules.maxBytes ?? MAX_DOCUMENT_BYTES;
  // The box by its own name and port, whatever the scheme: its address may be one the operator allowed.
  if (target.host === new URL(rules.boxUrl).host) return Promise.reject(new DocumentFetchError('the URL is the box itself'));
  // A literal address is not looked up: it is checked here.
  const literal = literalAddress(target);
  const literalProblem = literal && addressProblem(literal, rules);
  if (literalProblem) return Promise.reject(new AddressRefused(literalProblem));
  return new Promise((resolve, reject) => {
    const request = https.request(
      target,
      {
        method: 'GET',
        headers: { Accept: rules.accept ?? 'application/json' },
        lookup: lookupUnder(rules),
        ...(rules.ca ? { ca: rules.ca } : {}),
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
        if (Number(response.headers['content-length'] ?? 0) > maxBytes) {
          request.destroy();
          return reject(new DocumentFetchError(`the document is larger than ${maxBytes} bytes`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            request.destroy();
            reject(new DocumentFetchError(`the document is larger than ${maxBytes} bytes`));
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
