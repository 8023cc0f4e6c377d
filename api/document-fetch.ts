// The box's one fetch of a document someone else names at an address: a Client ID Metadata Document
// at its client_id URL (draft-ietf-oauth-client-id-metadata-document), a Client's JWK Set at its
// jwks_uri (api/oauth/client-assertion.ts), its sector_identifier_uri, a SPIFFE bundle, and the SAML
// metadata of an app the box signs in (api/saml/) or of an identity provider people sign in with
// (api/people/upstream/saml-metadata.ts), each held to the same rules. Its guards, each a rule of the draft:
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
// It sits in the base, below oauth/, saml/ and people/, so that each of them fetches through it.
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Config } from './config.js';
import { addressProblem, guardedLookup, literalAddress, type AddressRules } from './outbound.js';
import { outboundAttributes, outboundSpan } from './tracing.js';

/** The most a Client ID Metadata Document may hold. Draft §8.7: "The recommended maximum size to read is 5 kilobytes." */
const MAX_DOCUMENT_BYTES = 5 * 1024;

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
 * The rules of every document someone else names (a client's metadata document, jwks_uri, sector
 * document; an identity provider's SAML metadata): the box's client-metadata settings
 * (BOXAUTH_CLIENT_METADATA_*), and never the box itself.
 */
export const clientDocumentRules = (config: Pick<Config, 'clientMetadata' | 'baseUrl'>): FetchRules => ({
  allowed: config.clientMetadata.allowedAddresses,
  timeoutMs: config.clientMetadata.timeoutMs,
  boxUrl: config.baseUrl,
});

/** A document fetched: its JSON (its text, for xml) and the headers that say how long it stands. */
export interface FetchedDocument {
  body: unknown;
  cacheControl: string | undefined;
  expires: string | undefined;
  date: string | undefined;
}

/** Why a document could not be had: said to the log and (without the address) to the person. */
export class DocumentFetchError extends Error {}

/**
 * The box refuses the URL or what it serves, however often it is asked again (not https, the box
 * itself, a refused address, a document too large or not of its media type): a fault of whoever
 * named the URL, where any other DocumentFetchError is the server's, which may pass.
 */
export class DocumentRefused extends DocumentFetchError {}

/**
 * The guard refused the address a name resolved to (or a literal one): its message names that
 * address, which is for the box's log, not for whoever sent the URL (it would map the box's
 * network for them: which names resolve where, from inside).
 */
export class AddressRefused extends DocumentRefused {}

/** A lookup that refuses every special-use address, or the box's own, that `rules` does not allow (./outbound.ts). */
const lookupUnder = (rules: FetchRules): LookupFunction => guardedLookup(rules, (why) => new AddressRefused(why));

/** GET `url` (an https URL, already checked: e.g. api/oauth/client-metadata.ts clientIdUrlProblem) under `rules`. */
export function fetchClientDocument(url: string, rules: FetchRules): Promise<FetchedDocument> {
  const target = new URL(url);
  const maxBytes = rules.maxBytes ?? MAX_DOCUMENT_BYTES;
  // The box by its own name and port, whatever the scheme: its address may be one the operator allowed.
  if (target.host === new URL(rules.boxUrl).host) return Promise.reject(new DocumentRefused('the URL is the box itself'));
  // A literal address is not looked up: it is checked here.
  const literal = literalAddress(target);
  const literalProblem = literal && addressProblem(literal, rules);
  if (literalProblem) return Promise.reject(new AddressRefused(literalProblem));
  // Its span names where, never the query (which a document's URL may carry); the trace goes along.
  return outboundSpan('GET', outboundAttributes('GET', target), (trace) => fetched(target, rules, maxBytes, trace));
}

function fetched(target: URL, rules: FetchRules, maxBytes: number, trace: Record<string, string>): Promise<FetchedDocument> {
  return new Promise((resolve, reject) => {
    const request = https.request(
      target,
      {
        method: 'GET',
        headers: { ...trace, Accept: rules.accept ?? 'application/json' },
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
          return reject(new DocumentRefused(`it answered ${media || 'no content type'}, not ${xml ? 'XML' : 'JSON'}`));
        }
        if (Number(response.headers['content-length'] ?? 0) > maxBytes) {
          request.destroy();
          return reject(new DocumentRefused(`the document is larger than ${maxBytes} bytes`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            request.destroy();
            reject(new DocumentRefused(`the document is larger than ${maxBytes} bytes`));
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

/** The most bytes of a SAML metadata document fetched (api/saml/ reads at most as much). */
const MAX_SAML_METADATA_BYTES = 1024 * 1024;

/**
 * The SAML metadata document at `url` (an app's, an identity provider's) under `rules`: its text
 * (the body) and its caching headers.
 */
export async function fetchSamlMetadataDocument(url: string, rules: FetchRules): Promise<FetchedDocument & { body: string }> {
  if (!/^https:\/\//i.test(url)) throw new DocumentRefused('the URL is not an https URL');
  const fetched = await fetchClientDocument(url, {
    ...rules,
    format: 'xml',
    accept: XML_MEDIA.join(', '),
    maxBytes: MAX_SAML_METADATA_BYTES,
  });
  return { ...fetched, body: fetched.body as string };
}

/**
 * A SAML app's metadata at `url` (Client.saml.metadata.url), fetched under the rules of every
 * document someone else names, with how many seconds it stands (its caching headers, within the box's bounds).
 */
export async function fetchSamlMetadata(
  url: string,
  config: Pick<Config, 'clientMetadata' | 'baseUrl'>,
): Promise<{ xml: string; seconds: number }> {
  const fetched = await fetchSamlMetadataDocument(url, clientDocumentRules(config));
  const seconds = documentLifetime(fetched, { min: config.clientMetadata.minCacheSeconds, max: config.clientMetadata.maxCacheSeconds });
  return { xml: fetched.body, seconds };
}

/**
 * How long a fetched document stands, in seconds. Draft §5.2: "The authorization server SHOULD
 * respect HTTP cache headers [RFC9111] when caching client metadata, but MAY define its own upper
 * and/or lower bounds on an acceptable cache lifetime as well." `Cache-Control: max-age` (RFC 9111
 * §5.2.2.1), else `Expires` less `Date` (§4.2.1); `no-store` and `no-cache` stand for the least the
 * box keeps a document; nothing said, the most.
 */
export function documentLifetime(
  headers: { cacheControl?: string; expires?: string; date?: string },
  bounds: { min: number; max: number },
): number {
  const clamp = (s: number): number => Math.min(bounds.max, Math.max(bounds.min, s));
  const directives = (headers.cacheControl ?? '')
    .toLowerCase()
    .split(',')
    .map((d) => d.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return bounds.min;
  const maxAge = directives.map((d) => /^max-age=(\d{1,10})$/.exec(d)).find(Boolean);
  if (maxAge) return clamp(Number(maxAge[1]));
  if (headers.expires) {
    const expires = Date.parse(headers.expires);
    const date = headers.date ? Date.parse(headers.date) : Date.now();
    // RFC 9111 §5.3: "A cache recipient MUST interpret invalid date formats [...] as representing a time in the past".
    return Number.isNaN(expires) || Number.isNaN(date) ? bounds.min : clamp(Math.floor((expires - date) / 1000));
  }
  return bounds.max;
}
