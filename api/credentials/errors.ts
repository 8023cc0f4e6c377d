// Every OAuth error code the box answers, in one table: where it is answered and with which status.
// A code is answered in three places:
// - `endpoint`: in a JSON body, at the endpoints a client calls (the token endpoint, RFC 6749 §5.2;
//   PAR, RFC 9126 §2.3; device authorization, RFC 8628 §3.2; introspection and revocation), with
//   this status. A request that is not one at all is answered by its HTTP status with
//   invalid_request: 405 for a method but POST, 415 for a body of another type (api/http/).
// - `redirect`: in the authorization response, back to the client's redirect URI (RFC 6749 §4.1.2.1,
//   §4.2.2.1; OpenID Connect Core §3.1.2.6), or with 400 at PAR when the request is pushed.
// - `resource`: at a protected resource (the box's API, userinfo, the decision point of the apps),
//   with this status and the code in WWW-Authenticate (RFC 6750 §3.1, RFC 9449 §7.1, RFC 9470 §3).
// A handler only says which code and why; the status and headers follow from here. The codes of the
// box's own REST API (not_found, conflict, method_not_allowed, invalid_entity, payload_too_large…)
// are not OAuth's: they are ApiErrors of api/errors.ts and the throttle.
import { ApiError } from '../errors.js';

interface Answered {
  endpoint?: number;
  redirect?: true;
  resource?: number;
  /** Where the code is defined. */
  spec: string;
}

export const OAUTH_ERRORS = {
  invalid_request: { endpoint: 400, redirect: true, resource: 400, spec: 'RFC 6749 §5.2, §4.1.2.1; RFC 6750 §3.1' },
  invalid_client: { endpoint: 401, spec: 'RFC 6749 §5.2' },
  invalid_grant: { endpoint: 400, spec: 'RFC 6749 §5.2' },
  unauthorized_client: { endpoint: 400, redirect: true, spec: 'RFC 6749 §5.2, §4.1.2.1' },
  unsupported_grant_type: { endpoint: 400, spec: 'RFC 6749 §5.2' },
  invalid_scope: { endpoint: 400, redirect: true, spec: 'RFC 6749 §5.2, §4.1.2.1' },
  unsupported_response_type: { endpoint: 400, redirect: true, spec: 'RFC 6749 §4.1.2.1' },
  // The person said no (the redirect, the device grant's poll), or a policy did (the box's API).
  access_denied: { endpoint: 400, redirect: true, resource: 403, spec: 'RFC 6749 §4.1.2.1; RFC 8628 §3.5' },
  // A bug, wherever it happens (api/http/errors.ts), never redirected; a busy box (the secrets' queue, a full process).
  server_error: { endpoint: 500, resource: 500, spec: 'RFC 6749 §4.1.2.1' },
  temporarily_unavailable: { endpoint: 503, redirect: true, resource: 503, spec: 'RFC 6749 §4.1.2.1' },
  // RFC 8707 §2: a resource the client may not ask for, or that is not an absolute URI.
  invalid_target: { endpoint: 400, redirect: true, spec: 'RFC 8707 §2; RFC 8693 §2.2.2' },
  // RFC 8628 §3.5: the device grant's answers while a person has not decided.
  authorization_pending: { endpoint: 400, spec: 'RFC 8628 §3.5' },
  slow_down: { endpoint: 400, spec: 'RFC 8628 §3.5' },
  expired_token: { endpoint: 400, spec: 'RFC 8628 §3.5' },
  // RFC 9449: a DPoP proof refused, or one without the box's nonce; 400 at the token endpoint, 401 at a resource.
  invalid_dpop_proof: { endpoint: 400, resource: 401, spec: 'RFC 9449 §5, §7.1' },
  use_dpop_nonce: { endpoint: 400, resource: 401, spec: 'RFC 9449 §8, §9' },
  invalid_token: { resource: 401, spec: 'RFC 6750 §3.1' },
  insufficient_scope: { resource: 403, spec: 'RFC 6750 §3.1' },
  // RFC 9470 §3: the sign-in behind the token is short of what the app asks (acr_values in the challenge).
  insufficient_user_authentication: { resource: 401, spec: 'RFC 9470 §3' },
  // OpenID Connect Core §3.1.2.6: prompt=none, and nothing may be shown.
  login_required: { redirect: true, spec: 'OpenID Connect Core §3.1.2.6' },
  consent_required: { redirect: true, spec: 'OpenID Connect Core §3.1.2.6' },
  // RFC 9101 §6.3: a request object unsigned, wrongly signed, expired, replayed or not for this box
  // (api/oauth/request-object.ts); at PAR too (RFC 9126 §2.3). A request_uri is only ever one of the
  // box's own pushed requests: any other is request_uri_not_supported (Core §6).
  invalid_request_object: { endpoint: 400, redirect: true, spec: 'RFC 9101 §6.3; OpenID Connect Core §3.1.2.6, §6.3' },
  request_uri_not_supported: { endpoint: 400, redirect: true, spec: 'OpenID Connect Core §3.1.2.6, §6' },
  // RFC 7591 §3.2.2: dynamic client registration's (POST /auth/register), answered "with an HTTP 400 status code".
  invalid_redirect_uri: { endpoint: 400, spec: 'RFC 7591 §3.2.2' },
  invalid_client_metadata: { endpoint: 400, spec: 'RFC 7591 §3.2.2' },
} as const satisfies Record<string, Answered>;

type Errors = typeof OAUTH_ERRORS;
export type OAuthErrorCode = keyof Errors;
/** The codes answered at the endpoints a client calls (token, PAR, device authorization…). */
export type EndpointErrorCode = { [C in OAuthErrorCode]: Errors[C] extends { endpoint: number } ? C : never }[OAuthErrorCode];
/** The codes sent back in the authorization response. */
export type RedirectErrorCode = { [C in OAuthErrorCode]: Errors[C] extends { redirect: true } ? C : never }[OAuthErrorCode];
/** The codes of a protected resource's challenge. */
export type ResourceErrorCode = { [C in OAuthErrorCode]: Errors[C] extends { resource: number } ? C : never }[OAuthErrorCode];

/** Whether a code is also sent back in the authorization response. */
export const isRedirectErrorCode = (code: OAuthErrorCode): code is RedirectErrorCode => 'redirect' in OAUTH_ERRORS[code];

/** A refusal at an endpoint a client calls: the status is the code's (OAUTH_ERRORS), the headers follow from it. */
export class OAuthError extends ApiError {
  declare readonly code: EndpointErrorCode;

  constructor(code: EndpointErrorCode, description: string, options: { basicAuthUsed?: boolean; dpopNonce?: string } = {}) {
    const headers: Record<string, string> = {};
    // RFC 6749 §5.2: a failed Basic authentication answers with the scheme the client used.
    if (code === 'invalid_client' && options.basicAuthUsed) headers['WWW-Authenticate'] = 'Basic realm="boxauth"';
    // RFC 9449 §8: the nonce to use next, with use_dpop_nonce (and with other answers to a proof).
    if (options.dpopNonce) headers['DPoP-Nonce'] = options.dpopNonce;
    super(OAUTH_ERRORS[code].endpoint, code, description, headers);
  }
}

/** A protected resource's refusal: the status is the code's (OAUTH_ERRORS); `headers` carry its challenge (WWW-Authenticate). */
export const resourceError = (code: ResourceErrorCode, description: string, headers: Record<string, string> = {}): ApiError =>
  new ApiError(OAUTH_ERRORS[code].resource, code, description, headers);

export const invalidRequest = (d: string): OAuthError => new OAuthError('invalid_request', d);
export const invalidGrant = (d: string): OAuthError => new OAuthError('invalid_grant', d);
