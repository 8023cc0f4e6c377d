// Authentication (who is calling: the session behind the bearer token) and
// authorization (does any AccessPolicy allow this request). Deny by default.
import type { NextFunction, Request, RequestHandler, Response } from './router.js';
import { ApiError, challenge } from '../errors.js';
import { percentDecode } from '../input.js';
import { subjectOf } from '../credentials/exchange/parties.js';
import { resourceError } from '../credentials/errors.js';
import type { DpopErrorCode } from '../credentials/dpop/check.js';
import {
  checkPresented,
  dpopChallenge,
  presentedIn,
  type Presented,
  type ResourceRequest,
  type ResourceServices,
} from '../credentials/dpop/resource.js';
import type { Actor, Audit, AuditEvent } from '../audit.js';
import { requestUser, type BoxApiRequest } from '../policy/requests.js';
import type { Subject, Policies } from '../policy/evaluate.js';
import type { Writer } from '../policy/writers.js';
import type { Config } from '../config.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Stored } from '../store/resources.js';
import type { SessionRow } from '../store/sessions.js';
import type { Client, PrincipalUser } from '../types.js';
import { kindAtSegment } from '../record-kinds.js';
import { bodyAsPoliciesSee } from './written-secrets.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  audit: Audit;
  policies: Policies;
  clients: RecordCache<Stored<Client>>;
  users: RecordCache<PrincipalUser>;
}

export interface Principal {
  token: string;
  session: SessionRow;
  client: Stored<Client>;
  user: PrincipalUser | undefined;
}

/** What finding who presents a token needs: the token checks (DPoP's too), and the clients and users behind them. */
export type PrincipalServices = ResourceServices & Pick<Needs, 'clients' | 'users'>;

declare module './router.js' {
  interface Request {
    principal?: Principal;
  }
}

/** A refusal of the DPoP scheme (RFC 9449 §7.1): its error, and with use_dpop_nonce the nonce to use. */
interface DpopProblem {
  error: DpopErrorCode | 'invalid_token';
  nonce?: string | undefined;
}

export function unauthorized(description: string, presented: boolean, dpop?: DpopProblem): ApiError {
  if (dpop) {
    return resourceError(dpop.error, description, {
      'WWW-Authenticate': dpopChallenge('boxauth', { error: dpop.error, problem: description }),
      ...(dpop.nonce ? { 'DPoP-Nonce': dpop.nonce } : {}),
    });
  }
  const bearer = challenge('Bearer', 'boxauth', presented ? { error: 'invalid_token', description } : undefined);
  return resourceError('invalid_token', description, { 'WWW-Authenticate': bearer });
}

/**
 * The access token from the Authorization header (Bearer, RFC 6750 §2.1; or DPoP, RFC 9449
 * §7.1) or the access_token query parameter (RFC 6750 §2.3, Bearer only).
 */
export function presentedCredential(req: Request): Presented | undefined {
  const header = req.headers.authorization;
  const query = req.query.access_token;
  if (header !== undefined && query !== undefined) {
    throw new ApiError(400, 'invalid_request', 'send the access token once: in the Authorization header or as access_token, not both');
  }
  if (header !== undefined) {
    const presented = presentedIn(header);
    if (!presented) throw unauthorized('the Authorization header must be "Bearer <token>" or "DPoP <token>"', true);
    return presented;
  }
  if (query !== undefined) {
    if (typeof query !== 'string' || !query) throw unauthorized('access_token must be given once', true);
    return { scheme: 'Bearer', token: query };
  }
  return undefined;
}

/** The request a DPoP proof must name (RFC 9449 §4.3): its method, and its URL at the box's base URL. */
export function resourceRequest(svc: Pick<Needs, 'config'> & Pick<ResourceServices, 'clientCertificates'>, req: Request): ResourceRequest {
  const url = req.originalUrl;
  const query = url.indexOf('?');
  return {
    proofs: req.headersDistinct.dpop,
    method: req.method,
    url: `${svc.config.baseUrl}${query === -1 ? url : url.slice(0, query)}`,
    certificate: () => svc.clientCertificates.of(req),
  };
}

/** Who acted, as the audit names them (api/audit.ts). */
export function actorOf(principal: Principal): Actor {
  return { client: principal.session.clientId, ...(principal.user ? { user: principal.user.id } : {}), session: principal.session.id };
}

/** Who presents the token to the box's own API, with `request`; a 401 ApiError when nobody the box accepts. */
export async function principalOf(svc: PrincipalServices, presented: Presented | undefined, request: ResourceRequest): Promise<Principal> {
  if (!presented) throw unauthorized('an access token is required (Authorization: Bearer <token>)', false);
  const token = presented.token;
  const check = await checkPresented(svc, presented, request);
  if ('problem' in check) throw unauthorized(check.problem, true, check.dpop ? check : undefined);
  const { session } = check;
  // RFC 9068 §4: a token meant for another service is not one for this API.
  if (session.audience !== null && session.audience !== svc.config.baseUrl) {
    throw unauthorized(`the token's audience is "${session.audience}", not this box (${svc.config.baseUrl})`, true);
  }
  const client = await svc.clients.get(session.clientId);
  if (!client) throw unauthorized('the client of this token no longer exists', true);
  const user = session.userId !== null ? await svc.users.get(String(session.userId)) : undefined;
  if (session.userId !== null && !user) throw unauthorized('the user of this token no longer exists', true);
  return { token, session, client, user };
}

export function authenticate(svc: PrincipalServices): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    (async () => {
      const presented = presentedCredential(req);
      req.principal = await principalOf(svc, presented, resourceRequest(svc, req));
      // RFC 9449 §9: with nonces required, an answer to a proof carries the nonce of the next.
      const nonce = presented?.scheme === 'DPoP' ? svc.dpop.freshNonce() : undefined;
      if (nonce) res.set('DPoP-Nonce', nonce);
    })().then(() => next(), next);
  };
}

const CREDENTIAL_PARAMS = new Set(['access_token']);

/**
 * Keys of `params` that the server sets from the route: they hold a "/", which no
 * query parameter may (400), so a query can never stand in for them.
 */
export const ROUTE_TYPE = 'resource/type';
export const ROUTE_ID = 'resource/id';

/**
 * The routed path as the router read it: each segment percent-decoded, so that
 * `/Client/%72oot` is tested as the `/Client/root` it serves. What would change
 * the path's shape (`/`, `%`, `?`, `#` inside a segment) stays encoded. The
 * request line was checked at the edge (./edge.ts): every segment decodes.
 */
function routedPath(path: string): string {
  if (!path.includes('%')) return path;
  return path
    .split('/')
    .map((segment) => (percentDecode(segment, false) ?? segment).replace(/[%/?#]/g, encodeURIComponent))
    .join('/');
}

/** What a request asks, as the request object holds it: the parts the route decided, and the body of a write. */
interface Asked {
  method: string;
  uri: string;
  params: Record<string, unknown>;
  queryString: string;
  body: unknown;
}

/** The request object of `asked`, made by `principal`. */
function requestObject(principal: Principal, asked: Asked): BoxApiRequest {
  const client = principal.client.resource;
  return {
    'request-method': asked.method,
    uri: asked.uri,
    params: asked.params,
    'query-string': asked.queryString,
    client: { ...client },
    user: principal.user ? requestUser(principal.user) : null,
    scope: principal.session.scope,
    ...(asked.body !== undefined ? { body: bodyAsPoliciesSee(String(asked.params[ROUTE_TYPE]), asked.body) } : {}),
  };
}

/**
 * The request object the policy engines see (docs/concepts/access-control.md). `uri` is
 * the path that was routed; `resource/type` is the first segment of the matched
 * route's pattern and `resource/id` its `:id` parameter, present only on routes
 * that have one. Query parameters keep their names; credentials are left out.
 * `body` is the record a write sends, each secret it writes read as `true` (./written-secrets.ts):
 * its route reads the body before the policy check.
 */
export function policyRequest(req: Request, principal: Principal): BoxApiRequest {
  const query: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(req.query)) {
    if (name.includes('/')) {
      throw new ApiError(
        400,
        'invalid_request',
        `query parameter "${name}" is not allowed: names with "/" (such as ${ROUTE_TYPE} and ${ROUTE_ID}) are set by the server from the path`,
      );
    }
    if (!CREDENTIAL_PARAMS.has(name)) query[name] = value;
  }
  const queryString = new URLSearchParams(
    Object.entries(query).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => [k, String(x)])),
  ).toString();
  const pattern = String((req.route as { path: unknown }).path);
  const type = pattern.split('/')[1]!;
  const id = pattern.includes('/:id') ? (req.params as Record<string, string>).id : undefined;
  return requestObject(principal, {
    method: req.method.toLowerCase(),
    uri: routedPath(req.path),
    params: { ...query, [ROUTE_TYPE]: type, ...(id !== undefined ? { [ROUTE_ID]: id } : {}) },
    queryString,
    body: req.body as unknown,
  });
}

/** Whom the principal's token speaks for, as the policies see it. */
function subjectFor(principal: Principal): Subject {
  const forClient = exchangedFromClient(principal.session);
  return {
    clientId: principal.session.clientId,
    user: principal.user ? { id: principal.user.id, groups: principal.user.groups } : null,
    ...(forClient ? { forClient } : {}),
  };
}

/**
 * The policy check, as the first handler of every guarded route (after the route
 * matched, so that what the policy sees is what the router decided; after the body
 * on writes, so that it sees the record written).
 */
export function authorize(svc: Pick<Needs, 'policies' | 'audit'>): RequestHandler {
  return (req, _res, next) => {
    const principal = req.principal!;
    const subject = subjectFor(principal);
    svc.policies.decide(subject, policyRequest(req, principal)).then((verdict) => {
      if (verdict.allowed) return next();
      const why = refusal(req, subject, verdict.refusedBy);
      svc.audit.record(refusedRequest(req, principal, why));
      next(resourceError('access_denied', why));
    }, next);
  };
}

/** Routes asked with POST that change nothing (a search, an explanation, an AuthZEN question): a refusal of one is a read's. */
const QUERIES_SENT_AS_POST = /(\/\.search|^\/authz\/explain|\/access\/v1\/.+)$/;

/**
 * The audit event of a request to the box's API that `principal` made and the box refused with 403
 * for `reason` (OWASP ASVS v4 V7.2.2: every failed access control decision is logged): a write, kept
 * in the trail (bounded per caller: api/audit.ts), or a read, logged. Its path as routed, never its
 * query (an access_token may be there).
 */
export function refusedRequest(req: Request, principal: Principal, reason: string): AuditEvent {
  const pattern = String((req.route as { path: unknown } | undefined)?.path ?? req.path);
  const read = req.method === 'GET' || req.method === 'HEAD' || (req.method === 'POST' && QUERIES_SENT_AS_POST.test(pattern));
  // The kind of record (as the audit trail names it) that the route's first segment reads and writes.
  const kind = kindAtSegment(pattern.split('/')[1] ?? '');
  const id = pattern.includes('/:id') ? (req.params as Record<string, string | undefined>).id : undefined;
  return {
    event: 'api_refused',
    action: read ? 'read' : 'write',
    method: req.method,
    path: routedPath(req.path),
    ...(kind !== undefined && id !== undefined ? { kind, id } : {}),
    reason,
    by: actorOf(principal),
  };
}

/**
 * The writer of a record (api/policy/writers.ts): whether allow policies alone let it do
 * everything on the box's API, and whether they let it `PUT /App/<app>` — the request
 * object of that request, as `principal` would send it with the App as stored.
 */
export async function writerOf(svc: Pick<Needs, 'policies'>, principal: Principal): Promise<Writer> {
  const subject = subjectFor(principal);
  return {
    unconditional: await svc.policies.unconditional(subject),
    forPerson: subject.user !== null,
    mayPutApp: async (app, body) => {
      const asked = { method: 'put', uri: `/App/${encodeURIComponent(app)}`, queryString: '', body };
      const request = requestObject(principal, { ...asked, params: { [ROUTE_TYPE]: 'App', [ROUTE_ID]: app } });
      return (await svc.policies.decide(subject, request)).allowed;
    },
  };
}

/**
 * Whether `principal` may read what `GET <uri>` reads (a record of the box's API: `/Client/<id>`,
 * `/users/<id>`…), as the policies would decide that request: for answers that name records, such
 * as the audit trail's events, shown only to whom may read each record they name.
 */
export async function mayGet(svc: Pick<Needs, 'policies'>, principal: Principal, type: string, id: string): Promise<boolean> {
  const uri = `/${type}/${encodeURIComponent(id)}`;
  const request = requestObject(principal, {
    method: 'get',
    uri,
    queryString: '',
    body: undefined,
    params: { [ROUTE_TYPE]: type, [ROUTE_ID]: id },
  });
  return (await svc.policies.decide(subjectFor(principal), request)).allowed;
}

/**
 * Of `records`, those `principal` may read: every record each names (`[segment, id]`: `GET
 * /<segment>/<id>`), as mayGet decides; a record that names none, only to an administrator of the
 * whole box (allow policies alone let it do everything), who reads them all. What the audit trail
 * shows a reader whose policies allow only some records (one App's administrator). The resource
 * searches are not narrowed this way: a policy may grant a search by its parameters
 * (`GET /AccessPolicy?app=wiki`), which the records' own GETs need not allow.
 */
export async function readableBy<T>(
  svc: Pick<Needs, 'policies'>,
  principal: Principal,
  records: T[],
  named: (record: T) => [string, string][],
): Promise<T[]> {
  if (await svc.policies.unconditional(subjectFor(principal))) return records;
  const decided = new Map<string, Promise<boolean>>();
  const mayRead = ([segment, id]: [string, string]): Promise<boolean> => {
    const key = `${segment}/${id}`;
    if (!decided.has(key)) decided.set(key, mayGet(svc, principal, segment, id));
    return decided.get(key)!;
  };
  const shown: T[] = [];
  for (const record of records) {
    const refs = named(record);
    if (refs.length && (await Promise.all(refs.map(mayRead))).every(Boolean)) shown.push(record);
  }
  return shown;
}

/**
 * Whether `principal` may read the person `id` on the box's API (`GET /users/<id>`), as a
 * function of the id: who a PEP may name in an AuthZEN evaluation, an explain's dry run or a
 * Subject Search (api/decision/engine.ts namedCaller). One answer per request for each person.
 */
export function personReader(svc: Pick<Needs, 'policies'>, principal: Principal): (id: string) => Promise<boolean> {
  const read = new Map<string, Promise<boolean>>();
  return (id) => {
    if (!read.has(id))
      read.set(
        id,
        readableBy(svc, principal, [id], (person) => [['users', person]]).then((shown) => shown.length === 1),
      );
    return read.get(id)!;
  };
}

/** The box client a token exchanged from a client's token (no person's) speaks for; undefined for any other token. */
function exchangedFromClient(session: SessionRow): string | undefined {
  if (session.userId !== null) return undefined;
  const subject = subjectOf(session);
  return subject.iss === undefined && session.details?.subject !== undefined ? subject.sub : undefined;
}

/** Why a request was refused, in words a person can act on (docs/concepts/access-control.md). */
function refusal(req: Request, subject: Subject, refusedBy: 'person' | 'client'): string {
  const what = `${req.method} ${req.path}`;
  if (!subject.user && refusedBy === 'person')
    return `no AccessPolicy allows ${what} for client "${subject.forClient}", whose token client "${subject.clientId}" exchanged for this one`;
  if (!subject.user) return `no AccessPolicy allows ${what} for this token (client "${subject.clientId}")`;
  if (refusedBy === 'person')
    return `no AccessPolicy allows ${what} for this token (client "${subject.clientId}", user ${subject.user.id})`;
  return (
    `client "${subject.clientId}" may not ${what} for its users: a token a person's sign-in gave it acts only where ` +
    'a policy linked to that client allows it too'
  );
}
