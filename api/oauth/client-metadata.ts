// Clients that name themselves: a Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document,
// "CIMD") and a dynamic registration (RFC 7591). What is decided here is pure: whether a client_id is a
// Client Identifier URL, and whether a document or a registration's metadata makes a client the box
// serves. The fetch, its size limit and how long a fetched document stands are ../document-fetch.ts;
// the client stored, refreshed and admitted by policy is ./agents.ts.
import { invisibleProblem } from '../input.js';
import type { Client } from '../types.js';

/** The longest a Client Identifier URL (and so a client_id) may be. */
const MAX_CLIENT_ID_URL = 512;

/** The most redirect URIs a document or a registration may list (as a Client's auth.*.redirect_uris, crds/client.yaml). */
const MAX_REDIRECT_URIS = 20;

/** The grants an agent's client gets: the code flow (with PKCE) and its refreshes. */
const AGENT_GRANTS = ['authorization_code', 'refresh_token'] as const;

/**
 * Whether `clientId` is a Client Identifier URL, and if not, why. Draft §3: "A Client Identifier
 * URL: MUST use the https URL scheme; MUST NOT contain a userinfo component [...]; MAY contain a
 * port; MUST contain a path component; MUST NOT contain single-dot or double-dot path components;
 * SHOULD NOT contain a query component; MUST NOT contain a fragment component". The box also refuses
 * a query (the SHOULD NOT) and the path `/` alone ("NOT RECOMMENDED"), so that what a person sees
 * on the consent page is a plain address.
 */
export function clientIdUrlProblem(clientId: string): string | undefined {
  if (clientId.length > MAX_CLIENT_ID_URL) return `a client_id URL is at most ${MAX_CLIENT_ID_URL} characters`;
  if (!/^https:\/\//i.test(clientId)) return 'a client_id URL must use https';
  if (/[\s\\]/.test(clientId) || /[^\x21-\x7e]/.test(clientId))
    return 'a client_id URL may hold no spaces, backslashes or non-ASCII characters';
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'the client_id is not a URL';
  }
  if (url.username || url.password || clientId.slice(8).split('/')[0]!.includes('@'))
    return 'a client_id URL must not carry user information';
  if (clientId.includes('#')) return 'a client_id URL must not have a fragment';
  if (clientId.includes('?')) return 'a client_id URL must not have a query';
  const path = clientId.slice(8).replace(/^[^/]*/, '');
  if (path === '' || path === '/') return 'a client_id URL must have a path (https://host/client.json, not the root)';
  if (
    path
      .split('/')
      .some((segment) => segment === '.' || segment === '..' || /^%2e(%2e)?$/i.test(segment) || /^\.%2e$|^%2e\.$/i.test(segment))
  )
    return 'a client_id URL must not have "." or ".." path segments';
  // Draft §3: "Client Identifier URLs MUST be compared using simple string comparison": the URL is
  // taken as written, and one the URL parser would rewrite (case, default port, encodings) is not one.
  if (url.href !== clientId) return `a client_id URL must be written as it is normalized (${url.href})`;
  return undefined;
}

/** The redirect URIs a grant's settings register: redirect_uri and redirect_uris, once each. */
export function registeredRedirectUris(settings: { redirect_uri?: string; redirect_uris?: string[] } | undefined): string[] {
  if (!settings) return [];
  return [...new Set([...(settings.redirect_uri ? [settings.redirect_uri] : []), ...(settings.redirect_uris ?? [])])];
}

/** Whether `clientId` names a client by its metadata document. */
export const isClientIdUrl = (clientId: string): boolean => /^https:\/\//i.test(clientId);

/** What a document or a registration asks of the box, read: the client it makes, or the problem with it (RFC 7591 §3.2.2's codes). */
export type ReadMetadata = ReadClient | MetadataProblem;

/** A client read from metadata, before the box names it and marks how it came (its id and `registration`). */
export interface ReadClient {
  client: Omit<Client, 'id' | 'registration'>;
  clientName: string | undefined;
  logoUri: string | undefined;
}

export interface MetadataProblem {
  error: 'invalid_client_metadata' | 'invalid_redirect_uri';
  description: string;
}

const problem = (error: MetadataProblem['error'], description: string): MetadataProblem => ({ error, description });

/** Draft §4.1: "the token_endpoint_auth_method property MUST NOT include client_secret_post, client_secret_basic, client_secret_jwt". */
const SECRET_PROPERTIES = ['client_secret', 'client_secret_expires_at'];

/**
 * The client a document (`from: 'document'`) or a registration's metadata (`from: 'registration'`)
 * makes: public (token_endpoint_auth_method none, so PKCE is required: ./authorization-request.ts
 * publicClientUsesPkce), with the code and refresh grants, and its redirect_uris matched to the
 * letter as every client's are. The box serves public agents only: a document's
 * token_endpoint_auth_method other than none is refused (draft §4.1 forbids the secret methods; a
 * key-based one, private_key_jwt with a jwks_uri, the box does not yet take from a document). RFC
 * 7591 §2: "If unspecified or omitted, the default is client_secret_basic" — a registration that
 * leaves it out is answered with none instead (§3.2.1: the server "MAY reject or replace any of the
 * client's requested metadata values [...] and substitute them with suitable values").
 */
export function readClientMetadata(meta: Record<string, unknown>, from: 'document' | 'registration'): ReadMetadata {
  const method = meta.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none')
    return problem(
      'invalid_client_metadata',
      `token_endpoint_auth_method must be "none": this box takes only public agents, which prove themselves with PKCE${typeof method === 'string' ? ` (got "${method.slice(0, 40)}")` : ''}`,
    );
  const secret = SECRET_PROPERTIES.find((p) => meta[p] !== undefined);
  if (secret) return problem('invalid_client_metadata', `${secret} must not be sent: an agent's client has no shared secret`);
  const grants = meta.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || grants.some((g) => !(AGENT_GRANTS as readonly unknown[]).includes(g))))
    return problem('invalid_client_metadata', `grant_types may hold only ${AGENT_GRANTS.join(' and ')}`);
  const responseTypes = meta.response_types;
  if (responseTypes !== undefined && (!Array.isArray(responseTypes) || responseTypes.some((r) => r !== 'code')))
    return problem('invalid_client_metadata', 'response_types may hold only "code"');
  const redirects = redirectUrisOf(meta.redirect_uris, from);
  if ('error' in redirects) return redirects;
  const name = textOf(meta.client_name, 'client_name', 256);
  if (typeof name === 'object') return name;
  const logo = meta.logo_uri === undefined ? undefined : httpsUrlOf(meta.logo_uri, 'logo_uri');
  if (typeof logo === 'object') return logo;
  const scope = meta.scope === undefined ? undefined : textOf(meta.scope, 'scope', 1024);
  if (typeof scope === 'object') return scope;
  return {
    client: {
      resourceType: 'Client',
      grant_types: [...AGENT_GRANTS],
      // RFC 9700 §4.14.2: a public client's refresh tokens are sender-constrained or rotated.
      auth: { authorization_code: { redirect_uris: redirects.uris, refresh_token: true, refresh_token_rotation: true } },
      ...(scope ? { scope: [...new Set(scope.split(' ').filter(Boolean))] } : {}),
      ...(name ? { description: name } : {}),
    },
    clientName: name,
    logoUri: logo,
  };
}

/**
 * The redirect URIs: https, or http to a loopback address (RFC 8252 §7.3, a native agent listening
 * on a port of its own: matched as every client's are, the port free; ./authorization-request.ts
 * redirectMatches), or a private-use scheme (RFC 8252 §7.1, `com.example.app:/cb`). Draft §8.1: "An
 * authorization server may impose restrictions or relationships between the redirect_uris and the
 * client_id [...], for example to restrict the redirect_uri to the same-origin as the Client ID
 * Metadata Document." The box does not require the client_id's host: an agent on a person's
 * machine comes back to a loopback address, never to its vendor's host. What the person is shown
 * instead is the client_id's host (draft §8.5) and the policy that admitted it sees every
 * redirect URI (./agents.ts), so an admin can hold a vendor to its own hosts.
 */
function redirectUrisOf(value: unknown, from: 'document' | 'registration'): { uris: string[] } | MetadataProblem {
  if (!Array.isArray(value) || !value.length)
    return problem('invalid_redirect_uri', `redirect_uris must be a list of at least one address (the ${from}'s)`);
  if (value.length > MAX_REDIRECT_URIS)
    return problem('invalid_redirect_uri', `redirect_uris may list at most ${MAX_REDIRECT_URIS} addresses`);
  const uris: string[] = [];
  for (const raw of value) {
    if (typeof raw !== 'string' || raw.length > 2048)
      return problem('invalid_redirect_uri', 'each of redirect_uris must be a URL of at most 2048 characters');
    const why = redirectUriProblem(raw);
    if (why) return problem('invalid_redirect_uri', `${JSON.stringify(raw.slice(0, 100))}: ${why}`);
    uris.push(raw);
  }
  return { uris: [...new Set(uris)] };
}

function redirectUriProblem(raw: string): string | undefined {
  // The URL parser drops tabs and line breaks that the letter-for-letter match would keep.
  if (/[^\x21-\x7e]/.test(raw)) return 'a redirect URI may hold no spaces, control or non-ASCII characters';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not a URL';
  }
  if (url.hash || raw.includes('#')) return 'a redirect URI must not have a fragment (RFC 6749 §3.1.2)';
  if (url.username || url.password) return 'a redirect URI must not carry user information';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:')
    return ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)
      ? undefined
      : 'http is for a loopback address only (RFC 8252 §7.3): use https';
  // RFC 8252 §7.1: "a URI scheme based on a domain name under their control, expressed in reverse order".
  return /^[a-z][a-z0-9+-]*\.[a-z0-9+.-]+:$/.test(url.protocol)
    ? undefined
    : `the scheme ${url.protocol} is not one a client may come back to`;
}

/**
 * A text the client chose, shown to people (its name on the consent page): no control character,
 * and none that is drawn as nothing or reorders what follows (a U+202E in a client_name mirrored
 * the consent page's warning sentence): the one rule of names, api/input.ts invisibleProblem.
 */
function textOf(value: unknown, name: string, max: number): string | undefined | MetadataProblem {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !value.trim() || value.length > max)
    return problem('invalid_client_metadata', `${name} must be a text of 1 to ${max} characters`);
  const invisible = invisibleProblem(value);
  if (invisible) return problem('invalid_client_metadata', `${name} ${invisible}`);
  return value.trim();
}

function httpsUrlOf(value: unknown, name: string): string | MetadataProblem {
  if (typeof value !== 'string' || value.length > 2048 || !/^https:\/\//.test(value))
    return problem('invalid_client_metadata', `${name} must be an https URL`);
  try {
    return new URL(value).href;
  } catch {
    return problem('invalid_client_metadata', `${name} must be an https URL`);
  }
}
