// The FAPI 2.0 Security Profile (final), for a Client with `profile: fapi2` (docs/guides/fapi2.md).
// What a fapi2 client may not be written with is refused when it is written (crds/client.yaml's
// rules and their twins in api/schema/resources.ts: no implicit grant, no secret, no ServiceAccount
// or SPIFFE token, token_endpoint_auth_method required, no RS256 ID tokens); what a request of
// such a client must be is here, each rule with the sentence of the profile it carries out, and
// asked for by the endpoint it belongs to (the authorization request, client authentication, the
// token endpoint, the code's lifetime).
import type { Client } from '../types.js';
import { isCredentialMethod } from '../client-keys.js';
import { OAuthError, type EndpointErrorCode, type RedirectErrorCode } from '../credentials/errors.js';

/** Whether `client` is held to the FAPI 2.0 Security Profile. */
export const isFapi2 = (client: Pick<Client, 'profile'>): boolean => client.profile === 'fapi2';

/**
 * §5.3.2.2: "shall reject authorization requests sent without [RFC9126]" — a fapi2 client's
 * requests must be pushed as require_pushed_authorization_requests asks.
 */
export const mustPush = (client: Client): boolean => client.require_pushed_authorization_requests === true || isFapi2(client);

/**
 * What a fapi2 client's authorization request must be (pushed, checked at PAR and again at the
 * authorization endpoint); undefined for any other client, or a request that is all of it.
 */
export function fapi2AuthorizationRefusal(
  client: Client,
  params: Record<string, string>,
): { error: RedirectErrorCode & EndpointErrorCode; description: string } | undefined {
  if (!isFapi2(client)) return undefined;
  const held = `client "${client.id}" is held to FAPI 2.0`;
  // §5.3.2.2: "shall only support the authorization code grant" (and §5.3.2.1: "shall only issue
  // sender-constrained access tokens", which a token of the authorization endpoint never is).
  if (params.response_type !== 'code')
    return { error: 'unauthorized_client', description: `${held}: response_type must be code (the authorization code flow only)` };
  // §5.3.2.2: "shall require PAR requests, if applicable, to use PKCE ([RFC7636]) with S256 as
  // the code challenge method". Without code_challenge_method, RFC 7636 §4.3 means plain.
  if (params.code_challenge === undefined || params.code_challenge_method !== 'S256')
    return { error: 'invalid_request', description: `${held}: send code_challenge with code_challenge_method=S256 (PKCE)` };
  // §5.3.2.2: "shall require the redirect_uri parameter in pushed authorization requests".
  if (params.redirect_uri === undefined) return { error: 'invalid_request', description: `${held}: send redirect_uri` };
  return undefined;
}

/**
 * Why a fapi2 client that authenticated as `method` is refused all the same: by anything but its
 * keys or its certificate (§5.3.2.1: "shall authenticate clients using one of the following methods:
 * MTLS as specified in section 2 of [RFC8705]; private_key_jwt as specified in section 9 of [OIDC]"
 * — a secret in HTTP Basic or the body, client_id alone, a ServiceAccount's or another issuer's
 * token are none of these). Undefined: it may, or it is no fapi2 client.
 */
export function fapi2AuthMethodRefusal(client: Client, method: string): string | undefined {
  // The methods of a credential of the client's own (../client-keys.ts) are the profile's: keys or a certificate.
  if (!isFapi2(client) || isCredentialMethod(method)) return undefined;
  const used = method === 'none' ? 'client_id alone (none)' : method;
  return `client "${client.id}" is held to FAPI 2.0: it authenticates with private_key_jwt or mutual TLS only, never ${used} (FAPI 2.0 5.3.2.1)`;
}

/**
 * §5.3.2.1: "shall only issue sender-constrained access tokens" (DPoP or MTLS): a fapi2 client's
 * token request without a client certificate to bind to must carry a DPoP proof, as one of a client
 * with dpop_bound_access_tokens must (RFC 9449 §5.2: "reject token requests from this client that
 * do not contain the DPoP header"). Refresh requests too: the access tokens they issue are bound,
 * and the refresh token itself is bound to the client's authentication (RFC 9449 §5: a confidential
 * client's refresh token "already sender-constrained with a different existing mechanism").
 */
export const mustSendDpopProof = (client: Client, certificateBound: boolean): boolean =>
  client.dpop_bound_access_tokens === true || (isFapi2(client) && !certificateBound);

/** §5.4.1: "shall use PS256, ES256, or EdDSA (using the Ed25519 variant) algorithms". */
export const FAPI2_ALGS: readonly string[] = ['PS256', 'ES256', 'EdDSA'];

/**
 * A fapi2 client's DPoP proof (checked already: api/credentials/dpop/) signed with another
 * algorithm than §5.4.1's, refused with RFC 9449 §5's code; the box takes RS256 and ES384/ES512
 * proofs of other clients.
 */
export function dpopAlgRefusal(client: Client, proofs: readonly string[] | undefined): OAuthError | undefined {
  if (!isFapi2(client) || !proofs?.length) return undefined;
  const alg = headerAlg(proofs[0]!);
  return alg !== undefined && FAPI2_ALGS.includes(alg)
    ? undefined
    : new OAuthError(
        'invalid_dpop_proof',
        `client "${client.id}" is held to FAPI 2.0: its DPoP proofs are signed with ${FAPI2_ALGS.join(', ')}`,
      );
}

function headerAlg(jwt: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(jwt.split('.')[0] ?? '', 'base64url').toString('utf8')) as { alg?: unknown };
    return typeof header.alg === 'string' ? header.alg : undefined;
  } catch {
    return undefined;
  }
}

/** §5.3.2.1: "shall issue authorization codes with a maximum lifetime of 60 seconds". */
export const FAPI2_CODE_SECONDS = 60;

/** How long a code issued to `client` lives: the box's setting (BOXAUTH_AUTH_CODE_TTL_SECONDS), 60 s at most for a fapi2 client. */
export const codeLifetimeSeconds = (configured: number, client: Client): number =>
  isFapi2(client) ? Math.min(configured, FAPI2_CODE_SECONDS) : configured;

/** §5.4.1 again, for the ID tokens of a fapi2 client that did not choose: ES256 (the box signs no PS256). */
export const FAPI2_ID_TOKEN_ALG = 'ES256';
