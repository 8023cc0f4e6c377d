// The discovery documents, and the OpenAPI document of the whole API. The OAuth endpoints that take a body (token,
// introspection, revocation, PAR…) are answered before any middleware: see ../oauth-endpoints.ts.
import { REQUEST_OBJECT_ALGS } from '../../oauth/request-object.js';
import { CLIENT_ASSERTION_ALGS } from '../../client-keys.js';
import { Router } from '../router.js';
import fs from 'node:fs';
import { RESPONSE_TYPES } from '../../oauth/authorization-request.js';
import { RESPONSE_MODES } from '../../oauth/response-mode.js';
import { DPOP_ALGS } from '../../credentials/dpop/proof.js';
import { grants } from '../../oauth/token-endpoint.js';
import { projectPath } from '../../paths.js';
import { openApiDocument } from '../../schema/openapi.js';
import type { Config } from '../../config.js';
import type { Keyring } from '../../credentials/keyring.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  keyring: Keyring;
}

/**
 * The authorization server's metadata (RFC 8414 §2). The OpenID Connect discovery
 * document (./openid.ts) is this and OpenID's own fields, so that the two never
 * tell a client different things about the same endpoints.
 */
/**
 * The mutual-TLS methods (RFC 8705 §2) this box can take: none unless a certificate can reach it (its own
 * TLS asks for one, or a proxy forwards it); tls_client_auth only with CAs to judge its chain by.
 */
function certificateMethods(config: Config): string[] {
  const { request, header, caFile } = config.clientCertificates;
  if (!request && header === undefined) return [];
  return [...(caFile !== undefined ? ['tls_client_auth'] : []), 'self_signed_tls_client_auth'];
}

export function authorizationServerMetadata(svc: Pick<Needs, 'config'>): Record<string, unknown> {
  const base = svc.config.baseUrl;
  const mtls = certificateMethods(svc.config);
  const spiffe = svc.config.spiffeTrustDomains.length ? ['spiffe_jwt'] : [];
  return {
    issuer: base,
    authorization_endpoint: `${base}/auth/authorize`,
    token_endpoint: `${base}/auth/token`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    introspection_endpoint: `${base}/auth/introspect`,
    revocation_endpoint: `${base}/auth/revoke`,
    device_authorization_endpoint: `${base}/auth/device`,
    grant_types_supported: [...grants.keys(), 'implicit'],
    response_types_supported: RESPONSE_TYPES,
    // Multiple Response Type Encoding Practices §2.1 and Form Post Response Mode (api/oauth/response-mode.ts).
    response_modes_supported: RESPONSE_MODES,
    // spiffe_jwt (a JWT-SVID, draft-ietf-oauth-spiffe-client-auth-02) only when the box trusts a SPIFFE trust domain.
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', ...mtls, ...spiffe, 'none'],
    // private_key_jwt: an assertion signed with the client's own key (jwks, jwks_uri) takes these algorithms
    // only (api/client-keys.ts: RS256, HS* and none are refused). A workload's ServiceAccount token, sent
    // the same way, is its issuer's assertion, verified with that issuer's keys and algorithms.
    token_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGS,
    // Both kinds of client assertion authenticate here as at the token endpoint.
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', ...mtls, ...spiffe],
    // RFC 8705 §3.3: the box binds access tokens to the client certificate of the token request.
    ...(mtls.length ? { tls_client_certificate_bound_access_tokens: true } : {}),
    introspection_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGS,
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', ...mtls, ...spiffe],
    revocation_endpoint_auth_signing_alg_values_supported: CLIENT_ASSERTION_ALGS,
    code_challenge_methods_supported: ['S256'],
    // RFC 9207 §3: every authorization response carries iss (api/oauth/response-mode.ts answerTo), in every mode.
    authorization_response_iss_parameter_supported: true,
    // RFC 9126 §5. PAR is required per client (its require_pushed_authorization_requests), not of every client.
    pushed_authorization_request_endpoint: `${base}/auth/par`,
    require_pushed_authorization_requests: false,
    // RFC 9101 §10.1 / OpenID Connect Discovery §3: signed request objects by value, at /auth/authorize and
    // /auth/par (api/oauth/request-object.ts), with the algorithms of client assertions (none refused). A
    // request_uri is only ever one of the box's pushed requests: none the client hosts is fetched.
    request_parameter_supported: true,
    request_uri_parameter_supported: false,
    request_object_signing_alg_values_supported: REQUEST_OBJECT_ALGS,
    // RFC 9449 §5.1: the algorithms of DPoP proofs the token endpoint and the box's resources accept.
    dpop_signing_alg_values_supported: DPOP_ALGS,
    // draft-ietf-oauth-client-id-metadata-document §6: a client_id may be the URL of the client's
    // metadata document (api/oauth/agents.ts); AccessPolicies decide which ones are admitted.
    client_id_metadata_document_supported: true,
    // RFC 8414 §2: "registration_endpoint OPTIONAL": only while dynamic registration is on.
    ...(svc.config.dynamicRegistration.enabled ? { registration_endpoint: `${base}/auth/register` } : {}),
  };
}

/** The version in package.json (the box's release). */
function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
}

/** What the discovery and OpenAPI documents use. */
export type OAuthRouterServices = Pick<Needs, 'config' | 'keyring'>;

export function oauthRouter(svc: OAuthRouterServices): Router {
  const router = new Router();

  router.get('/.well-known/jwks.json', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=60').json(svc.keyring.jwks());
  });

  router.get('/.well-known/oauth-authorization-server', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(authorizationServerMetadata(svc));
  });

  // The REST API described (api/schema/openapi.ts): built once, it depends only on the code and the base URL.
  let openApi: string | undefined;
  router.get('/openapi.json', (_req, res) => {
    openApi ??= JSON.stringify(openApiDocument(svc.config.baseUrl, packageVersion()));
    res.set('Cache-Control', 'public, max-age=300').type('json').send(openApi);
  });

  return router;
}
