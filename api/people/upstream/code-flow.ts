// The authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636, RFC 9700) as the box runs it
// against every OAuth provider, OpenID or not: where to send the browser, what its return must
// carry, and the code exchanged for tokens — once, with the verifier only this sign-in holds.
import * as oauth from 'oauth4webapi';
import { CLOCK_SKEW_SECONDS } from './id-token.js';
import { providerUrl, requestOptions, tokenEndpointError, upstreamError } from './http.js';
import { UpstreamError } from './profile.js';

export interface UpstreamRequest {
  state: string;
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
}

/** A provider as the code flow sees it. */
export interface CodeFlowServer {
  server: oauth.AuthorizationServer;
  clientId: string;
  scopes: string[];
  /** An OpenID provider: the request carries a nonce, and the answer an ID token. */
  openid: boolean;
}

export async function codeAuthorizationUrl(flow: CodeFlowServer, request: UpstreamRequest): Promise<URL> {
  const url = providerUrl(flow.server.authorization_endpoint ?? '', 'the authorization endpoint');
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', flow.clientId);
  url.searchParams.set('redirect_uri', request.redirectUri);
  url.searchParams.set('scope', flow.scopes.join(' '));
  url.searchParams.set('state', request.state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(request.codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  if (flow.openid) url.searchParams.set('nonce', request.nonce);
  return url;
}

/** The client as oauth4webapi checks tokens for it: on the clock the box is given. */
export function clientOf(clientId: string, now: () => number): oauth.Client {
  return {
    client_id: clientId,
    [oauth.clockSkew]: Math.round((now() - Date.now()) / 1000),
    [oauth.clockTolerance]: CLOCK_SKEW_SECONDS,
  };
}

/**
 * The callback's parameters checked (state; RFC 9207's iss where the provider sends it; an error
 * the provider says), then its code exchanged with the client secret (client_secret_basic; none
 * without one) and the PKCE verifier. The token response as oauth4webapi checked it.
 */
export async function exchangeCode(
  flow: CodeFlowServer,
  secret: string | undefined,
  request: UpstreamRequest,
  callback: URL,
  now: () => number,
): Promise<oauth.TokenEndpointResponse> {
  const client = clientOf(flow.clientId, now);
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(flow.server, client, callback.searchParams, request.state);
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError) throw refusal(err.error);
    throw upstreamError(err, 'the callback');
  }
  const tokenEndpoint = providerUrl(flow.server.token_endpoint ?? '', 'the token endpoint');
  const auth = secret === undefined ? oauth.None() : oauth.ClientSecretBasic(secret);
  try {
    const response = await oauth.authorizationCodeGrantRequest(
      flow.server,
      client,
      auth,
      params,
      request.redirectUri,
      request.codeVerifier,
      requestOptions(tokenEndpoint),
    );
    return await oauth.processAuthorizationCodeResponse(flow.server, client, response, {
      ...(flow.openid ? { expectedNonce: request.nonce, requireIdToken: true } : {}),
    });
  } catch (err) {
    throw tokenEndpointError(err, 'the token endpoint');
  }
}

/** The provider's answer of an error at the callback (RFC 6749 §4.1.2.1). */
function refusal(error: string): UpstreamError {
  if (error === 'access_denied') return new UpstreamError('refused', 'the provider refused the sign-in (access_denied)');
  if (error === 'temporarily_unavailable' || error === 'server_error') {
    return new UpstreamError('unavailable', `the provider could not sign the person in (${error})`);
  }
  return new UpstreamError('invalid', `the provider answered an error (${/^[\x20-\x7e]{1,64}$/.test(error) ? error : 'unreadable'})`);
}
