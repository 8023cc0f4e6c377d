// The box as a client of an OpenID Connect provider (type oidc) or an OAuth 2.0 service (type
// oauth2), and the entry to GitHub's (./github.ts): where to send the browser, and what its return
// proves of the person. An OpenID provider is found by its issuer (Discovery 1.0) and proves the
// person with its signed ID token (./id-token.ts); an OAuth 2.0 service with its userinfo URL, which
// the access token opens.
import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose';
import * as oauth from 'oauth4webapi';
import type { IdentityProvider } from '../../types.js';
import { oauth2ClaimNames, oidcClaimNames, profileOf } from './claims.js';
import { clientOf, codeAuthorizationUrl, exchangeCode, type CodeFlowServer, type UpstreamRequest } from './code-flow.js';
import { githubFlow, githubProfile } from './github.js';
import { fetchJson, providerUrl, requestOptions, upstreamError, upstreamFetch } from './http.js';
import { verifyIdToken } from './id-token.js';
import { UPSTREAM_TIMEOUT_MS, UpstreamError, type OAuth2Settings, type OidcSettings, type UpstreamProfile } from './profile.js';

export type { UpstreamRequest } from './code-flow.js';

/** Where to send the browser (code + PKCE S256 + state + nonce for oidc). */
export async function authorizationUrl(provider: IdentityProvider, request: UpstreamRequest): Promise<URL> {
  return codeAuthorizationUrl(await codeFlowOf(provider), request);
}

/** The callback's URL (code, state, iss or error) → the profile; the code is exchanged with `secret` (client_secret_basic; none when undefined). */
export async function finishAuthorization(
  provider: IdentityProvider,
  secret: string | undefined,
  request: UpstreamRequest,
  callback: URL,
  now: () => number = Date.now,
): Promise<UpstreamProfile> {
  const flow = await codeFlowOf(provider);
  const tokens = await exchangeCode(flow, secret, request, callback, now);
  if (provider.type === 'oidc') return oidcProfile(settingsOf(provider.oidc), flow, tokens, request, now);
  if (provider.type === 'github') return githubProfile(provider.github!, tokens.access_token);
  return oauth2Profile(settingsOf(provider.oauth2), tokens.access_token);
}

function settingsOf<T>(settings: T | undefined): T {
  if (!settings) throw new UpstreamError('invalid', 'the provider has no settings of its type');
  return settings;
}

/** The provider as the code flow sees it (an OpenID provider's metadata fetched, or kept from a fetch within the hour). */
export async function codeFlowOf(provider: IdentityProvider): Promise<CodeFlowServer> {
  switch (provider.type) {
    case 'oidc': {
      const oidc = settingsOf(provider.oidc);
      const { server } = await discover(oidc.issuer);
      const scopes = oidc.scopes ?? ['openid', 'email', 'profile'];
      return { server, clientId: oidc.clientId, scopes: scopes.includes('openid') ? scopes : ['openid', ...scopes], openid: true };
    }
    case 'oauth2': {
      const settings = settingsOf(provider.oauth2);
      const server: oauth.AuthorizationServer = {
        // oauth4webapi needs an issuer; an OAuth 2.0 service has none, and sends no iss to compare with it.
        issuer: providerUrl(settings.authorizationUrl, 'authorizationUrl').origin,
        authorization_endpoint: providerUrl(settings.authorizationUrl, 'authorizationUrl').href,
        token_endpoint: providerUrl(settings.tokenUrl, 'tokenUrl').href,
      };
      return { server, clientId: settings.clientId, scopes: settings.scopes ?? [], openid: false };
    }
    case 'github':
      return githubFlow(settingsOf(provider.github));
    default:
      throw new UpstreamError('invalid', `a provider of type ${provider.type} has no authorization code flow`);
  }
}

interface Discovered {
  server: oauth.AuthorizationServer;
  keys: JWTVerifyGetKey;
  until: number;
}

/** How long a provider's metadata is kept: a provider changes its endpoints rarely, its keys through jwks_uri. */
const METADATA_TTL_MS = 3_600_000;
/**
 * How long a provider that did not answer is not asked again: every sign-in started meanwhile is
 * told at once, rather than each waiting out the time limit on a dead issuer (a stranger pressing
 * the button in a loop would hold as many requests open).
 */
const UNAVAILABLE_TTL_MS = 30_000;
const discovered = new Map<string, Discovered>();
const unavailable = new Map<string, { error: UpstreamError; until: number }>();
const discovering = new Map<string, Promise<Discovered>>();
const keySets = new Map<string, JWTVerifyGetKey>();

/**
 * The provider's metadata (its issuer exactly the one configured) and its keys: fetched once at a
 * time per issuer (sign-ins starting together wait for the one fetch), kept an hour; a provider
 * that did not answer is remembered so for UNAVAILABLE_TTL_MS, any other failure not at all.
 */
async function discover(issuer: string): Promise<Discovered> {
  const cached = discovered.get(issuer);
  if (cached && cached.until > Date.now()) return cached;
  const down = unavailable.get(issuer);
  if (down && down.until > Date.now()) throw down.error;
  let pending = discovering.get(issuer);
  if (!pending) {
    pending = fetchMetadata(issuer)
      .catch((err: unknown) => {
        if (err instanceof UpstreamError && err.failure === 'unavailable')
          unavailable.set(issuer, { error: err, until: Date.now() + UNAVAILABLE_TTL_MS });
        throw err;
      })
      .finally(() => discovering.delete(issuer));
    discovering.set(issuer, pending);
  }
  return pending;
}

/**
 * A provider's metadata that does not hold is the admin's to fix (the issuer configured is not the
 * one the metadata names, an endpoint is missing or one the box may not call): `misconfigured`.
 * A provider that does not answer stays `unavailable`.
 */
function setUpFault(err: unknown, what: string): UpstreamError {
  const said = upstreamError(err, what);
  return said.failure === 'unavailable' ? said : new UpstreamError('misconfigured', said.message);
}

/** The provider's metadata fetched now (and kept for the sign-ins that follow), checked as discover() checks it. */
export async function fetchMetadata(issuer: string): Promise<Discovered> {
  let server: oauth.AuthorizationServer;
  try {
    const issuerUrl = providerUrl(issuer, 'the issuer');
    const response = await oauth.discoveryRequest(issuerUrl, { algorithm: 'oidc', ...requestOptions(issuerUrl) });
    server = await oauth.processDiscoveryResponse(issuerUrl, response);
    checkMetadata(issuer, server);
  } catch (err) {
    throw setUpFault(err, 'discovery');
  }
  const entry = { server, keys: keySet(server.jwks_uri!), until: Date.now() + METADATA_TTL_MS };
  discovered.set(issuer, entry);
  unavailable.delete(issuer);
  return entry;
}

/** The metadata names exactly the issuer configured, and every endpoint the box calls, at an address it may call. */
function checkMetadata(issuer: string, server: oauth.AuthorizationServer): void {
  // processDiscoveryResponse compares the issuer as a URL; its ID tokens' iss is compared as a string.
  if (server.issuer !== issuer) throw new UpstreamError('invalid', 'discovery: the metadata names another issuer');
  for (const endpoint of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const) {
    if (typeof server[endpoint] !== 'string') throw new UpstreamError('invalid', `discovery: no ${endpoint}`);
    providerUrl(server[endpoint], endpoint);
  }
  if (server.userinfo_endpoint !== undefined) providerUrl(server.userinfo_endpoint, 'userinfo_endpoint');
}

/**
 * The provider's published keys, fetched again when a token names a key not among them (the
 * provider rotated its key). No cooldown between those fetches: an ID token reaches the box only
 * from the provider's own token endpoint, so no stranger can make the box fetch again and again.
 */
function keySet(jwksUri: string): JWTVerifyGetKey {
  let keys = keySets.get(jwksUri);
  if (!keys) {
    keys = createRemoteJWKSet(providerUrl(jwksUri, 'jwks_uri'), {
      timeoutDuration: UPSTREAM_TIMEOUT_MS,
      cooldownDuration: 0,
      [customFetch]: upstreamFetch,
    });
    keySets.set(jwksUri, keys);
  }
  return keys;
}

async function oidcProfile(
  settings: OidcSettings,
  flow: CodeFlowServer,
  tokens: oauth.TokenEndpointResponse,
  request: UpstreamRequest,
  now: () => number,
): Promise<UpstreamProfile> {
  const { server, keys } = await discover(settings.issuer);
  const idToken = await verifyIdToken(tokens.id_token!, keys, {
    issuer: settings.issuer,
    clientId: settings.clientId,
    nonce: request.nonce,
    algorithms: server.id_token_signing_alg_values_supported,
    now,
  });
  let claims: Record<string, unknown> = idToken;
  if (settings.useUserinfo) {
    const endpoint = providerUrl(server.userinfo_endpoint ?? '', 'userinfo_endpoint');
    try {
      const client = clientOf(flow.clientId, now);
      const response = await oauth.userInfoRequest(server, client, tokens.access_token, requestOptions(endpoint));
      // Its sub must be the ID token's (Core §5.3.2): the ID token's claims win, userinfo adds what it lacks.
      claims = { ...(await oauth.processUserInfoResponse(server, client, idToken.sub!, response)), ...idToken };
    } catch (err) {
      throw upstreamError(err, 'userinfo');
    }
  }
  return profileOf(claims, oidcClaimNames(settings.claims), idToken.amr);
}

async function oauth2Profile(settings: OAuth2Settings, accessToken: string): Promise<UpstreamProfile> {
  const { body } = await fetchJson(providerUrl(settings.userinfoUrl, 'userinfoUrl'), accessToken, 'userinfo');
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UpstreamError('invalid', 'userinfo: not a JSON object');
  return profileOf(body as Record<string, unknown>, oauth2ClaimNames(settings.claims));
}
