// A pairwise client's sector_identifier_uri, checked before the box makes a sub for its host.
// OpenID Connect Registration §5: its value "MUST use the https scheme [...] The values registered
// in redirect_uris MUST be included in the elements of the array" the URI serves. Without the check,
// whoever may write a Client could name another relying party's sector and be given the very subs
// that party's clients see (api/credentials/subjects.ts sectorOf). The document is fetched through
// the box's one fetch of client documents (../document-fetch.ts) and a verdict that it lists the
// client's redirect URIs is kept for the document's lifetime (bounded as a metadata document's);
// a failure is never kept, and refuses: the client gets no sub, not another kind of sub.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import type { Client } from '../types.js';
import { AddressRefused, clientDocumentRules, documentLifetime, fetchClientDocument } from '../document-fetch.js';
import { registeredRedirectUris } from './client-metadata.js';

interface Needs {
  config: Config;
  log: Logger;
}

/** Every redirect URI the client registered, whatever its grant. */
function allRedirectUris(client: Client): string[] {
  const grants = Object.values(client.auth ?? {}) as ({ redirect_uri?: string; redirect_uris?: string[] } | undefined)[];
  return [...new Set(grants.flatMap((settings) => registeredRedirectUris(settings)))];
}

/**
 * Verdicts that a client's sector document lists its redirect URIs, by box, client, URI and those
 * URIs: until when. By box: a host's boxes have clients of the same ids, and fetch under their own rules.
 */
const verified = new Map<string, number>();
const fetching = new Map<string, Promise<string | undefined>>();

/**
 * Why the box may not make `client`'s pairwise subs now; undefined: it may (a public client, a
 * pairwise one that is its own sector, or one whose sector document lists its redirect URIs).
 */
export async function sectorRefusal(svc: Needs, client: Client, now = Date.now()): Promise<string | undefined> {
  const uri = client.sector_identifier_uri;
  if (client.subject_type !== 'pairwise' || !uri) return undefined;
  const redirectUris = allRedirectUris(client);
  const key = JSON.stringify([svc.config.baseUrl, client.id, uri, redirectUris]);
  if ((verified.get(key) ?? 0) > now) return undefined;
  let pending = fetching.get(key);
  if (!pending) {
    pending = checkSector(svc, client, uri, redirectUris, key, now).finally(() => fetching.delete(key));
    fetching.set(key, pending);
  }
  return pending;
}

async function checkSector(svc: Needs, client: Client, uri: string, redirectUris: string[], key: string, now: number) {
  const refused = (why: string, detail?: string): string => {
    svc.log.warn({ event: 'sector_refused', client: client.id, sector_identifier_uri: uri, reason: detail ?? why }, 'sector refused');
    return `the client's sector_identifier_uri ${why}`;
  };
  if (!/^https:\/\//i.test(uri)) return refused('is not an https URL');
  // The document vouches for a client by listing its redirect URIs: any array lists all of none, so
  // a client without one (a Shared Signals receiver, a token exchanger) naming another party's
  // sector would be given that party's subs. Such a client is its own sector or none.
  if (!redirectUris.length) return refused('cannot vouch for a client that registered no redirect URI');
  let fetched;
  try {
    fetched = await fetchClientDocument(uri, clientDocumentRules(svc.config));
  } catch (err) {
    // The guard's refusal names the address the name resolved to: logged, not told.
    if (err instanceof AddressRefused) return refused('is at an address this box does not fetch from', errorMessage(err));
    return refused(`could not be fetched (${errorMessage(err)})`);
  }
  const listed = fetched.body;
  if (!Array.isArray(listed) || !listed.every((u) => typeof u === 'string')) return refused('does not serve a JSON array of strings');
  const missing = redirectUris.filter((u) => !listed.includes(u));
  if (missing.length) return refused(`does not list its redirect URIs (${missing.join(', ')})`);
  const seconds = documentLifetime(fetched, {
    min: svc.config.clientMetadata.minCacheSeconds,
    max: svc.config.clientMetadata.maxCacheSeconds,
  });
  if (verified.size >= 10_000) verified.delete(verified.keys().next().value!);
  verified.set(key, now + seconds * 1000);
  return undefined;
}
