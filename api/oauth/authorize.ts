// GET /auth/authorize: the authorization code (response_type=code) and implicit
// (token, id_token, "id_token token") requests, with OpenID Connect's parameters.
// The client and the redirect URI are checked first: until both are known good,
// nothing is ever redirected (RFC 6749 §4.1.2.1); after that, errors travel back
// to the client in the redirect.
import { randomBytes } from 'node:crypto';
import type { Transaction, Pool } from '../db/pool.js';
import { describable } from '../errors.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Metrics } from '../metrics.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Audit } from '../audit.js';
import { insertSessions } from '../store/sessions.js';
import { whileSignedIn } from '../credentials/closing.js';
import { createAuthorizationCode, type BrowserSession } from '../store/browser.js';
import { consumePushedRequest, type PushedRequestClaim } from '../store/pushed-requests.js';
import type { Stored } from '../store/resources.js';
import type { UserRow } from '../store/users.js';
import type { Client } from '../types.js';
import { grantedAudience, grantedScope } from './entitlements.js';
import { OAuthError } from '../credentials/errors.js';
import { browserDetails, hasOpenid, idTokenFor, idTokenHintClaims, parseClaimsParameter, type RequestedClaims } from './openid.js';
import { resourceParam, scopeParam } from './params.js';
import { isThumbprint } from '../credentials/dpop/proof.js';
import { isChallenge } from '../credentials/pkce.js';
import { mint, tokenHash } from '../credentials/tokens.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
  pool: Pool;
  keyring: Keyring;
  metrics: Metrics;
  clients: RecordCache<Stored<Client>>;
  audit: Audit;
}

/** What the authorization endpoint needs to read a request and issue what it asks. */
export type AuthorizeServices = Pick<Needs, 'audit' | 'clients' | 'config' | 'keyring' | 'log' | 'metrics' | 'pool'>;

export type ResponseType = 'code' | 'token' | 'id_token' | 'id_token token';
export const RESPONSE_TYPES: readonly ResponseType[] = ['code', 'token', 'id_token', 'id_token token'];

/** OpenID Connect's prompt values the box serves (Core §3.1.2.1); select_account is a sign-in again. */
export type Prompt = 'none' | 'login' | 'consent' | 'select_account';
const PROMPTS: readonly Prompt[] = ['none', 'login', 'consent', 'select_account'];

export interface AuthorizeRequest {
  responseType: ResponseType;
  client: Stored<Client>;
  redirectUri: string;
  state: string | undefined;
  scope: string | undefined;
  codeChallenge: string | undefined;
  nonce: string | undefined;
  /** Claims asked for by name (the claims parameter, Core §5.5), or null. */
  claims: RequestedClaims | null;
  /** The audience the tokens will carry (RFC 8707 resource), when asked for. */
  audience?: string | undefined;
  /** The DPoP key the code is bound to (RFC 9449 §10: dpop_jkt), when named. */
  dpopJkt?: string | undefined;
  prompt: ReadonlySet<Prompt>;
  /** Seconds since sign-in beyond which the person signs in again. */
  maxAge: number | undefined;
  /** An email to offer on the sign-in page. */
  loginHint: string | undefined;
  /** The user an id_token_hint names (its sub). */
  hintedUser: string | undefined;
  /** The request's parameters, to carry through sign-in and consent (of a pushed request: client_id and request_uri). */
  params: Record<string, string>;
  /** The pushed request (RFC 9126) the parameters came from, claimed by this browser (./par.ts). */
  pushed?: PushedRequestClaim;
}

/** A problem shown on a page of the box: the redirect URI is not trusted. */
export interface PageProblem {
  kind: 'page';
  status: number;
  title: string;
  message: string;
}

/**
 * What a browser is shown for a pushed request's request_uri that is unknown, expired, used up,
 * another client's or claimed by another browser — and by every loser of many uses at once.
 * RFC 9126 §4: "Authorization servers SHOULD treat request_uri values as one-time use", and "An
 * expired request_uri MUST be rejected as invalid". Nothing is redirected: the request is gone, and
 * its one answer went (or goes) back to the client once, from the use that ended it (./par.ts); a
 * second answer with the same state could make the client drop the flow the first one completed.
 */
export function pushedRequestGone(svc: Pick<AuthorizeServices, 'log'>, clientId: string | undefined, reason: string): PageProblem {
  svc.log.info({ event: 'authorize_refused', client: clientId, reason }, 'authorization request refused');
  return {
    kind: 'page',
    status: 400,
    title: 'This sign-in link is not valid',
    message:
      'The sign-in link has expired, was used already, or was opened in another browser. Go back to the application and start again.',
  };
}

/** A problem sent back to the client in the redirect. */
export interface RedirectProblem {
  kind: 'redirect';
  location: string;
  /** What the redirect says, for an answer that is not a redirect (a pushed request's: ./par.ts). */
  error: string;
  description: string;
}

/** The way back from the sign-in page proves a sign-in made for the request with this (api/http/fresh-sign-in.ts). */
export const SIGN_IN_AFTER = 'sign_in_after';

export const AUTHORIZE_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'prompt',
  'max_age',
  'login_hint',
  'id_token_hint',
  'claims',
  'acr_values',
  'resource',
  'dpop_jkt',
  'request',
  'request_uri',
  SIGN_IN_AFTER,
];

function grantOf(responseType: string | undefined): 'implicit' | 'authorization_code' | undefined {
  if (responseType === 'code') return 'authorization_code';
  return RESPONSE_TYPES.includes(responseType as ResponseType) ? 'implicit' : undefined;
}

/** The redirect URI with the response in the query (code) or the fragment (the implicit kinds). */
export function redirectTo(redirectUri: string, responseType: ResponseType, values: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  const pairs = Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined);
  if (responseType === 'code') {
    for (const [k, v] of pairs) url.searchParams.set(k, v);
  } else {
    url.hash = new URLSearchParams(pairs).toString();
  }
  return url.toString();
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]']);

/**
 * Whether a requested redirect URI is the registered one: to the letter, except
 * that for a loopback address over http the port may differ (RFC 8252 §7.3: a
 * native app such as kubectl's sign-in listens on whatever port is free).
 */
/** The redirect URIs a grant's settings register: redirect_uri and redirect_uris, once each. */
export function registeredRedirectUris(settings: { redirect_uri?: string; redirect_uris?: string[] } | undefined): string[] {
  if (!settings) return [];
  return [...new Set([...(settings.redirect_uri ? [settings.redirect_uri] : []), ...(settings.redirect_uris ?? [])])];
}

export function redirectMatches(registered: string, requested: string): boolean {
  if (registered === requested) return true;
  let a: URL;
  let b: URL;
  try {
    a = new URL(registered);
    b = new URL(requested);
  } catch {
    return false;
  }
  return (
    a.protocol === 'http:' &&
    b.protocol === 'http:' &&
    LOOPBACK.has(a.hostname) &&
    b.hostname === a.hostname &&
    b.pathname === a.pathname &&
    b.search === a.search &&
    // nothing else in the request may differ, however it is spelled (user info, fragment, encodings)
    requested === `http://${b.host}${b.pathname}${b.search}`
  );
}

/**
 * The request in `raw`, or the problem with it. `pushed`: the parameters are those
 * of a pushed request (RFC 9126), being pushed now or claimed by this browser (./par.ts).
 */
export async function parseAuthorizeRequest(
  svc: AuthorizeServices,
  raw: Record<string, unknown>,
  pushed?: PushedRequestClaim | 'being-pushed',
): Promise<AuthorizeRequest | PageProblem | RedirectProblem> {
  const params: Record<string, string> = {};
  for (const name of AUTHORIZE_PARAMS) {
    const v = raw[name];
    if (Array.isArray(v))
      return { kind: 'page', status: 400, title: 'Invalid request', message: `The parameter ${name} was given more than once.` };
    if (typeof v === 'string' && v !== '') params[name] = v;
  }
  const page = (message: string, title = 'This sign-in link is not valid'): PageProblem => ({ kind: 'page', status: 400, title, message });
  if (!params.client_id) return page('The request names no client (client_id is missing).');
  // An unknown client and a redirect URI it did not register get the same page, which
  // names neither: the page must not tell a stranger which client ids exist. The log says which.
  const unknown = (why: string): PageProblem => {
    svc.log.info({ event: 'authorize_refused', client: params.client_id, reason: why }, 'authorization request refused');
    return page(
      'The application sent you here with a client or a redirect URI that this box does not know. ' +
        'Go back to the application; if it keeps happening, tell its developers.',
    );
  };
  const client = await svc.clients.get(params.client_id);
  if (!client) return unknown('unknown client');

  // The redirect URI must be one configured for the grant (redirectMatches). RFC 6749 §3.1.2.3: "If multiple
  // redirection URIs have been registered, [...] the client MUST include a redirection URI with the
  // authorization request"; with one registered, it may be left out.
  const grant = grantOf(params.response_type);
  const registered = grant ? registeredRedirectUris(client.resource.auth?.[grant]) : [];
  const candidates = registered.length
    ? registered
    : [...registeredRedirectUris(client.resource.auth?.authorization_code), ...registeredRedirectUris(client.resource.auth?.implicit)];
  if (!candidates.length) return unknown(grant ? `no auth.${grant}.redirect_uri` : 'redirect URI not registered');
  const redirectUri =
    params.redirect_uri === undefined
      ? registered.length === 1
        ? registered[0]
        : undefined
      : candidates.find((u) => redirectMatches(u, params.redirect_uri!)) && params.redirect_uri;
  if (!redirectUri) {
    return unknown(
      params.redirect_uri === undefined
        ? 'no redirect_uri, and the client registered several'
        : 'redirect URI differs from the registered ones',
    );
  }

  const responseType = (grant ? params.response_type : 'code') as ResponseType;
  const fail = (error: string, description: string): RedirectProblem => ({
    kind: 'redirect',
    location: redirectTo(redirectUri, responseType, { error, error_description: describable(description), state: params.state }),
    error,
    description,
  });
  if (!grant) return fail('unsupported_response_type', `response_type must be one of: ${RESPONSE_TYPES.join(', ')}`);
  // RFC 9126 §4: "Authorization server policy MAY dictate, either globally or on a per-client basis,
  // that PAR be the only means for a client to pass authorization request data. In this case, the
  // authorization server will refuse, using the invalid_request error code, to process any request to
  // the authorization endpoint that does not have a request_uri parameter with a value obtained from
  // the PAR endpoint."
  if (client.resource.require_pushed_authorization_requests && !pushed) {
    return fail('invalid_request', `client "${client.resource.id}" must push its authorization requests to /auth/par (RFC 9126)`);
  }
  // Core §6: an OP that does not take request objects answers these errors (discovery says so too).
  if (params.request !== undefined) {
    return fail('request_not_supported', 'request objects are not supported: send the parameters of the request themselves');
  }
  if (params.request_uri !== undefined && typeof pushed !== 'object') {
    return fail('request_uri_not_supported', 'request_uri is not supported: send the parameters of the request themselves');
  }
  if (!client.resource.grant_types.includes(grant)) {
    return fail('unauthorized_client', `client "${client.resource.id}" may not use the ${grant} grant`);
  }
  // DPoP (RFC 9449): a token from the authorization endpoint can be bound to no key, and this client's must all be.
  if (grant === 'implicit' && params.response_type !== 'id_token' && client.resource.dpop_bound_access_tokens === true) {
    return fail(
      'unauthorized_client',
      `client "${client.resource.id}" must bind its tokens with DPoP (dpop_bound_access_tokens): use the code flow`,
    );
  }
  // RFC 9449 §10: dpop_jkt binds the authorization code to the client's DPoP key; tokens
  // from the authorization endpoint itself are bound to nothing.
  if (params.dpop_jkt !== undefined) {
    if (grant !== 'authorization_code')
      return fail('invalid_request', `dpop_jkt binds an authorization code; response_type=${responseType} issues none`);
    if (!isThumbprint(params.dpop_jkt))
      return fail('invalid_request', "dpop_jkt must be a key's JWK SHA-256 thumbprint (43 base64url characters)");
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
  let audience: string | null;
  try {
    scope = grantedScope(client.resource, scopeParam(params.scope));
    // RFC 8707: `resource` names where the token will be used; it becomes the token's audience.
    audience = grantedAudience(client.resource, resourceParam(params.resource));
  } catch (err) {
    if (err instanceof OAuthError) return fail(err.code, err.message);
    throw err;
  }
  if (responseType.startsWith('id_token')) {
    if (!hasOpenid(scope)) return fail('invalid_request', `response_type=${responseType} needs scope openid`);
    if (!params.nonce) return fail('invalid_request', `response_type=${responseType} needs a nonce (OpenID Connect Core §3.2.2.1)`);
  }
  const prompt = new Set((params.prompt ?? '').split(' ').filter(Boolean)) as Set<Prompt>;
  const unknownPrompt = [...prompt].find((p) => !PROMPTS.includes(p));
  if (unknownPrompt) return fail('invalid_request', `prompt "${unknownPrompt}" is not supported (${PROMPTS.join(', ')})`);
  if (prompt.has('none') && prompt.size > 1) return fail('invalid_request', 'prompt=none cannot be combined with other values');
  let maxAge: number | undefined;
  if (params.max_age !== undefined) {
    maxAge = /^\d{1,10}$/.test(params.max_age) ? Number(params.max_age) : NaN;
    if (Number.isNaN(maxAge)) return fail('invalid_request', 'max_age must be a number of seconds');
  }
  const claims = params.claims === undefined ? null : parseClaimsParameter(params.claims);
  if (typeof claims === 'string') return fail('invalid_request', claims);
  let hintedUser: string | undefined;
  if (params.id_token_hint !== undefined) {
    const hint = idTokenHintClaims(params.id_token_hint, svc.config.baseUrl, svc.keyring.find);
    if (!hint) return fail('invalid_request', 'id_token_hint is not an ID token this box issued');
    hintedUser = hint.sub as string;
  }
  return {
    responseType,
    client,
    redirectUri,
    state: params.state,
    scope: scope ?? undefined,
    codeChallenge,
    nonce: params.nonce,
    claims,
    audience: audience ?? undefined,
    dpopJkt: params.dpop_jkt,
    prompt,
    maxAge,
    loginHint: params.login_hint,
    hintedUser,
    ...(typeof pushed === 'object'
      ? {
          // The way back from sign-in and consent names the pushed request, never its parameters: what
          // the client pushed cannot be changed on the way, nor a client that must push be bypassed.
          params: {
            client_id: params.client_id,
            request_uri: params.request_uri!,
            ...(params[SIGN_IN_AFTER] ? { [SIGN_IN_AFTER]: params[SIGN_IN_AFTER] } : {}),
          },
          pushed,
        }
      : { params }),
  };
}

/** Where the request goes back to the client with an error (access_denied, login_required, consent_required…). */
export function errorRedirect(req: AuthorizeRequest, error: string, description: string): string {
  return redirectTo(req.redirectUri, req.responseType, { error, error_description: describable(description), state: req.state });
}

/**
 * Issues what the request asked for to the signed-in person; returns where to
 * send the browser (or, for a pushed request another use answered first, the
 * page of pushedRequestGone). What is issued here carries the browser session's
 * sid, so that logging that browser out (RP-initiated logout) ends it, and is
 * issued only while that session lasts (whileSignedIn): a sign-out or password
 * change racing it ends it too.
 */
export async function grantAuthorization(
  svc: AuthorizeServices,
  req: AuthorizeRequest,
  user: UserRow,
  browser: BrowserSession,
): Promise<string | PageProblem> {
  const issued = await whileSignedIn(svc, browser.sid, (tx) => issue(svc, tx, req, user, browser));
  return issued ?? errorRedirect(req, 'access_denied', 'the sign-in ended before the request was granted');
}

async function issue(
  svc: AuthorizeServices,
  tx: Transaction,
  req: AuthorizeRequest,
  user: UserRow,
  browser: BrowserSession,
): Promise<string | PageProblem> {
  const client = req.client.resource;
  // A pushed request is answered once: it is deleted in the transaction that issues, and of requests
  // racing with one request_uri only the one that deleted it answers the client; the others are shown
  // what any used request_uri shows.
  if (req.pushed && !(await consumePushedRequest(tx, req.pushed, new Date()))) {
    return pushedRequestGone(svc, client.id, 'request_uri answered by another use');
  }
  if (req.responseType === 'code') {
    const code = randomBytes(32).toString('base64url');
    await createAuthorizationCode(tx, tokenHash(code), {
      clientId: client.id,
      userId: user.id,
      redirectUri: req.redirectUri,
      scope: req.scope ?? null,
      codeChallenge: req.codeChallenge ?? null,
      expiresAt: new Date(Date.now() + svc.config.authCodeTtlSeconds * 1000),
      nonce: req.nonce ?? null,
      claims: req.claims,
      audience: req.audience ?? null,
      authTime: browser.authTime,
      sid: browser.sid,
      dpopJkt: req.dpopJkt ?? null,
    });
    return redirectTo(req.redirectUri, 'code', { code, state: req.state });
  }
  // The implicit kinds: what was asked for travels in the fragment; never a refresh token.
  const settings = client.auth?.implicit ?? {};
  const now = Date.now();
  const values: Record<string, string | undefined> = { state: req.state, ...(req.scope ? { scope: req.scope } : {}) };
  let accessToken: string | undefined;
  if (req.responseType !== 'id_token') {
    const { session, response } = mint(
      {
        type: 'implicit',
        origin: 'implicit',
        client,
        settings: { ...settings, refresh_token: false },
        userId: user.id,
        scope: req.scope ?? null,
        audience: req.audience ?? null,
        refresh: false,
        details: browserDetails(browser, req.claims),
      },
      svc.config.baseUrl,
      svc.keyring.active,
      now,
    );
    await insertSessions(tx, [session]);
    svc.metrics.tokens.inc({ grant: 'implicit' });
    svc.audit.record({ event: 'token_issued', client: client.id, grant: 'implicit', session: session.id, user: String(user.id) });
    accessToken = response.access_token;
    Object.assign(values, {
      access_token: accessToken,
      token_type: 'Bearer',
      ...(response.expires_in ? { expires_in: String(response.expires_in) } : {}),
    });
  }
  if (req.responseType.startsWith('id_token')) {
    values.id_token = idTokenFor(svc, settings, {
      client,
      user,
      scope: req.scope ?? null,
      nonce: req.nonce,
      claims: req.claims?.id_token ?? [],
      authTime: browser.authTime,
      sid: browser.sid,
      ...(accessToken ? { accessToken } : {}),
      now,
    });
  }
  return redirectTo(req.redirectUri, req.responseType, values);
}
