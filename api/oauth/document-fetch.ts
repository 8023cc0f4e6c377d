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
import { documentLifetime, MAX_DOCUMENT_BYTES } from './client-metadata.js';

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
  /** What the document is (default json): xml - a SAML metadata document, its body the text (api/saml/ reads it). */
  format?: 'json' | 'xml';
}

/** The media types of a SAML metadata document (SAML 2.0 Metadata §4.1.1, and what servers send for it). */
const XML_MEDIA = ['application/samlmetadata+xml', 'application/xml', 'text/xml'];

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
        const xml = rules.format === 'xml';
        // Draft §4: "MAY also be served with more specific content types as long as the response is JSON".
        if (xml ? !XML_MEDIA.includes(media) : media !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(media)) {
          response.resume();
          return reject(new DocumentFetchError(`it answered ${media || 'no content type'}, not ${xml ? 'XML' : 'JSON'}`));
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
            const text = Buffer.concat(chunks).toString('utf8');
            body = xml ? text : JSON.parse(text);
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

/** The most bytes of a SAML app's metadata document fetched (api/saml/ reads at most as much). */
const MAX_SAML_METADATA_BYTES = 1024 * 1024;

/**
 * A SAML app's metadata at `url` (Client.saml.metadata.url), fetched under the rules of every
 * document a client names, with how many seconds it stands (its caching headers, within the box's bounds).
 */
export async function fetchSamlMetadata(
  url: string,
  config: Pick<Config, 'clientMetadata' | 'baseUrl'>,
): Promise<{ xml: string; seconds: number }> {
  if (!/^https:\/\//i.test(url)) throw new DocumentFetchError('the URL is not an https URL');
  const fetched = await fetchClientDocument(url, {
    ...clientDocumentRules(config),
    format: 'xml',
    accept: 'application/samlmetadata+xml, application/xml',
    maxBytes: MAX_SAML_METADATA_BYTES,
  });
  const seconds = documentLifetime(fetched, { min: config.clientMetadata.minCacheSeconds, max: config.clientMetadata.maxCacheSeconds });
  return { xml: fetched.body as string, seconds };
}
