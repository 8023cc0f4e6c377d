// Trying a provider before people do (POST /IdentityProvider/<id>/$check): each thing a sign-in
// through it will need, asked of the provider now, without signing anyone in. An OpenID provider:
// its metadata, the issuer it names, its keys, and the box's client credentials — a token request
// with a made-up code, which a provider answers invalid_grant only once it has authenticated the
// client (RFC 6749 §5.2: invalid_client is "Client authentication failed"). GitHub and OAuth 2.0
// services: the client credentials the same way. A directory: the connection, the service
// account's bind, and the search bases. A SAML provider: its metadata (read from its URL under the
// box's address guard, or inline), the entity it names, its sign-on address and certificates. No detail carries a secret: what a failure says is the
// message of an UpstreamError, written to be logged.
import { randomBytes } from 'node:crypto';
import { ldap } from './ldap-library.js';
import * as oauth from 'oauth4webapi';
import type { Config } from '../../config.js';
import type { Pool } from '../../db/pool.js';
import { identityProviders } from '../../store/identity-providers.js';
import type { IdentityProvider } from '../../types.js';
import { clientOf, type CodeFlowServer } from './code-flow.js';
import { providerUrl, requestOptions, tokenEndpointError, tokenEndpointErrorCode, upstreamError, upstreamFetch } from './http.js';
import { failure, LdapConnection } from './ldap-connection.js';
import { callbackUrl } from './flow.js';
import { codeFlowOf, fetchMetadata } from './oauth.js';
import { UPSTREAM_TIMEOUT_MS, UpstreamError, type LdapSettings } from './profile.js';
import { providerSecret } from './secret.js';
import { clientDocumentRules, type FetchRules } from '../../document-fetch.js';
import { idpMetadata } from './saml-metadata.js';

export interface ProviderCheck {
  check: string;
  ok: boolean;
  detail: string;
}

/** The token endpoint's answers to a code it never gave that say it authenticated the client first (GitHub: bad_verification_code). */
const CODE_REFUSED = new Set(['invalid_grant', 'bad_verification_code']);

const passed = (check: string, detail: string): ProviderCheck => ({ check, ok: true, detail });
const failed = (check: string, err: unknown, what: string): ProviderCheck => ({
  check,
  ok: false,
  detail: `${err instanceof UpstreamError ? err.failure : 'invalid'}: ${upstreamError(err, what).message}`,
});

/** Every check of `provider`, in the order a sign-in needs them; a check that fails ends the ones that need it. */
export async function checkProvider(
  provider: IdentityProvider,
  secret: string | undefined,
  redirectUri: string,
  rules: FetchRules,
): Promise<ProviderCheck[]> {
  switch (provider.type) {
    case 'oidc':
      return checkOpenIdProvider(provider, secret, redirectUri);
    case 'oauth2':
    case 'github':
      return checkCodeFlow(provider, secret, redirectUri);
    case 'ldap':
      return provider.ldap ? checkDirectory(provider.ldap, secret) : [{ check: 'settings', ok: false, detail: 'no ldap settings' }];
    case 'saml':
      return checkSamlProvider(provider, rules);
  }
}

/** The identity provider's metadata, as a sign-in reads it (its entity, sign-on address and certificates). */
async function checkSamlProvider(provider: IdentityProvider, rules: FetchRules): Promise<ProviderCheck[]> {
  try {
    const idp = await idpMetadata(provider, rules);
    const n = idp.certificates.length;
    return [
      passed('metadata', `${provider.saml?.metadata.url ? `read ${provider.saml.metadata.url}` : 'read inline'}: entity ${idp.entityId}`),
      passed('sign-on', `people sign in at ${idp.signOnUrl} (HTTP-Redirect); ${n} signing certificate${n === 1 ? '' : 's'}`),
    ];
  } catch (err) {
    return [failed('metadata', err, 'the metadata')];
  }
}

async function checkOpenIdProvider(provider: IdentityProvider, secret: string | undefined, redirectUri: string): Promise<ProviderCheck[]> {
  const issuer = provider.oidc!.issuer;
  const checks: ProviderCheck[] = [];
  // Discovery 1.0 §4: the metadata at the issuer's /.well-known/openid-configuration; its issuer, exactly the configured one (§4.3).
  let named: unknown;
  try {
    const url = providerUrl(issuer, 'the issuer');
    url.pathname = `${url.pathname.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const response = await upstreamFetch(url, { headers: { Accept: 'application/json' } });
    if (response.status !== 200) throw new UpstreamError('misconfigured', `discovery: ${url.href} answered ${response.status}`);
    named = ((await response.json()) as { issuer?: unknown }).issuer;
    checks.push(passed('discovery', `read ${url.href}`));
  } catch (err) {
    return [failed('discovery', err, 'discovery')];
  }
  if (named !== issuer) {
    checks.push({
      check: 'issuer',
      ok: false,
      detail: `the metadata names the issuer ${JSON.stringify(named)}, not ${JSON.stringify(issuer)}: ID tokens would carry that one`,
    });
    return checks;
  }
  checks.push(passed('issuer', `the metadata names ${issuer}`));
  let jwksUri: string;
  try {
    jwksUri = (await fetchMetadata(issuer)).server.jwks_uri!;
  } catch (err) {
    return [...checks, failed('endpoints', err, 'discovery')];
  }
  checks.push(await keysLoad(jwksUri));
  return [...checks, ...(await checkCodeFlow(provider, secret, redirectUri))];
}

/** The provider's published keys (RFC 7517): a JSON Web Key Set with a key in it. */
async function keysLoad(jwksUri: string): Promise<ProviderCheck> {
  try {
    const response = await upstreamFetch(providerUrl(jwksUri, 'jwks_uri'), { headers: { Accept: 'application/json' } });
    if (response.status !== 200) throw new UpstreamError('invalid', `jwks_uri answered ${response.status}`);
    const keys = ((await response.json()) as { keys?: unknown }).keys;
    if (!Array.isArray(keys) || keys.length === 0) throw new UpstreamError('invalid', 'jwks_uri: no keys');
    return passed('keys', `${keys.length} key${keys.length === 1 ? '' : 's'} at ${jwksUri}`);
  } catch (err) {
    return failed('keys', err, 'jwks_uri');
  }
}

/** The client's credentials, by a token request with a code the provider never gave. */
async function checkCodeFlow(provider: IdentityProvider, secret: string | undefined, redirectUri: string): Promise<ProviderCheck[]> {
  let flow: CodeFlowServer;
  try {
    flow = await codeFlowOf(provider);
  } catch (err) {
    return [failed('settings', err, 'the settings')];
  }
  return [await clientAccepted(flow, secret, redirectUri)];
}

async function clientAccepted(flow: CodeFlowServer, secret: string | undefined, redirectUri: string): Promise<ProviderCheck> {
  const made = (): string => `boxauth-check-${randomBytes(16).toString('base64url')}`;
  const client = clientOf(flow.clientId, Date.now);
  const state = made();
  const auth = secret === undefined ? oauth.None() : oauth.ClientSecretBasic(secret);
  try {
    const tokenEndpoint = providerUrl(flow.server.token_endpoint ?? '', 'the token endpoint');
    const callback = new URLSearchParams({ code: made(), state, ...(flow.server.issuer ? { iss: flow.server.issuer } : {}) });
    const params = oauth.validateAuthResponse(flow.server, client, callback, state);
    const verifier = `${made()}${made()}`;
    const response = await oauth.authorizationCodeGrantRequest(
      flow.server,
      client,
      auth,
      params,
      redirectUri,
      verifier,
      requestOptions(tokenEndpoint),
    );
    await oauth.processAuthorizationCodeResponse(flow.server, client, response);
    return { check: 'client', ok: false, detail: 'the token endpoint gave tokens for a made-up code' };
  } catch (err) {
    const code = tokenEndpointErrorCode(err);
    if (code !== undefined && CODE_REFUSED.has(code))
      return passed('client', `the token endpoint authenticated client ${flow.clientId} (it refused a made-up code: ${code})`);
    const said = tokenEndpointError(err, 'the token endpoint');
    return { check: 'client', ok: false, detail: `${said.failure}: ${said.message}` };
  }
}

/** LDAP result code 32, noSuchObject (RFC 4511 §4.1.9): the base of a search does not exist. */
const NO_SUCH_OBJECT = 32;

async function checkDirectory(settings: LdapSettings, bindPassword: string | undefined): Promise<ProviderCheck[]> {
  const timeoutMs = settings.timeoutSeconds ? settings.timeoutSeconds * 1000 : UPSTREAM_TIMEOUT_MS;
  let connection: LdapConnection;
  try {
    connection = await LdapConnection.open(settings, timeoutMs);
  } catch (err) {
    return [failed('connect', err, 'connecting')];
  }
  const checks: ProviderCheck[] = [passed('connect', `connected to ${settings.url}`)];
  try {
    if (settings.bindDN) {
      if (!bindPassword) return [...checks, { check: 'bind', ok: false, detail: `no password for ${settings.bindDN} in the secret` }];
      try {
        await connection.bind(settings.bindDN, bindPassword);
        checks.push(passed('bind', `bound as ${settings.bindDN}`));
      } catch (err) {
        const refused = err instanceof ldap().ResultCodeError;
        const detail = refused ? `the directory refused the bind as ${settings.bindDN} (${err.message.split('\n')[0]})` : undefined;
        return [...checks, detail ? { check: 'bind', ok: false, detail } : failed('bind', failure('the bind', err, timeoutMs), 'the bind')];
      }
    } else checks.push(passed('bind', 'no bindDN: the searches run anonymously'));
    checks.push(await baseExists(connection, 'userSearch.baseDN', settings.userSearch.baseDN, timeoutMs));
    if (settings.groupSearch) checks.push(await baseExists(connection, 'groupSearch.baseDN', settings.groupSearch.baseDN, timeoutMs));
    return checks;
  } finally {
    await connection.close();
  }
}

async function baseExists(connection: LdapConnection, check: string, dn: string, timeoutMs: number): Promise<ProviderCheck> {
  try {
    const found = await connection.search(dn, new (ldap().PresenceFilter)({ attribute: 'objectClass' }), {
      scope: 'base',
      attributes: ['1.1'],
      sizeLimit: 1,
    });
    if (found.length === 0) return { check, ok: false, detail: `the entry ${dn} cannot be read` };
    return passed(check, `the entry ${dn} exists`);
  } catch (err) {
    if (err instanceof ldap().ResultCodeError && err.code === NO_SUCH_OBJECT)
      return { check, ok: false, detail: `no entry ${dn} in the directory` };
    return failed(check, failure('the search', err, timeoutMs), 'the search');
  }
}

/** What checking a stored provider uses. */
export interface CheckServices {
  pool: Pool;
  factorKey: Buffer;
  config: Pick<Config, 'baseUrl' | 'clientMetadata'>;
}

/**
 * The checks of IdentityProvider `id` as stored (enabled or not: an administrator tries a provider
 * before turning it on), with its secret; undefined when there is no such provider.
 */
export async function checkStoredProvider(svc: CheckServices, id: string): Promise<{ ok: boolean; checks: ProviderCheck[] } | undefined> {
  const stored = await identityProviders.read(svc.pool, id);
  if (!stored) return undefined;
  const secret = providerSecret(svc.factorKey, id, stored.secretSealed ?? null);
  const checks = await checkProvider(stored.resource, secret, callbackUrl(svc.config.baseUrl, id), clientDocumentRules(svc.config));
  return { ok: checks.every((c) => c.ok), checks };
}
