// GET /auth/authorize: the implicit (response_type=token) and authorization code
// (response_type=code) requests. The client and the redirect URI are checked
// first: until both are known good, nothing is ever redirected (RFC 6749 §4.1.2.1);
// after that, errors travel back to the client in the redirect.
import { randomBytes } from 'node:crypto';
import type { Services } from '../services.js';
import { createAuthorizationCode } from '../store/browser.js';
import type { Stored } from '../store/resources.js';
import type { Client, GrantSettings } from '../types.js';
import { grantedScope } from './entitlements.js';
import { OAuthError } from './errors.js';
import { scopeParam } from './params.js';
import { isChallenge } from './pkce.js';
import { mint, tokenHash } from './tokens.js';

export interface AuthorizeRequest {
  responseType: 'token' | 'code';
  client: Stored<Client>;
  redirectUri: string;
  state: string | undefined;
  scope: string | undefined;
  codeChallenge: string | undefined;
  /** The request's parameters, to carry through sign-in and consent. */
  params: Record<string, string>;
}

/** A problem shown on a page of the box: the redirect URI is not trusted. */
export interface PageProblem {
  kind: 'page';
  status: number;
  title: string;
  message: string;
}

/** A problem sent back to the client in the redirect. */
export interface RedirectProblem {
  kind: 'redirect';
  location: string;
}

export const AUTHORIZE_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'state', 'scope', 'code_challenge', 'code_challenge_method'];

function grantOf(responseType: string | undefined): 'implicit' | 'authorization_code' | undefined {
  return responseType === 'token' ? 'implicit' : responseType === 'code' ? 'authorization_code' : undefined;
}

/** The redirect URI with the response in the query (code) or the fragment (implicit). */
export function redirectTo(redirectUri: string, responseType: 'token' | 'code', values: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  const pairs = Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined);
  if (responseType === 'code') {
    for (const [k, v] of pairs) url.searchParams.set(k, v);
  } else {
    url.hash = new URLSearchParams(pairs).toString();
  }
  return url.toString();
}

export async function parseAuthorizeRequest(
  svc: Services, raw: Record<string, unknown>,
): Promise<AuthorizeRequest | PageProblem | RedirectProblem> {
  const params: Record<string, string> = {};
  for (const name of AUTHORIZE_PARAMS) {
    const v = raw[name];
    if (Array.isArray(v)) return { kind: 'page', status: 400, title: 'Invalid request', message: `The parameter ${name} was given more than once.` };
    if (typeof v === 'string' && v !== '') params[name] = v;
  }
  const page = (message: string, title = 'This sign-in link is not valid'): PageProblem => ({ kind: 'page', status: 400, title, message });
  if (!params.client_id) return page('The request names no client (client_id is missing).');
  // An unknown client and a redirect URI it did not register get the same page, which
  // names neither: the page must not tell a stranger which client ids exist. The log says which.
  const unknown = (why: string): PageProblem => {
    svc.log.info({ event: 'authorize_refused', client: params.client_id, reason: why }, 'authorization request refused');
    return page('The application sent you here with a client or a redirect URI that this box does not know. '
      + 'Go back to the application; if it keeps happening, tell its developers.');
  };
  const client = await svc.clients.get(params.client_id);
  if (!client) return unknown('unknown client');

  // The redirect URI must be the one configured for the grant, to the letter.
  const grant = grantOf(params.response_type);
  const configured = (grant ? (client.resource.auth?.[grant] as GrantSettings | undefined)?.redirect_uri : undefined)
    ?? [client.resource.auth?.authorization_code?.redirect_uri, client.resource.auth?.implicit?.redirect_uri].find((u) => u === params.redirect_uri);
  if (!configured) return unknown(grant ? `no auth.${grant}.redirect_uri` : 'redirect URI not registered');
  if (params.redirect_uri !== undefined && params.redirect_uri !== configured) return unknown('redirect URI differs from the registered one');
  const redirectUri = configured;

  const fail = (error: string, description: string): RedirectProblem => ({
    kind: 'redirect',
    location: redirectTo(redirectUri, grant === 'implicit' ? 'token' : 'code', { error, error_description: description, state: params.state }),
  });
  if (!grant) return fail('unsupported_response_type', 'response_type must be "token" or "code"');
  if (!client.resource.grant_types.includes(grant)) {
    return fail('unauthorized_client', `client "${client.resource.id}" may not use the ${grant} grant`);
  }
  let codeChallenge: string | undefined;
  if (grant === 'authorization_code') {
    if (params.code_challenge_method !== undefined && params.code_challenge_method !== 'S256') {
      return fail('invalid_request', 'code_challenge_method must be S256');
    }
    if (params.code_challenge !== undefined) {
      if (!isChallenge(params.code_challenge)) return fail('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)');
      codeChallenge = params.code_challenge;
    } else if (!client.secretHash) {
      return fail('invalid_request', 'a client without a secret must use PKCE: send code_challenge and code_challenge_method=S256');
    }
  }
  let scope: string | null;
  try {
    scope = grantedScope(client.resource, scopeParam(params.scope));
  } catch (err) {
    if (err instanceof OAuthError) return fail(err.code, err.message);
    throw err;
  }
  return {
    responseType: params.response_type as 'token' | 'code',
    client,
    redirectUri,
    state: params.state,
    scope: scope ?? undefined,
    codeChallenge,
    params,
  };
}

export function deniedRedirect(req: AuthorizeRequest): string {
  return redirectTo(req.redirectUri, req.responseType, {
    error: 'access_denied', error_description: 'the user denied access', state: req.state,
  });
}

/** Issues what the request asked for to `userId`; returns where to send the browser. */
export async function grantAuthorization(svc: Services, req: AuthorizeRequest, userId: number): Promise<string> {
  if (req.responseType === 'code') {
    const code = randomBytes(32).toString('base64url');
    await createAuthorizationCode(svc.pool, tokenHash(code), {
      clientId: req.client.resource.id, userId, redirectUri: req.redirectUri, scope: req.scope ?? null,
      codeChallenge: req.codeChallenge ?? null, expiresAt: new Date(Date.now() + svc.config.authCodeTtlSeconds * 1000),
    });
    return redirectTo(req.redirectUri, 'code', { code, state: req.state });
  }
  // Implicit: the token itself travels in the fragment; no refresh token is ever issued this way.
  const settings = req.client.resource.auth?.implicit ?? {};
  const { session, response } = mint({
    type: 'implicit', origin: 'implicit', client: req.client.resource, settings: { ...settings, refresh_token: false },
    userId, scope: req.scope ?? null, refresh: false,
  }, svc.config.baseUrl, svc.keyring.active);
  await svc.sessionWriter.insert(session);
  svc.metrics.tokens.inc({ grant: 'implicit' });
  return redirectTo(req.redirectUri, 'token', {
    access_token: response.access_token,
    token_type: 'Bearer',
    ...(response.expires_in ? { expires_in: String(response.expires_in) } : {}),
    ...(req.scope ? { scope: req.scope } : {}),
    state: req.state,
  });
}
