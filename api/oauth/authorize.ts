// GET /auth/authorize: the authorization code (response_type=code) and implicit
// (token, id_token, "id_token token") requests, with OpenID Connect's parameters.
// The client and the redirect URI are checked first: until both are known good,
// nothing is ever redirected (RFC 6749 §4.1.2.1); after that, errors travel back
// to the client in the redirect.
import { randomBytes } from 'node:crypto';
import type { Transaction, Pool } from '../db/pool.js';
import { errorFields } from '../errors.js';
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
import { checkAuthorizeRequest, RESPONSE_TYPES, type AskedRequest, type Prompt, type ResponseType } from './authorize-checks.js';
import { browserDetails, idTokenFor, type RequestedClaims } from './openid.js';
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

export { RESPONSE_TYPES, type Prompt, type ResponseType } from './authorize-checks.js';

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

/** The redirect URIs a grant's settings register: redirect_uri and redirect_uris, once each. */
export function registeredRedirectUris(settings: { redirect_uri?: string; redirect_uris?: string[] } | undefined): string[] {
  if (!settings) return [];
  return [...new Set([...(settings.redirect_uri ? [settings.redirect_uri] : []), ...(settings.redirect_uris ?? [])])];
}

/**
 * Whether a requested redirect URI is the registered one: to the letter, except
 * that for a loopback address over http the port may differ (RFC 8252 §7.3: a
 * native app such as kubectl's sign-in listens on whatever port is free).
 */
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

/** The parameters the endpoint reads, each given once (a parameter given twice is a page: the client is not yet known good). */
function readParams(raw: Record<string, unknown>): { params: Record<string, string> } | PageProblem {
  const params: Record<string, string> = {};
  for (const name of AUTHORIZE_PARAMS) {
    const v = raw[name];
    if (Array.isArray(v))
      return { kind: 'page', status: 400, title: 'Invalid request', message: `The parameter ${name} was given more than once.` };
    if (typeof v === 'string' && v !== '') params[name] = v;
  }
  return { params };
}

const linkNotValid = (message: string): PageProblem => ({ kind: 'page', status: 400, title: 'This sign-in link is not valid', message });

/**
 * An unknown client and a redirect URI it did not register get the same page, which names
 * neither: the page must not tell a stranger which client ids exist. The log says which.
 */
function unknownClientOrRedirect(svc: Pick<AuthorizeServices, 'log'>, clientId: string, why: string): PageProblem {
  svc.log.info({ event: 'authorize_refused', client: clientId, reason: why }, 'authorization request refused');
  return linkNotValid(
    'The application sent you here with a client or a redirect URI that this box does not know. ' +
      'Go back to the application; if it keeps happening, tell its developers.',
  );
}

/**
 * The redirect URI, one configured for the grant (redirectMatches), or why there is none. RFC 6749
 * §3.1.2.3: "If multiple redirection URIs have been registered, [...] the client MUST include a
 * redirection URI with the authorization request"; with one registered, it may be left out. For a
 * response_type the box does not serve, any URI the client registered may carry that error back.
 */
function trustedRedirectUri(
  client: Client,
  grant: AskedRequest['grant'],
  requested: string | undefined,
): { uri: string } | { why: string } {
  const registered = grant ? registeredRedirectUris(client.auth?.[grant]) : [];
  const candidates = registered.length
    ? registered
    : [...registeredRedirectUris(client.auth?.authorization_code), ...registeredRedirectUris(client.auth?.implicit)];
  if (!candidates.length) return { why: grant ? `no auth.${grant}.redirect_uri` : 'redirect URI not registered' };
  if (requested === undefined)
    return registered.length === 1 ? { uri: registered[0]! } : { why: 'no redirect_uri, and the client registered several' };
  return candidates.some((u) => redirectMatches(u, requested))
    ? { uri: requested }
    : { why: 'redirect URI differs from the registered ones' };
}

/**
 * The request in `raw`, or the problem with it. `pushed`: the parameters are those
 * of a pushed request (RFC 9126), being pushed now or claimed by this browser (./par.ts).
 * Until the client and its redirect URI are known good, a problem is a page of the box
 * (RFC 6749 §4.1.2.1); after, the rules of ./authorize-checks.ts send it back to the client.
 */
export async function parseAuthorizeRequest(
  svc: AuthorizeServices,
  raw: Record<string, unknown>,
  pushed?: PushedRequestClaim | 'being-pushed',
): Promise<AuthorizeRequest | PageProblem | RedirectProblem> {
  const read = readParams(raw);
  if ('kind' in read) return read;
  const { params } = read;
  if (!params.client_id) return linkNotValid('The request names no client (client_id is missing).');
  const client = await svc.clients.get(params.client_id);
  if (!client) return unknownClientOrRedirect(svc, params.client_id, 'unknown client');
  const grant = grantOf(params.response_type);
  const redirect = trustedRedirectUri(client.resource, grant, params.redirect_uri);
  if ('why' in redirect) return unknownClientOrRedirect(svc, params.client_id, redirect.why);
  const redirectUri = redirect.uri;

  const responseType = (grant ? params.response_type : 'code') as ResponseType;
  const checked = checkAuthorizeRequest({ params, client, grant, responseType, pushed }, svc);
  if ('error' in checked) {
    const { error, description } = checked;
    return {
      kind: 'redirect',
      location: redirectTo(redirectUri, responseType, { ...errorFields(error, description), state: params.state }),
      error,
      description,
    };
  }
  return {
    responseType,
    client,
    redirectUri,
    state: params.state,
    scope: checked.scope ?? undefined,
    codeChallenge: checked.codeChallenge,
    nonce: params.nonce,
    claims: checked.claims,
    audience: checked.audience ?? undefined,
    dpopJkt: params.dpop_jkt,
    prompt: checked.prompt,
    maxAge: checked.maxAge,
    loginHint: params.login_hint,
    hintedUser: checked.hintedUser,
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
  return redirectTo(req.redirectUri, req.responseType, { ...errorFields(error, description), state: req.state });
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
      amr: browser.amr,
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
      amr: browser.amr,
      sid: browser.sid,
      ...(accessToken ? { accessToken } : {}),
      now,
    });
  }
  return redirectTo(req.redirectUri, req.responseType, values);
}
