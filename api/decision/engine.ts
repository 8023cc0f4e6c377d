// The decision point: one decision for every front door — AuthZEN, HTTP external
// authorization, forward-auth (api/http/gate-endpoints.ts) and Envoy's gRPC ext_authz
// (api/grpc/ext-authz.ts). Each door reads its protocol, the request's Authorization and
// Cookie headers included (api/http/gate-credential.ts), into a GateRequest, and writes the
// Decision back. decide() is the list of the steps, in order, each a small function below
// quoting the rule it keeps; the first step that answers decides, and what it answers is
// the Decision's status, reason and description, with a decision id the record keeps
// (./record.ts).
//
// Nothing here reads the database on the hot path: apps, policies, sessions, users
// and verified JWTs come from caches the change feed keeps coherent, so a closed
// session or a changed policy holds at every process within the feed's delay. An AuthZEN
// subject named by anything but a box id costs one indexed query (namedCaller). The other
// exception is a DPoP-bound token's proof (RFC 9449): refusing a replayed proof at every
// process of the box takes the replay cache they share, one (group-committed) round trip
// to the database, paid by DPoP-bound requests only (api/credentials/dpop/check.ts).
// Any error denies (503): a gate that cannot decide fails closed.
import { isDatabaseUnavailable, UNAVAILABLE_RETRY_SECONDS } from '../db/unavailable.js';
import { challenge, errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { Keyring } from '../credentials/keyring.js';
import type { AppDecided, AppQuestion, AppVerdict, Policies, PolicyOutcome } from '../policy/evaluate.js';
import { withCelBudget } from '../policy/cel/index.js';
import { type AppDirectory, audienceOf, hostOf } from './apps.js';
import { START_PATH } from './app-sign-in.js';
import type { RecordCache } from '../cache/record-cache.js';
import { checkPresented, dpopChallenge, type Presented, type ResourceServices } from '../credentials/dpop/resource.js';
import type { PresentedCertificate } from '../credentials/client-certificate.js';
import { newSessionId } from '../store/sessions.js';
import type { App, Client, PrincipalUser } from '../types.js';
import { readTarget } from './path.js';
import { span, tracingOn } from '../tracing.js';
import type { AppRequest, AuthzenRequest, TxnSeen } from '../policy/requests.js';
import { gateTxnToken, txnOfRequest } from './txn.js';
import { appRequest, appSubjectOf, NOBODY, type Caller } from './request.js';
import { ACCESS_DENIED, coazCall, readJsonRpc, type GateBody, type JsonRpcBody, type JsonRpcCall } from './jsonrpc.js';
import { actOf, subjectOf } from '../credentials/exchange/parties.js';
import { upstreamToken } from './upstream-token.js';
import { signInOf, weakest } from '../credentials/acr.js';
import { metadataUrlOf, resourceMetadataParam } from './resource-metadata.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  log: Logger;
  keyring: Keyring;
  policies: Policies;
  apps: AppDirectory;
  users: RecordCache<PrincipalUser>;
  /** The ids of the people a name other than a box id names (api/store/users.ts peopleNamed). */
  peopleNamed: (name: string) => Promise<number[]>;
  /**
   * The id of the person a `sub` a client was given names (api/credentials/presented-subjects.ts),
   * read as that client's; none while its sector does not vouch for it (api/oauth/sector-identifier.ts).
   */
  subjectNamed: (client: Client, sub: string) => Promise<number | undefined>;
}

export type Door = 'authzen' | 'http' | 'forward-auth' | 'grpc';

/** How the caller proves who they are. */
export type Credential =
  /** A token in Authorization (RFC 6750). */
  | { bearer: string }
  /** A DPoP-bound token in Authorization (RFC 9449 §7.1), its proof in the DPoP header. */
  | { dpop: string }
  /** The request's cookies, as its door read them: the app's sign-in cookie among them, when a browser signed in (./app-sign-in.ts). */
  | { cookies: Record<string, string> }
  /**
   * AuthZEN (and explain's dry run): a subject the PEP names. `mayRead`: whether the PEP may read
   * the person of this box id on the box's API, which alone lets it name them (namedCaller);
   * `presenter`: the PEP's client, whose own subs name people too (api/credentials/subjects.ts).
   */
  | { user: string; mayRead: (id: string) => Promise<boolean>; presenter?: Client }
  | { client: string }
  | 'none';

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
  /**
   * The client certificate the gateway saw in its mutual TLS with the client, as its door read it (a
   * header from a trusted proxy, Envoy's attributes.source.certificate): what a certificate-bound
   * token is checked against (RFC 8705 §3); none when the gateway sends none.
   */
  certificate?: PresentedCertificate | undefined;
  /** What the gateway sent of the request's body, when it sends it (Envoy's with_request_body, NGINX reading it first): read for its JSON-RPC envelope only (./jsonrpc.ts). */
  body?: GateBody | undefined;
  /** AuthZEN: the evaluation's resource and context. */
  resource?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

/** Why a request was refused (the deny-reason label of the metrics). */
export type DenyReason =
  | 'no-app'
  | 'bad-path'
  | 'bad-body'
  | 'bad-token'
  | 'wrong-audience'
  | 'no-policy'
  | 'sign-in'
  | 'step-up'
  | 'insufficient-scope'
  | 'error';

/** How the refusal of a JSON-RPC request is told (api/http/refusal.ts): as a JSON-RPC error, to each of its calls. */
export interface RpcAnswer {
  /** JSON-RPC 2.0 §5.1's code: ACCESS_DENIED for a call a policy refused, else why the body was not read. */
  code: number;
  /** Each call's id as sent (its raw JSON), null for a notification; [null] when the body was not read. */
  ids: (string | null)[];
  /** Whether the body was a batch (answered with an array). */
  batch: boolean;
}

export interface Decision {
  id: string;
  app: string | null;
  door: Door;
  allowed: boolean;
  /** What an HTTP gate answers: 200 allow; 302 to sign in; 400 an ambiguous path or an unreadable body; 401 no good credential; 403 refused; 413 a body larger than the gate reads; 503 undecided. */
  status: 200 | 302 | 400 | 401 | 403 | 413 | 503;
  reason: DenyReason | 'allowed';
  /** For people and logs; never a token. */
  description: string;
  /** On allow: headers the gateway sets on the request it passes on (the caller; emptied when anonymous). */
  upstream: Record<string, string>;
  /** On 401, and on 403 for want of scope: the challenge (RFC 6750 §3, RFC 9449 §7.1, RFC 9470 §3, RFC 9728 §5.1). */
  challenge?: string;
  /** On a step-up: the class of sign-in a policy asks for (AccessPolicy.acr). */
  acr?: string;
  /** On a refusal for want of scope: the scopes a policy asks for (AccessPolicy.scope), space-delimited. */
  scope?: string;
  /** On 401 for a DPoP proof without the box's nonce: the nonce to use (DPoP-Nonce, RFC 9449 §9). */
  dpopNonce?: string;
  /** The error code of a refusal when it is not its status's usual one (invalid_dpop_proof, use_dpop_nonce, insufficient_scope). */
  error?: string;
  location?: string;
  /** On 503 when the database cannot be reached: seconds to wait (Retry-After). */
  retryAfter?: number;
  /** The app's sign-in cookie was stale (a closed session): the gate clears it. */
  clearCookie?: string;
  outcomes: PolicyOutcome[];
  request: AppRequest | AuthzenRequest | null;
  caller: Caller;
  /** The request was JSON-RPC (its body, or the JSON its Content-Type names): how a refusal is told. */
  rpc?: RpcAnswer;
}

export type DecisionServices = ResourceServices &
  Pick<Needs, 'apps' | 'policies' | 'users' | 'peopleNamed' | 'subjectNamed' | 'keyring' | 'log'>;

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

/** What a step answers, when it answers: the Decision's verdict, status and words, and what goes with them. */
type Answer = Pick<Decision, 'allowed' | 'status' | 'reason' | 'description'> &
  Partial<Pick<Decision, 'upstream' | 'challenge' | 'acr' | 'scope' | 'dpopNonce' | 'error' | 'location' | 'retryAfter' | 'rpc'>>;

/** A refusal: its status, its reason (the deny-reason label of the metrics), and words for people and logs. */
const refusal = (status: Decision['status'], reason: DenyReason, description: string, more?: Partial<Answer>): Answer => ({
  allowed: false,
  status,
  reason,
  description,
  ...more,
});

/** A token as the request presents it: in Authorization, or in the app's sign-in cookie (`cookie`, its name). */
type TokenCredential = Presented & { cookie?: string };

/** A subject an AuthZEN PEP names. */
type NamedSubject = { user: string; mayRead: (id: string) => Promise<boolean>; presenter?: Client } | { client: string };

/** A request whose App, target and caller the steps have read. */
interface Asked {
  g: GateRequest;
  app: App;
  /** The app's origin the client addressed (originOf). */
  origin: string;
  credential: TokenCredential | NamedSubject | undefined;
  caller: Caller;
  /** The request's Txn-Token, verified (./txn.ts); null without one. */
  txn: TxnSeen | null;
}

/**
 * The Decision on a request at a gate. Its steps, in order, the first that answers deciding: find
 * the App (a request to none is refused whatever its path), read the target, read the credential,
 * check the session, evaluate; then allow, or refuse with what the caller can do about it (sign
 * in, step up), else deny by default. Whatever throws fails closed.
 */
/** The decision on `g`, its CEL expressions under one budget (a gateway's request, or the AuthZEN request it is part of). */
export const decide = (svc: DecisionServices, g: GateRequest): Promise<Decision> =>
  tracingOn() ? tracedDecision(svc, g) : withCelBudget(() => decideNow(svc, g));

/** The decision in a span of its own (api/tracing.ts): its door, app, verdict, status and reason, never the caller's credential. */
const tracedDecision = (svc: DecisionServices, g: GateRequest): Promise<Decision> =>
  span('decision', { 'boxauth.door': g.door, 'boxauth.app': g.app ?? '' }, async (notes) => {
    const d = await withCelBudget(() => decideNow(svc, g));
    notes.setAttributes({
      'boxauth.app': d.app ?? '',
      'boxauth.decision': d.allowed ? 'allow' : 'deny',
      'boxauth.decision.status': d.status,
      'boxauth.decision.reason': d.reason,
      'boxauth.decision.id': d.id,
    });
    return d;
  });

async function decideNow(svc: DecisionServices, g: GateRequest): Promise<Decision> {
  const id = newSessionId();
  try {
    const app = await findApp(svc, g);
    if (!app) return refused(id, g, null, noApp(g));
    const target = readTarget(g.target);
    if ('refused' in target) return refused(id, g, app, refusal(400, 'bad-path', target.refused));
    const body = readBody(g);
    if ('refused' in body) return refused(id, g, app, body.refused);
    const origin = originOf(app, g.host, g.scheme);
    const credential = readCredential(app, g.credential, origin);
    const caller = credential === undefined ? NOBODY : await checkSession(svc, app, g, credential, origin);
    if ('status' in caller) return refused(id, g, app, caller); // a credential that proves no caller
    const txn = await txnOfRequest(svc, g.headers);
    if (txn && 'problem' in txn) return refused(id, g, app, refusal(401, 'bad-token', `Txn-Token refused: ${txn.problem}`));
    const asked: Asked = { g, app, origin, credential, caller, txn };
    // A batch is decided call by call, each its own request object: any refused call refuses the request.
    const allowing: PolicyOutcome[] = [];
    let last: AppDecided | undefined;
    for (const call of body.rpc?.calls ?? [null]) {
      const verdict = await evaluate(svc, asked, policyRequest(asked, target, call));
      if (!verdict.allowed) {
        const answer = signIn(asked, verdict) ?? moreScope(asked, verdict) ?? stepUp(asked, verdict) ?? noPolicy(verdict, call);
        return decided(id, asked, verdict, { ...answer, ...rpcAnswer(body.rpc, ACCESS_DENIED) });
      }
      allowing.push(...verdict.outcomes.filter((o) => o.verdict === 'allows'));
      last = verdict;
    }
    return decided(id, asked, last!, allow(svc, asked, allowing));
  } catch (err) {
    return failClosed(svc, id, g, err);
  }
}

/**
 * Read the body's JSON-RPC envelope (./jsonrpc.ts), when the gateway sent the body: a body the
 * gate cannot read whole, or JSON that is not JSON-RPC, is refused (400, 413) before anyone is
 * asked; deciding it as a request without JSON-RPC would let a tool call through a rule that
 * allows other POSTs.
 */
function readBody(g: GateRequest): { rpc: JsonRpcBody | null } | { refused: Answer } {
  const read = readJsonRpc(g.body, g.headers);
  if (read === null || 'calls' in read) return { rpc: read };
  const answer = refusal(read.status, 'bad-body', read.refused);
  return { refused: read.json ? { ...answer, rpc: { code: read.code, ids: [null], batch: false } } : answer };
}

/** How a refusal of the JSON-RPC body `rpc` is told: with `code`, to each of its calls. */
const rpcAnswer = (rpc: JsonRpcBody | null, code: number): Pick<Answer, 'rpc'> =>
  rpc ? { rpc: { code, ids: rpc.calls.map((c) => c.id), batch: rpc.batch } } : {};

/** Find the App: the one the gateway names, else the one at the request's host. */
const findApp = (svc: DecisionServices, g: GateRequest): Promise<App | undefined> =>
  g.app !== undefined ? svc.apps.byId(g.app) : svc.apps.byHost(g.host);

/** Deny by default: a request to no App of the box is refused (403). */
const noApp = (g: GateRequest): Answer => refusal(403, 'no-app', g.app !== undefined ? `no app "${g.app}"` : `no app at host "${g.host}"`);

/**
 * Read the credential: the token the door found in Authorization (RFC 6750 §2.1; RFC 9449 §7.1
 * for a DPoP-bound one), else the app's own sign-in cookie among the request's cookies (it holds a
 * bearer token: a DPoP-bound one there is refused like any other without its proof), else the
 * subject an AuthZEN PEP names; or none.
 */
function readCredential(app: App, credential: Credential, origin: string): TokenCredential | NamedSubject | undefined {
  if (typeof credential !== 'object') return undefined;
  if ('bearer' in credential) return { scheme: 'Bearer', token: credential.bearer };
  if ('dpop' in credential) return { scheme: 'DPoP', token: credential.dpop };
  if ('cookies' in credential) {
    const name = appCookieName(app, origin.startsWith('https:'));
    const token = credential.cookies[name];
    return token === undefined ? undefined : { scheme: 'Bearer', token, cookie: name };
  }
  return credential;
}

/** Check the session: whose the token is (tokenCaller), or who the subject an AuthZEN PEP names is now (namedCaller). */
const checkSession = (
  svc: DecisionServices,
  app: App,
  g: GateRequest,
  credential: TokenCredential | NamedSubject,
  origin: string,
): Promise<Caller | Answer> => ('scheme' in credential ? tokenCaller(svc, app, credential, g, origin) : namedCaller(svc, credential));

/**
 * Who presents the token at `app` with request `g` (whose client addressed `origin`): a live
 * session's, used with its key's proof when it is DPoP-bound (RFC 9449 §7), with the certificate
 * the gateway saw when it is certificate-bound (RFC 8705 §3), for the app's
 * audience, of a user who still exists; or why not (tokenRefused).
 */
async function tokenCaller(
  svc: DecisionServices,
  app: App,
  token: TokenCredential,
  g: GateRequest,
  origin: string,
): Promise<Caller | Answer> {
  // The URI the client addressed, as a DPoP proof's htu names it (RFC 9449 §4.3): the app's
  // origin as its gateway describes the request, and the path as sent (query and fragment aside).
  const path = /^[^?#]*/.exec(g.target)![0];
  const check = await checkPresented(svc, token, {
    proofs: g.proofs,
    method: g.method,
    url: `${origin}${path}`,
    certificate: () => g.certificate,
  });
  if ('problem' in check) return tokenRefused(app, origin, token, 'bad-token', check.problem, check.dpop ? check : undefined);
  const s = check.session;
  // RFC 9068 §4 / RFC 8707: a token is for the audience it names, and only there.
  if (s.audience !== audienceOf(app)) {
    const why = `the token is for ${s.audience === null ? "the box's own API" : `"${s.audience}"`}, not this app`;
    return tokenRefused(app, origin, token, 'wrong-audience', why);
  }
  let user: PrincipalUser | null = null;
  if (s.userId !== null) {
    user = (await svc.users.get(String(s.userId))) ?? null;
    if (!user) return tokenRefused(app, origin, token, 'bad-token', 'the user of this token no longer exists');
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
    clientAuthMethod: typeof s.details?.client_auth_method === 'string' ? s.details.client_auth_method : null,
  };
}

/**
 * A token that proves no caller. In Authorization: 401 with its scheme's challenge (RFC 6750 §3.1
 * invalid_token; RFC 9449 §7.1 DPoP's, with its error and the nonce to use). In the app's sign-in
 * cookie it is a stale one (the person signed out): no credential, the caller is nobody, sent to
 * sign in again, and the gate clears the cookie (decided).
 */
function tokenRefused(
  app: App,
  origin: string,
  token: TokenCredential,
  reason: DenyReason,
  why: string,
  dpop?: { error: string; nonce?: string | undefined },
): Caller | Answer {
  if (token.cookie !== undefined) return NOBODY;
  if (!dpop)
    return refusal(401, reason, why, { challenge: appChallenge('Bearer', app, origin, { error: 'invalid_token', description: why }) });
  return refusal(401, reason, why, {
    challenge: appChallenge('DPoP', app, origin, { error: dpop.error, description: why }),
    error: dpop.error,
    ...(dpop.nonce ? { dpopNonce: dpop.nonce } : {}),
  });
}

/**
 * AuthZEN's named subjects: a client is only itself; a user is who the name names now, read as a
 * PEP names people (docs/guides/guard-your-apps.md): digits are a box id and nothing else; any other
 * name is looked up once among the sign-in names (SCIM userName), the directory's ids (SCIM
 * externalId) and the subjects of upstream identities. A name of nobody is refused, and so is one
 * that names two people: the box never picks one of them.
 *
 * Only people the PEP may read on the box's API (`GET /users/<id>`, `mayRead`) can be named: an
 * App's policies see a person's address, groups and the claims the App shapes of them
 * (api/policy/claims.ts appPerson), and a policy its team wrote could spell them out one guess at a time (`request.user.email.startsWith(request.resource.properties.p)`)
 * to a PEP that may not read them. Anyone else is nobody to the policies, exactly as a name no one
 * has: the same refusal, so the answer tells no existing person from a made-up one.
 */
async function namedCaller(svc: DecisionServices, named: NamedSubject): Promise<Caller | Answer> {
  if ('client' in named) return { ...NOBODY, client: named.client };
  const user = await personNamed(svc, named.user, named.mayRead, named.presenter);
  if (user === 'ambiguous') return refusal(401, 'bad-token', `"${named.user}" names more than one person: name them by their box id`);
  return user ? { ...NOBODY, user } : refusal(401, 'bad-token', 'no such user');
}

/**
 * The person `name` names among those `mayRead` lets the PEP name (namedCaller's reading), none, or
 * 'ambiguous'. A `sub` the PEP's client was given names its person; one another client was given
 * (a pairwise sub of client A, presented by client B) names nobody.
 */
export async function personNamed(
  svc: Pick<DecisionServices, 'users' | 'peopleNamed' | 'subjectNamed'>,
  name: string,
  mayRead: (id: string) => Promise<boolean>,
  presenter?: Client,
): Promise<PrincipalUser | 'ambiguous' | undefined> {
  let ids: string[];
  if (/^\d+$/.test(name)) ids = /^\d{1,15}$/.test(name) ? [name] : [];
  else ids = (await svc.peopleNamed(name)).map(String);
  const own = presenter ? await svc.subjectNamed(presenter, name) : undefined;
  if (own !== undefined && !ids.includes(String(own))) ids.push(String(own));
  const readable: PrincipalUser[] = [];
  for (const id of ids) {
    const user = await svc.users.get(id);
    if (user && (await mayRead(user.id))) readable.push(user);
  }
  // Two people the PEP may read answer to the name; one it may not read is nobody to it, and
  // counting them would tell it that they exist.
  if (readable.length > 1) return 'ambiguous';
  return readable[0];
}

/**
 * What the App's policies are asked (./request.ts), with the JSON-RPC `call` of the body when
 * there is one; an AuthZEN evaluation's request carries the resource and context it sent, and the
 * call its action and resource name as the AuthZEN MCP binding maps one (./jsonrpc.ts coazCall).
 */
function policyRequest(
  asked: Asked,
  target: { path: string; query: Record<string, string | string[]> },
  call: JsonRpcCall | null,
): AppQuestion {
  const { g } = asked;
  const read = { method: g.method, host: g.host, ...target, txn: asked.txn };
  if (!g.resource) return appRequest(asked.app, read, g.headers, asked.caller, call);
  const { type, id } = g.resource;
  const coaz = typeof type === 'string' && typeof id === 'string' ? coazCall(g.method, { type, id }) : null;
  const { request, person } = appRequest(asked.app, read, g.headers, asked.caller, coaz);
  return { request: { ...request, resource: g.resource, ...(g.context ? { context: g.context } : {}) }, person };
}

/**
 * Evaluate: the App's policies on the request (api/policy/evaluate.ts decideApp: deny by
 * default), seeing of the caller's person what the App may (its token's claims and the claims it
 * shapes: api/policy/claims.ts appPerson); a policy with an acr (AccessPolicy.acr) allows only a
 * sign-in at least that strong, one with a scope (AccessPolicy.scope) only a token that carries all of it.
 */
function evaluate(svc: DecisionServices, asked: Asked, question: AppQuestion): Promise<AppDecided> {
  return svc.policies.decideApp(asked.app, appSubjectOf(asked.caller, atAppInPerson(asked)), question);
}

/**
 * A person at the app in their own browser: the app's sign-in cookie, holding a token the box
 * issued to the app's own sign-in client (./app-sign-in.ts). Scopes are what a person lets a
 * client do for them; the person themselves is asked for none (AccessPolicy.scope), as their
 * browser could not answer an insufficient_scope challenge. A token of another client in a
 * cookie of that name is any client's token: its scopes count.
 */
function atAppInPerson({ app, caller, credential }: Asked): boolean {
  const cookie = credential !== undefined && 'cookie' in credential && credential.cookie !== undefined;
  return cookie && app.signIn !== undefined && caller.user !== null && caller.client === app.signIn.client;
}

/** Allow (200): the policies that allow it named (each call's, for a batch), the caller in the headers the gateway sets upstream. */
function allow(svc: DecisionServices, asked: Asked, allowing: PolicyOutcome[]): Answer {
  const { app, caller } = asked;
  const names = [...new Set(allowing.map((o) => o.id))];
  return {
    allowed: true,
    status: 200,
    reason: 'allowed',
    description: `allowed by ${names.map((p) => `"${p}"`).join(', ')}`,
    upstream: { ...upstreamHeaders(svc, app, caller), ...upstreamTxnToken(svc, asked) },
  };
}

/**
 * The Txn-Token header an allowed request carries upstream (App upstream.txnToken, ./txn.ts
 * gateTxnToken): none when the request already carries a Txn-Token, which the gateway passes on
 * unchanged (draft-ietf-oauth-transaction-tokens-10 §12.2: "any outbound calls made by this
 * workload MUST include the Txn-Token as it was received").
 */
function upstreamTxnToken(svc: DecisionServices, { app, caller, g, txn }: Asked): Record<string, string> {
  if (txn || !app.upstream?.txnToken) return {};
  const target = readTarget(g.target);
  const token = 'refused' in target ? undefined : gateTxnToken(svc, app, caller, { method: g.method, host: g.host, path: target.path });
  return token ? { 'Txn-Token': token } : {};
}

/** Why no policy allows the request: none that applies, or none that applies allows it. */
const notAllowed = (verdict: AppVerdict): string => {
  const stopped = verdict.outcomes.find((o) => o.verdict === 'does not allow' && o.stopped);
  if (stopped) return `no policy of this app allows the request (policy "${stopped.id}": ${stopped.stopped})`;
  return verdict.outcomes.some((o) => o.verdict === 'does not allow' || o.verdict === 'allows')
    ? 'no policy of this app allows the request'
    : 'no policy of this app applies to the request';
};

/** A policy would allow the request after a stronger sign-in (AccessPolicy.acr): the weakest such class is enough. */
const acrWanted = (verdict: AppVerdict): string | undefined =>
  weakest(verdict.outcomes.flatMap((o) => (o.verdict === 'needs a stronger sign-in' && o.acr ? [o.acr] : [])));

/** A person's browser asking for a page: sent to sign in (302), where anything else is told (401). */
const isBrowser = (g: GateRequest): boolean =>
  (g.method === 'GET' || g.method === 'HEAD') && (g.headers.accept ?? '').includes('text/html');

/** Where a person signs in to the app (./app-sign-in.ts), to come back to the path they asked for (never `//…`). */
function signInAt({ g, origin }: Asked, more: Record<string, string>): string {
  const rd = g.target.startsWith('/') && !g.target.startsWith('//') ? g.target : '/';
  return `${origin}${START_PATH}?${new URLSearchParams({ rd, ...more })}`;
}

/**
 * Nobody is signed in (no credential, or a stale sign-in cookie): a person in a browser is sent
 * to sign in and back (302, with the class of sign-in a policy wants); anything else is told how
 * to authenticate (401, RFC 6750 §3.1: "If the request lacks any authentication information
 * [...], the resource server SHOULD NOT include an error code or other error information"). An
 * AuthZEN PEP, which names its subject itself, is answered by the steps after this one.
 */
function signIn(asked: Asked, verdict: AppVerdict): Answer | undefined {
  const { g, app } = asked;
  if (asked.caller !== NOBODY || g.door === 'authzen') return undefined;
  if (app.signIn && isBrowser(g)) {
    const acr = acrWanted(verdict);
    return refusal(302, 'sign-in', notAllowed(verdict), { location: signInAt(asked, acr ? { acr } : {}) });
  }
  return refusal(401, 'sign-in', notAllowed(verdict), { challenge: appChallenge('Bearer', app, asked.origin) });
}

/**
 * Step up: a policy allows the request only after a stronger sign-in. A person at the app in a
 * browser, with the app's sign-in cookie, signs in again with what is missing (/.boxauth/start →
 * the box's step-up) and comes back with a new cookie; any other caller is told what is wanted
 * (RFC 9470 §3: 401, error="insufficient_user_authentication" and acr_values).
 */
function stepUp(asked: Asked, verdict: AppVerdict): Answer | undefined {
  const acr = acrWanted(verdict);
  if (!acr) return undefined;
  const { g, app, caller, credential } = asked;
  const why = `a policy of this app allows the request only after a sign-in of class ${acr}`;
  const token = credential !== undefined && 'scheme' in credential ? credential : undefined;
  if (app.signIn && caller.user && token?.cookie !== undefined && isBrowser(g)) {
    return refusal(302, 'step-up', why, { acr, location: signInAt(asked, { acr }) });
  }
  // The scopes the policy that wants this class wants too, when the token lacks them: one new authorization brings both.
  const scope = fewest(verdict.outcomes.filter((o) => o.verdict === 'needs a stronger sign-in' && o.acr === acr));
  const wanted = appChallenge(
    token?.scheme ?? 'Bearer',
    app,
    asked.origin,
    { error: 'insufficient_user_authentication', description: why },
    `acr_values="${acr}"`,
    ...(scope ? [`scope="${scope.join(' ')}"`] : []),
  );
  return refusal(401, 'step-up', why, { acr, challenge: wanted });
}

/** Of policies that would allow with more scope, the smallest set of scopes they want (the first policy's on a tie), if any wants one. */
function fewest(outcomes: PolicyOutcome[]): string[] | undefined {
  const wanting = outcomes.flatMap((o) => (o.scope ? [o.scope] : []));
  return wanting.reduce<string[] | undefined>((least, s) => (least === undefined || s.length < least.length ? s : least), undefined);
}

/**
 * More scope: a policy would allow the request from a token carrying its scopes
 * (AccessPolicy.scope), and this one lacks some. RFC 6750 §3.1: "The request requires higher
 * privileges than provided by the access token. The resource server SHOULD respond with the HTTP
 * 403 (Forbidden) status code and MAY include the "scope" attribute with the scope necessary to
 * access the protected resource." The scope named is all the policy wants, not only what is
 * missing: the client asks for a new token with them (MCP 2025-11-25, "Scope Challenge
 * Handling"). When another policy would allow after a stronger sign-in instead, this wins: a
 * token with more scopes asks the person for their consent at most, a step-up for a new sign-in.
 */
function moreScope(asked: Asked, verdict: AppVerdict): Answer | undefined {
  const scope = fewest(verdict.outcomes.filter((o) => o.verdict === 'needs more scope'));
  if (!scope) return undefined;
  const { app, credential } = asked;
  const scheme = credential !== undefined && 'scheme' in credential ? credential.scheme : 'Bearer';
  const why = `a policy of this app allows the request only with a token of scope "${scope.join(' ')}"`;
  const challenged = appChallenge(
    scheme,
    app,
    asked.origin,
    { error: 'insufficient_scope', description: why },
    `scope="${scope.join(' ')}"`,
  );
  return refusal(403, 'insufficient-scope', why, { challenge: challenged, error: 'insufficient_scope', scope: scope.join(' ') });
}

/**
 * A challenge of the app (its id the realm, RFC 6750 §3), naming where its metadata is (RFC 9728
 * §5.1: "resource_metadata: The URL of the protected resource metadata"), at the origin the client
 * addressed, so that a client refused here finds the box and the scopes from this answer alone.
 */
function appChallenge(
  scheme: 'Bearer' | 'DPoP',
  app: App,
  origin: string,
  refused?: { error: string; description: string },
  ...params: string[]
): string {
  const url = metadataUrlOf(app, origin);
  const more = url === undefined ? params : [...params, resourceMetadataParam(url)];
  return scheme === 'DPoP'
    ? dpopChallenge(app.id, refused && { error: refused.error, problem: refused.description }, ...more)
    : challenge('Bearer', app.id, refused, ...more);
}

/** Deny by default: no policy of the app allows the request (403), or, of a JSON-RPC body, this call of it. */
const noPolicy = (verdict: AppVerdict, call: JsonRpcCall | null): Answer =>
  refusal(403, 'no-policy', call ? `${callName(call)}: ${notAllowed(verdict).replace('the request', 'this call')}` : notAllowed(verdict));

/** A call as a refusal names it: its method, and its tool (`tools/call "delete_all"`). */
const callName = (call: JsonRpcCall): string => {
  const method = /^[\x21-\x7e]+$/.test(call.method) ? call.method : JSON.stringify(call.method);
  return call.tool === null ? method : `${method} ${JSON.stringify(call.tool)}`;
};

/** The Decision of a step before the policies were asked: no request, no caller, no outcomes. */
const refused = (id: string, g: GateRequest, app: App | null, answer: Answer): Decision => ({
  id,
  app: app?.id ?? null,
  door: g.door,
  upstream: {},
  outcomes: [],
  caller: NOBODY,
  request: null,
  ...answer,
});

/** The Decision on a request the App's policies were asked about. */
function decided(id: string, asked: Asked, { request, outcomes }: AppDecided, answer: Answer): Decision {
  const { g, app, caller, credential } = asked;
  // A sign-in cookie that proved nobody is stale (tokenRefused): the gate clears it.
  const stale = caller === NOBODY && credential !== undefined && 'cookie' in credential ? credential.cookie : undefined;
  return {
    id,
    app: app.id,
    door: g.door,
    upstream: {},
    outcomes,
    caller,
    request,
    ...(stale ? { clearCookie: stale } : {}),
    ...answer,
  };
}

/**
 * Fail closed: a gate that cannot decide refuses (503), telling the caller only what it can act
 * on; the error itself (a database's address, a query) is the log's, not the gateway's or the client's.
 */
function failClosed(svc: DecisionServices, id: string, g: GateRequest, err: unknown): Decision {
  if (isDatabaseUnavailable(err)) {
    svc.log.warn({ err: errorMessage(err), app: g.app, door: g.door }, 'the database is unreachable or overloaded; the request is refused');
    const why = 'the decision point cannot reach its database or it is overloaded right now; try again shortly';
    return refused(id, g, null, refusal(503, 'error', why, { retryAfter: UNAVAILABLE_RETRY_SECONDS }));
  }
  svc.log.error({ err, app: g.app, door: g.door }, 'a decision failed; the request is refused');
  return refused(id, g, null, refusal(503, 'error', 'the decision point could not decide; see its log'));
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
 * send its own). The person is named by their token's `sub`, as the client the token (or the
 * app's sign-in) was issued to sees them (api/credentials/subjects.ts): the one the app would
 * read in the token itself and in the token the gate passes on (./upstream-token.ts), and never
 * their row id, which would tell an app how many people the box has. The email only when the box
 * vouches for it (email_verified): an app, or a gateway's email-domain rule, takes the header as
 * the person's address.
 */
function upstreamHeaders(svc: DecisionServices, app: App, caller: Caller): Record<string, string> {
  const names = identityHeaders(app);
  const user = caller.user;
  const headers: Record<string, string> = {
    [names.user]: user ? headerValue(caller.subject?.sub ?? user.id) : '',
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
