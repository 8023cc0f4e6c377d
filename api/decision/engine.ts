// The decision point: one decision for every front door — AuthZEN, HTTP external
// authorization, forward-auth (api/http/gate-endpoints.ts) and Envoy's gRPC ext_authz
// (api/grpc/ext-authz.ts). Each door only reads its protocol into a GateRequest
// and writes the Decision back. The steps, in order:
//
//   the app (named by the door, else found by the request's host) →
//   the target, read once (./path.ts: an ambiguous path is refused) →
//   who is calling (a bearer token, the app's sign-in cookie, or AuthZEN's subject;
//   a token must be a live session's, for the app's audience) →
//   the app's own policies (api/policy/evaluate.ts decideApp: deny by default) →
//   allow (200, the caller named in headers), or refuse (401 and the way to sign in,
//   or 403), each with a decision id the record keeps (./record.ts).
//
// Nothing here reads the database on the hot path: apps, policies, sessions, users
// and verified JWTs come from caches the change feed keeps coherent, so a closed
// session or a changed policy holds at every process within the feed's delay. The one
// exception is a DPoP-bound token's proof (RFC 9449): refusing a replayed proof at every
// process of the box takes the replay cache they share, one (group-committed) round trip
// to the database, paid by DPoP-bound requests only (api/credentials/dpop/check.ts).
// Any error denies (503): a gate that cannot decide fails closed.
import { isDatabaseUnavailable, UNAVAILABLE_RETRY_SECONDS } from '../db/unavailable.js';
import { challenge, errorMessage } from '../errors.js';
import { parseCookies } from '../cookies.js';
import type { Logger } from '../log.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Policies, PolicyOutcome } from '../policy/evaluate.js';
import { type AppDirectory, audienceOf, hostOf } from './apps.js';
import type { RecordCache } from '../cache/record-cache.js';
import { checkPresented, dpopChallenge, presentedIn, type Presented, type ResourceServices } from '../credentials/dpop/resource.js';
import { newSessionId } from '../store/sessions.js';
import type { App, PrincipalUser } from '../types.js';
import { readTarget } from './path.js';
import type { AppRequest, AuthzenRequest } from '../policy/requests.js';
import { appRequest, NOBODY, type Caller } from './request.js';
import { actOf, subjectOf } from '../credentials/exchange/parties.js';
import { upstreamToken } from './upstream-token.js';
import { isAcr, meets, signInOf, weakest } from '../credentials/acr.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  log: Logger;
  keyring: Keyring;
  policies: Policies;
  apps: AppDirectory;
  users: RecordCache<PrincipalUser>;
}

export type Door = 'authzen' | 'http' | 'forward-auth' | 'grpc';

/** How the caller proves who they are. */
export type Credential =
  /** A token in Authorization (RFC 6750). */
  | { bearer: string }
  /** A DPoP-bound token in Authorization (RFC 9449 §7.1), its proof in the DPoP header. */
  | { dpop: string }
  /** The request's cookies: the app's sign-in cookie among them, when a browser signed in (./app-sign-in.ts). */
  | { cookies: Record<string, string> }
  /** AuthZEN: a subject the PEP names. */
  | { user: string }
  | { client: string }
  | 'none';

/** The credential of a request at a gate: a bearer or DPoP token (RFC 6750 §2.1, RFC 9449 §7.1), else its cookies. */
export function credentialFrom(authorization: string | undefined, cookieHeader: string | undefined): Credential {
  const presented = authorization === undefined ? undefined : presentedIn(authorization);
  if (presented) return presented.scheme === 'DPoP' ? { dpop: presented.token } : { bearer: presented.token };
  return { cookies: parseCookies(cookieHeader) };
}

/** A request at a gate, as its front door read it. */
export interface GateRequest {
  door: Door;
  /** The app, when the gateway names it; else found by `host`. */
  app?: string | undefined;
  method: string;
  /** The host the client asked for (host[:port]). */
  host: string;
  /** What the client used (X-Forwarded-Proto, Envoy's scheme), when the gateway says. */
  scheme?: string | undefined;
  /** Path and query as the gateway sends them. */
  target: string;
  /** Request headers (lower-case names) the gateway passed on. */
  headers: Record<string, string | undefined>;
  credential: Credential;
  /** The request's DPoP header(s), as many as were sent (RFC 9449 §4.3: one). */
  proofs?: readonly string[] | undefined;
  /** AuthZEN: the evaluation's resource and context. */
  resource?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

/** Why a request was refused (the deny-reason label of the metrics). */
export type DenyReason = 'no-app' | 'bad-path' | 'bad-token' | 'wrong-audience' | 'no-policy' | 'sign-in' | 'step-up' | 'error';

export interface Decision {
  id: string;
  app: string | null;
  door: Door;
  allowed: boolean;
  /** What an HTTP gate answers: 200 allow; 302 to sign in; 400 an ambiguous path; 401 no good credential; 403 refused; 503 undecided. */
  status: 200 | 302 | 400 | 401 | 403 | 503;
  reason: DenyReason | 'allowed';
  /** For people and logs; never a token. */
  description: string;
  /** On allow: headers the gateway sets on the request it passes on (the caller; emptied when anonymous). */
  upstream: Record<string, string>;
  /** On 401: the challenge (RFC 6750 §3, RFC 9449 §7.1, RFC 9470 §3); on 302: where to sign in. */
  challenge?: string;
  /** On a step-up: the class of sign-in a policy asks for (AccessPolicy.acr). */
  acr?: string;
  /** On 401 for a DPoP proof without the box's nonce: the nonce to use (DPoP-Nonce, RFC 9449 §9). */
  dpopNonce?: string;
  /** The error code of a refusal when it is not its status's usual one (invalid_dpop_proof, use_dpop_nonce). */
  error?: string;
  location?: string;
  /** On 503 when the database cannot be reached: seconds to wait (Retry-After). */
  retryAfter?: number;
  /** The app's sign-in cookie was stale (a closed session): the gate clears it. */
  clearCookie?: string;
  outcomes: PolicyOutcome[];
  request: AppRequest | AuthzenRequest | null;
  caller: Caller;
}

export type DecisionServices = ResourceServices & Pick<Needs, 'apps' | 'policies' | 'users' | 'keyring' | 'log'>;

/** The headers an allowed request carries upstream, by the App's names or these defaults (oauth2-proxy's). */
export function identityHeaders(app: App): { user: string; email: string; groups: string; client: string } {
  const h = app.upstream?.headers ?? {};
  return {
    user: h.user ?? 'X-Auth-Request-User',
    email: h.email ?? 'X-Auth-Request-Email',
    groups: h.groups ?? 'X-Auth-Request-Groups',
    client: h.client ?? 'X-Auth-Request-Client',
  };
}

/** The name of an app's sign-in cookie: `__Host-` when the app is reached over https (it is then Secure, Path=/). */
export function appCookieName(app: App, https: boolean): string {
  return `${https ? '__Host-' : ''}boxauth-app-${app.id}`;
}

/** The url of `app` a request to `host` was for (its scheme and origin), or the app's first. */
export function originOf(app: App, host: string, scheme?: string): string {
  const own = app.urls.find((u) => hostOf(u) === host.toLowerCase());
  if (own) return own;
  return scheme ? `${scheme}://${host}` : app.urls[0]!;
}

const isBrowser = (g: GateRequest): boolean =>
  (g.method === 'GET' || g.method === 'HEAD') && (g.headers.accept ?? '').includes('text/html');

/** A refusal of a token; with `dpop`, one the DPoP scheme answers (its error, and the nonce to use). */
type TokenRefusal = { refused: DenyReason; why: string; dpop?: { error: string; nonce?: string | undefined } };

/**
 * Who presents the token at `app` with request `g` (whose client addressed `origin`): a
 * live session's, for the app's audience, with its DPoP proof when it is bound; or why not.
 */
async function tokenCaller(
  svc: DecisionServices,
  app: App,
  presented: Presented,
  g: GateRequest,
  origin: string,
): Promise<Caller | TokenRefusal> {
  // The URI the client addressed, as a DPoP proof's htu names it (RFC 9449 §4.3): the app's
  // origin as its gateway describes the request, and the path as sent (query and fragment aside).
  const path = /^[^?#]*/.exec(g.target)![0];
  const check = await checkPresented(svc, presented, { proofs: g.proofs, method: g.method, url: `${origin}${path}` });
  if ('problem' in check) return { refused: 'bad-token', why: check.problem, ...(check.dpop ? { dpop: check } : {}) };
  const s = check.session;
  // RFC 9068 §4 / RFC 8707: a token is for the audience it names, and only there.
  if (s.audience !== audienceOf(app)) {
    return {
      refused: 'wrong-audience',
      why: `the token is for ${s.audience === null ? "the box's own API" : `"${s.audience}"`}, not this app`,
    };
  }
  let user: PrincipalUser | null = null;
  if (s.userId !== null) {
    user = (await svc.users.get(String(s.userId))) ?? null;
    if (!user) return { refused: 'bad-token', why: 'the user of this token no longer exists' };
  }
  const subject = subjectOf(s);
  // What the person's sign-in proved: the session's own record (cached with it), no round trip.
  const signIn = signInOf(s);
  return {
    user,
    client: s.clientId,
    scope: s.scope,
    audience: s.audience,
    session: s.id,
    subject: { iss: subject.iss ?? svc.config.baseUrl, sub: subject.sub },
    act: actOf(s.details) ?? null,
    amr: signIn?.amr ?? null,
    acr: signIn?.acr ?? null,
    authTime: signIn?.authTime ?? null,
  };
}

/** AuthZEN's named subjects: a user by id is who they are now; a client is only itself. */
async function namedCaller(svc: DecisionServices, credential: { user: string } | { client: string }): Promise<Caller | undefined> {
  if ('client' in credential) return { ...NOBODY, client: credential.client };
  const user = /^\d{1,15}$/.test(credential.user) ? await svc.users.get(credential.user) : undefined;
  return user && { ...NOBODY, user };
}

export async function decide(svc: DecisionServices, g: GateRequest): Promise<Decision> {
  const id = newSessionId();
  const base = { id, door: g.door, upstream: {}, outcomes: [], caller: NOBODY, request: null };
  const refuse = (
    app: App | null,
    status: Decision['status'],
    reason: DenyReason,
    description: string,
    more: Partial<Decision> = {},
  ): Decision => ({ ...base, app: app?.id ?? null, allowed: false, status, reason, description, ...more });
  try {
    const app = g.app !== undefined ? await svc.apps.byId(g.app) : await svc.apps.byHost(g.host);
    if (!app) return refuse(null, 403, 'no-app', g.app !== undefined ? `no app "${g.app}"` : `no app at host "${g.host}"`);
    const read = readTarget(g.target);
    if ('refused' in read) return refuse(app, 400, 'bad-path', read.refused);

    let caller: Caller = NOBODY;
    let clearCookie: string | undefined;
    const origin = originOf(app, g.host, g.scheme);
    const cookieName = appCookieName(app, origin.startsWith('https:'));
    const cookie = typeof g.credential === 'object' && 'cookies' in g.credential ? g.credential.cookies[cookieName] : undefined;
    const fromHeader: Presented | undefined =
      typeof g.credential !== 'object'
        ? undefined
        : 'bearer' in g.credential
          ? { scheme: 'Bearer', token: g.credential.bearer }
          : 'dpop' in g.credential
            ? { scheme: 'DPoP', token: g.credential.dpop }
            : undefined;
    if (fromHeader || cookie !== undefined) {
      // A sign-in cookie holds a bearer token: a DPoP-bound one there is refused like any other without its proof.
      const found = await tokenCaller(svc, app, fromHeader ?? { scheme: 'Bearer', token: cookie! }, g, origin);
      if ('refused' in found) {
        // A stale sign-in cookie (the person signed out) is no credential: sign in again.
        if (fromHeader) {
          if (found.dpop) {
            return refuse(app, 401, found.refused, found.why, {
              challenge: dpopChallenge(app.id, { error: found.dpop.error, problem: found.why }),
              error: found.dpop.error,
              ...(found.dpop.nonce ? { dpopNonce: found.dpop.nonce } : {}),
            });
          }
          return refuse(app, 401, found.refused, found.why, {
            challenge: challenge('Bearer', app.id, { error: 'invalid_token', description: found.why }),
          });
        }
        clearCookie = cookieName;
      } else {
        caller = found;
      }
    } else if (typeof g.credential === 'object' && ('user' in g.credential || 'client' in g.credential)) {
      const named = await namedCaller(svc, g.credential);
      if (!named) return refuse(app, 401, 'bad-token', 'no such user');
      caller = named;
    }

    const asked = appRequest(app, { method: g.method, host: g.host, ...read }, g.headers, caller);
    // An AuthZEN evaluation's request carries the resource and context it sent (api/http/routes/authzen.ts).
    const request: AppRequest | AuthzenRequest = g.resource
      ? { ...asked, resource: g.resource, ...(g.context ? { context: g.context } : {}) }
      : asked;
    const have = caller.acr;
    const subject = {
      clientId: caller.client,
      user: caller.user && { id: caller.user.id, groups: caller.user.groups },
      signedInAtLeast: (want: string) => isAcr(have) && isAcr(want) && meets(have, want),
    };
    const verdict = await svc.policies.decideApp(app.id, subject, request);
    const decided = { ...base, app: app.id, request, caller, outcomes: verdict.outcomes, ...(clearCookie ? { clearCookie } : {}) };
    if (verdict.allowed) {
      const allowing = verdict.outcomes.filter((o) => o.verdict === 'allows').map((o) => o.id);
      return {
        ...decided,
        allowed: true,
        status: 200,
        reason: 'allowed',
        description: `allowed by ${allowing.map((p) => `"${p}"`).join(', ')}`,
        upstream: upstreamHeaders(svc, app, caller),
      };
    }
    const description = verdict.outcomes.some((o) => o.verdict === 'does not allow' || o.verdict === 'allows')
      ? 'no policy of this app allows the request'
      : 'no policy of this app applies to the request';
    // A policy would allow it after a stronger sign-in (AccessPolicy.acr): the weakest such class is enough.
    const acr = weakest(verdict.outcomes.flatMap((o) => (o.verdict === 'needs a stronger sign-in' && o.acr ? [o.acr] : [])));
    const rd = g.target.startsWith('/') && !g.target.startsWith('//') ? g.target : '/';
    const signInAt = (more: Record<string, string>): string => `${origin}/.boxauth/start?${new URLSearchParams({ rd, ...more })}`;
    if (caller === NOBODY && g.door !== 'authzen') {
      // Nobody is signed in: a person is sent to sign in and back; anything else is told how to authenticate.
      if (app.signIn && isBrowser(g)) {
        return { ...decided, allowed: false, status: 302, reason: 'sign-in', description, location: signInAt(acr ? { acr } : {}) };
      }
      return { ...decided, allowed: false, status: 401, reason: 'sign-in', description, challenge: `Bearer realm="${app.id}"` };
    }
    if (acr) {
      const why = `a policy of this app allows the request only after a sign-in of class ${acr}`;
      // A person at the app in a browser signs in again with what is missing (/.boxauth/start → the
      // box's step-up) and comes back with a new cookie; any other caller is told what is wanted (RFC 9470 §3).
      if (app.signIn && caller.user && cookie !== undefined && !fromHeader && isBrowser(g)) {
        return { ...decided, allowed: false, status: 302, reason: 'step-up', description: why, acr, location: signInAt({ acr }) };
      }
      return {
        ...decided,
        allowed: false,
        status: 401,
        reason: 'step-up',
        description: why,
        acr,
        challenge: challenge(
          fromHeader?.scheme ?? 'Bearer',
          app.id,
          { error: 'insufficient_user_authentication', description: why },
          `acr_values="${acr}"`,
        ),
      };
    }
    return { ...decided, allowed: false, status: 403, reason: 'no-policy', description };
  } catch (err) {
    // Fail closed, telling the caller only what it can act on: the error itself (a database's
    // address, a query) is the log's, not the gateway's or the client's.
    if (isDatabaseUnavailable(err)) {
      svc.log.warn(
        { err: errorMessage(err), app: g.app, door: g.door },
        'the database is unreachable or overloaded; the request is refused',
      );
      return refuse(null, 503, 'error', 'the decision point cannot reach its database or it is overloaded right now; try again shortly', {
        retryAfter: UNAVAILABLE_RETRY_SECONDS,
      });
    }
    svc.log.error({ err, app: g.app, door: g.door }, 'a decision failed; the request is refused');
    return refuse(null, 503, 'error', 'the decision point could not decide; see its log');
  }
}

/**
 * A name as an identity header carries it (docs/guides/guard-your-apps.md): every character
 * but visible ASCII (RFC 9110's VCHAR, %x21-7E), and `%` and `,` themselves, percent-encoded
 * as UTF-8 — `łukasz@example.com` is `%C5%82ukasz@example.com`, `R&D, Sales` is
 * `R&D%2C%20Sales`. Any header value then passes every gateway and HTTP library as sent (a
 * character outside Latin-1 or a control character is one node:http refuses to write, and no
 * two gateways agree on), a plain ASCII name reads as before, and one decoding (percent-decoding
 * as UTF-8, after splitting the groups on commas) gives the name back exactly.
 */
export function headerValue(name: string): string {
  let out = '';
  for (const ch of name) {
    const code = ch.codePointAt(0)!;
    if (code >= 0x21 && code <= 0x7e && ch !== '%' && ch !== ',') out += ch;
    // A lone surrogate (none is stored: input.ts refuses them) becomes U+FFFD's bytes, never a throw.
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * The caller, as headers the gateway sets upstream (empty ones for nobody, so a client cannot
 * send its own). The email only when the box vouches for it (email_verified): an app, or a
 * gateway's email-domain rule, takes the header as the person's address.
 */
function upstreamHeaders(svc: DecisionServices, app: App, caller: Caller): Record<string, string> {
  const names = identityHeaders(app);
  const user = caller.user;
  const headers: Record<string, string> = {
    [names.user]: user?.id ?? '',
    [names.email]: user?.emailVerified ? headerValue(user.email) : '',
    [names.groups]: user?.groups.map((g) => headerValue(g.name)).join(',') ?? '',
    [names.client]: headerValue(caller.client ?? ''),
  };
  const token = app.upstream?.token;
  if (token && caller.session) {
    const jwt = upstreamToken(svc, app, caller);
    headers[token.header] = token.header.toLowerCase() === 'authorization' ? `Bearer ${jwt}` : jwt;
  } else if (token) {
    // Authorization too: an anonymous request may carry one the gate did not read as a bearer
    // token (`Bearer <jwt> x`, two of them) that the app would verify offline and believe.
    headers[token.header] = '';
  }
  return headers;
}
