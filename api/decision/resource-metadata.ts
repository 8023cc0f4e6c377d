// Protected Resource Metadata (RFC 9728) of the Apps a box guards, and of the box itself:
// what a client refused at a gate (401 or 403, its challenge naming this document's URL,
// §5.1) reads to find its authorization server and the scopes to ask for. Pure: the
// route is api/http/routes/protected-resource.ts, the challenges ./engine.ts.
//
// Where a resource's document is: §3.1, "inserting a well-known URI string into the
// protected resource's resource identifier between the host component and the path
// component, if any" — an App's resource identifier is its audience (RFC 8707), so
// the App at https://wiki.example.com with audience https://wiki.example.com/mcp has
// its document at https://wiki.example.com/.well-known/oauth-protected-resource/mcp.
// The gateway routes that path of the app's host to the box, as it does /.boxauth/.
import { DPOP_ALGS } from '../credentials/dpop/proof.js';
import type { App } from '../types.js';
import type { Policies } from '../policy/evaluate.js';
import { audienceOf, type AppDirectory } from './apps.js';

/** The well-known URI suffix of RFC 9728 §3 (registered in §8.3). */
export const METADATA_PATH = '/.well-known/oauth-protected-resource';

/**
 * The path of `resource`'s metadata document (RFC 9728 §3.1), or none: a resource identifier "is
 * a URL that uses the https scheme and has no fragment component" (§1.2; plain http too here, as
 * the box's own base URL may be) and a query component is NOT RECOMMENDED — the box gives such
 * a resource no document rather than one a client would fetch from a path that is not its.
 * "If the resource identifier value contains a path or query component, any terminating slash
 * (/) following the host component MUST be removed before inserting" (§3.1).
 */
export function metadataPathOf(resource: string): string | undefined {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '' || resource.includes('#')) {
    return undefined;
  }
  if (url.username !== '' || url.password !== '') return undefined;
  const path = url.pathname === '/' ? '' : url.pathname;
  return `${METADATA_PATH}${path}`;
}

/** `scheme://host[:port]`, strictly: what may stand in a URL the box writes into a header for a client. */
const ORIGIN = /^https?:\/\/(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The URL of `app`'s metadata document at `origin`, the origin the client addressed (engine.ts
 * originOf), or none when its audience is no URL a document can be derived from. An origin read
 * from the gateway's headers that is not a plain `scheme://host[:port]` (a Host with a quote, a
 * forwarded scheme of another kind) is not repeated to the client: the App's first url stands in.
 */
export function metadataUrlOf(app: Pick<App, 'audience' | 'urls'>, origin: string): string | undefined {
  const path = metadataPathOf(audienceOf(app));
  if (path === undefined) return undefined;
  const at = ORIGIN.test(origin) ? origin : new URL(app.urls[0]!).origin;
  return `${at}${path}`;
}

/** A challenge's `resource_metadata` parameter (RFC 9728 §5.1), as a quoted-string (RFC 9110 §5.6.4). */
export const resourceMetadataParam = (url: string): string => `resource_metadata="${url.replace(/["\\]/g, '\\$&')}"`;

/** The document (RFC 9728 §2): only the fields the box can stand behind. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported?: string[];
  bearer_methods_supported: string[];
  resource_name: string;
  dpop_signing_alg_values_supported: string[];
}

/**
 * The metadata of a resource the box decides for. `resource` is "identical to the protected
 * resource's resource identifier value into which the well-known resource metadata URI path
 * suffix was inserted" (§3.3): the App's audience, exactly, or the box's base URL. Its one
 * authorization server is the box (its issuer). A token is taken in the Authorization header
 * only (RFC 6750 §2.1): the gate reads no form body or query for one. DPoP-bound tokens are
 * checked with their proofs at every gate (RFC 9449 §7), by these algorithms (§5.1 of RFC 9728
 * takes them from RFC 9449). `scopes_supported` "RECOMMENDED": the scopes the App's policies
 * want (AccessPolicy.scope); left out when none do, rather than an empty list.
 */
export function protectedResourceMetadata(m: { resource: string; box: string; scopes: string[]; name: string }): ProtectedResourceMetadata {
  return {
    resource: m.resource,
    authorization_servers: [m.box],
    ...(m.scopes.length ? { scopes_supported: m.scopes } : {}),
    bearer_methods_supported: ['header'],
    resource_name: m.name,
    dpop_signing_alg_values_supported: [...DPOP_ALGS],
  };
}

/** An App's document: its audience, its description or else its id for a name. */
export const appMetadata = (app: App, box: string, scopes: string[]): ProtectedResourceMetadata =>
  protectedResourceMetadata({ resource: audienceOf(app), box, scopes, name: app.description ?? app.id });

/** What finding a document uses: the apps by host, the scopes of their policies, the box's base URL and name. */
export interface MetadataServices {
  apps: Pick<AppDirectory, 'byHost'>;
  policies: Pick<Policies, 'scopesOf'>;
  config: { baseUrl: string; box: string };
}

/**
 * The document at `path` of `host` (as the Host header names it), or none: the App at that host,
 * when `path` is its audience's metadata path; else, on the box's own host, the box's, when
 * `path` is its base URL's. An App is found by host only, as the gateway's routing found it: a
 * suffix naming another App's audience, at this host, is no document (404), and a host of no App
 * never answers with an App's.
 */
export async function metadataAt(svc: MetadataServices, host: string, path: string): Promise<ProtectedResourceMetadata | undefined> {
  const app = await svc.apps.byHost(host);
  if (app && metadataPathOf(audienceOf(app)) === path) return appMetadata(app, svc.config.baseUrl, await svc.policies.scopesOf(app.id));
  const box = new URL(svc.config.baseUrl);
  if (host.toLowerCase() === box.host && metadataPathOf(svc.config.baseUrl) === path) {
    return protectedResourceMetadata({
      resource: svc.config.baseUrl,
      box: svc.config.baseUrl,
      scopes: [],
      name: `boxauth (box ${svc.config.box})`,
    });
  }
  return undefined;
}
