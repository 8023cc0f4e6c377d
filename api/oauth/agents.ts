// Agents' clients: those that name themselves, by a Client ID Metadata Document
// (draft-ietf-oauth-client-id-metadata-document) or a dynamic registration (RFC 7591, ./registration.ts).
// Either is stored as a row of `clients`, written by the box alone and marked by its `registration`,
// so that consents, codes, pushed requests and sessions hold it as they hold every client, and the
// token endpoint finds it by its id. A document's client is fetched at the first authorization
// request (or push) that names it, and again at the first after its cache lifetime. Whether such a
// client is admitted, and to ask for what, the box's AccessPolicies decide at each authorization
// request (deny by default: ../policy/evaluate.ts decideRegistration), so a policy changed takes
// effect at the next one.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Pool } from '../db/pool.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Policies } from '../policy/evaluate.js';
import type { RegistrationRequest } from '../policy/requests.js';
import { clients } from '../store/clients.js';
import type { Stored } from '../store/resources.js';
import type { Client } from '../types.js';
import { DocumentFetchError, clientDocumentRules, documentLifetime, fetchClientDocument } from '../document-fetch.js';
import { clientIdUrlProblem, isClientIdUrl, readClientMetadata, registeredRedirectUris } from './client-metadata.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
  pool: Pool;
  clients: RecordCache<Stored<Client>>;
  policies: Policies;
}

/** What finding and admitting an agent's client needs. */
export type AgentServices = Pick<Needs, 'clients' | 'config' | 'log' | 'policies' | 'pool'>;

/** A client found, or why none could be: said to the log; the person is shown the box's page of an unknown client. */
export type FoundClient = { client: Stored<Client> } | { why: string } | undefined;

/**
 * Fetches under way, by box and URL: the authorization requests of one agent arriving at once fetch
 * its document once. By box: each box fetches under its own rules and stores the client in its own database.
 */
const fetching = new Map<string, Promise<FoundClient>>();

/**
 * The client `clientId` names: a stored one, or, for a Client Identifier URL that no administrator
 * registered (draft §7.2 lets one pre-register it: that client is used as it is), the client its
 * document describes, fetched when the box has none or its lifetime ended. Draft §5.1: "If [...]
 * fetching the metadata document fails, the authorization server SHOULD abort the authorization
 * request" — and §5.2: "The authorization server MUST NOT cache error responses" — so a document
 * that cannot be had now is not served from an expired copy either.
 */
export async function clientNamed(svc: AgentServices, clientId: string, now = new Date()): Promise<FoundClient> {
  const stored = await svc.clients.get(clientId);
  if (!isClientIdUrl(clientId)) return stored && { client: stored };
  const registration = stored?.resource.registration;
  if (stored && registration?.kind !== 'metadata-document') return { client: stored };
  if (stored && registration?.expires_at && Date.parse(registration.expires_at) > now.getTime()) return { client: stored };
  const problem = clientIdUrlProblem(clientId);
  if (problem) return { why: problem };
  const key = `${svc.config.baseUrl}\n${clientId}`;
  let pending = fetching.get(key);
  if (!pending) {
    pending = fetchAndStore(svc, clientId).finally(() => fetching.delete(key));
    fetching.set(key, pending);
  }
  return pending;
}

/** Fetches the document at `url`, checks it, and writes its client. */
async function fetchAndStore(svc: AgentServices, url: string): Promise<FoundClient> {
  let fetched;
  try {
    fetched = await fetchClientDocument(url, clientDocumentRules(svc.config));
  } catch (err) {
    if (!(err instanceof DocumentFetchError)) throw err;
    return { why: `client metadata document not fetched: ${err.message}` };
  }
  const body = fetched.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { why: 'client metadata document is not a JSON object' };
  const document = body as Record<string, unknown>;
  // Draft §4: "The Client ID Metadata Document MUST contain a client_id property whose value MUST
  // match the Client Identifier URL, which MUST also match the URL that the authorization server
  // used to fetch the document; comparisons MUST be made using simple string comparison".
  if (document.client_id !== url) return { why: 'client metadata document names another client_id than its URL' };
  const read = readClientMetadata(document, 'document');
  if ('error' in read) return { why: `client metadata document refused: ${read.description}` };
  const now = new Date();
  const lifetime = documentLifetime(fetched, {
    min: svc.config.clientMetadata.minCacheSeconds,
    max: svc.config.clientMetadata.maxCacheSeconds,
  });
  const client: Client = {
    ...read.client,
    id: url,
    registration: {
      kind: 'metadata-document',
      ...(read.clientName ? { client_name: read.clientName } : {}),
      ...(read.logoUri ? { logo_uri: read.logoUri } : {}),
      fetched_at: now.toISOString(),
      expires_at: new Date(now.getTime() + lifetime * 1000).toISOString(),
    },
  };
  const { stored } = await clients.write(svc.pool, client, { managedBy: null, secretHash: null });
  // This process serves the next request from the row just written; the others hear of it through the feed.
  svc.clients.invalidate(url);
  svc.log.info({ event: 'client_metadata_fetched', client: url, lifetime }, 'client metadata document fetched');
  return { client: stored };
}

/** What an authorization request of an agent's client asks now, for the policies. */
export interface AskedNow {
  scope: string | undefined;
  resource: string[];
  uri: RegistrationRequest['uri'];
}

/** The request object the policies decide an agent's client by. */
export function registrationRequest(client: Client, asked: AskedNow): RegistrationRequest | undefined {
  const registration = client.registration;
  if (!registration) return undefined;
  const redirectUris = registeredRedirectUris(client.auth?.authorization_code);
  return {
    'request-method': 'post',
    uri: asked.uri,
    params: {},
    'query-string': '',
    client: null,
    user: null,
    scope: null,
    registration: {
      kind: registration.kind,
      client_id: client.id,
      host: registration.kind === 'metadata-document' ? hostOf(client.id) : sharedHost(redirectUris),
      redirect_uris: redirectUris,
      client_name: registration.client_name ?? null,
      scope: (asked.scope ?? '').split(' ').filter(Boolean),
      resource: asked.resource,
    },
  };
}

/**
 * The host a dynamic client comes back to: the one host[:port] all its redirect URIs name, '' when
 * they name several (or none). Nobody vouches for such a client but the redirect URIs it chose;
 * the host of only the first of them would let one registered with a loopback address first and
 * another site second pass a policy admitting loopback agents, its consent page saying it comes
 * back to 127.0.0.1, and the code sent to the other site.
 */
export function sharedHost(redirectUris: readonly string[]): string {
  const hosts = new Set(redirectUris.map(hostOf));
  return hosts.size === 1 ? [...hosts][0]! : '';
}

/** host[:port] of a URL, lower case; '' for none. */
export function hostOf(url: string | undefined): string {
  try {
    return url ? new URL(url).host.toLowerCase() : '';
  } catch {
    return '';
  }
}

/**
 * Whether the box's policies admit this agent's client for what it asks now; a client an
 * administrator registered (no `registration`) is not asked about. Why not, when not: for the log.
 */
export async function agentRefusal(svc: Pick<Needs, 'policies'>, client: Client, asked: AskedNow): Promise<string | undefined> {
  const request = registrationRequest(client, asked);
  if (!request) return undefined;
  const verdict = await svc.policies.decideRegistration(request);
  return verdict.allowed ? undefined : `no AccessPolicy admits the ${request.registration.kind} client ${client.id}`;
}

/**
 * Whether the box's policies still admit an agent's client to have a grant's tokens refreshed: asked
 * again at each refresh (`uri` /auth/token), with the scopes and the resource the new token would
 * carry, so that a policy removed stops the agent at its next refresh and not only at its next
 * authorization request, which a client holding a refresh token need never make. The grant is
 * refused, not closed: a policy put back lets it refresh again. Why not, when not: for the log.
 */
export function agentRefusalAtRefresh(
  svc: Pick<Needs, 'policies'>,
  client: Client,
  granted: { scope: string | null; audience: string | null },
): Promise<string | undefined> {
  return agentRefusal(svc, client, {
    scope: granted.scope ?? undefined,
    resource: granted.audience === null ? [] : [granted.audience],
    uri: '/auth/token',
  });
}

/** What the consent page tells a person of an agent's client: how it came, the name it gave itself, and the host that vouches for it. */
export function agentShown(client: Client): { kind: 'metadata-document' | 'dynamic'; name: string | undefined; host: string } | undefined {
  const request = registrationRequest(client, { scope: undefined, resource: [], uri: '/auth/authorize' });
  return (
    request && { kind: request.registration.kind, name: request.registration.client_name ?? undefined, host: request.registration.host }
  );
}
