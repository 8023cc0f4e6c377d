// A case of `boxauth policy test` decided by the code that decides the box's requests: its
// request object made as the box makes it (api/decision/request.ts appRequest and
// api/decision/path.ts for an app's; api/policy/requests.ts requestUser for the person, and
// api/policy/claims.ts appPerson for the person as an App's policies see them), and
// decided by api/policy/evaluate.ts PolicyIndex — decide, decideApp, decideExchange — so that
// linking, OR-ing, app scoping, the person-and-client rule and dry-run are the box's own. What
// the case says is who the box found calling: the checks before the policies (a live token for
// the app's audience, a DPoP proof, who an AuthZEN subject's id names) are not the policies' to
// test.
import { hostOf } from '../decision/apps.js';
import { authzenTarget } from '../decision/authzen-target.js';
import { explainPolicies } from '../decision/explain.js';
import { readJsonRpc, type JsonRpcEnvelope } from '../decision/jsonrpc.js';
import { readTarget } from '../decision/path.js';
import { appRequest, appSubjectOf, NOBODY, type Caller } from '../decision/request.js';
import type { AppQuestion, PolicyIndex, Subject, Verdict } from '../policy/evaluate.js';
import { requestUser, type RequestUser, type BoxApiRequest, type ExchangeRequest } from '../policy/requests.js';
import type { App, PrincipalUser } from '../types.js';
import type { ApiCase, AppCase, AuthzenCase, Case, CasePerson, ExchangeCase } from './policy-cases.js';
import type { PolicySources } from './policy-sources.js';

/** What one policy made of a case's request, as `boxauth explain` shows it. */
export interface PolicyVerdict {
  id: string;
  /** The box's API: the side it counts for (a person's, or the client's). */
  side?: 'person' | 'client';
  verdict: string;
  why?: string;
}

export interface CaseResult {
  name: string;
  at: string;
  passed: boolean;
  /** The decision. */
  allowed: boolean;
  /** The policies that allowed it (every one, where the box names only the first of each side). */
  allowedBy: string[];
  /** Why it came out so, in a sentence. */
  reason: string;
  policies: PolicyVerdict[];
  /** The request object the policies saw; null when the case could not make one. */
  request: object | null;
  /** The case could not be asked (its App is not there): it fails whatever it expects. */
  undecided?: true;
}

type Decided = Omit<CaseResult, 'name' | 'at' | 'passed'>;

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** The person of a case as the box holds a person who calls (api/types.ts PrincipalUser). */
const principal = (p: CasePerson): PrincipalUser => ({
  id: p.id,
  // No policy sees it (api/policy/requests.ts requestUser): a case names the person by id.
  subject: '00000000-0000-4000-8000-000000000000',
  email: p.email,
  emailVerified: p.email_verified,
  groups: p.groups,
  data: p.more.data ?? {},
  scim: p.more.scim ?? {},
  identities: p.more.identities ?? [],
});

/** The person as request objects name them (api/policy/requests.ts requestUser), with what the case says of them. */
const personOf = (p: CasePerson): RequestUser => requestUser(principal(p));

/** The Client record a request object holds: the box's or the manifests', else only its id. */
const clientOf = (sources: PolicySources, id: string): Record<string, unknown> => sources.clients.get(id) ?? { resourceType: 'Client', id };

/** A verdict of the box's API, with every policy that applied to each side and why each did not allow. */
function boxDecided(
  index: PolicyIndex,
  subject: Subject,
  request: BoxApiRequest | ExchangeRequest,
  verdict: Verdict,
  exchange: boolean,
): Decided {
  const weighed = index.weigh(subject, request, exchange);
  const policies = weighed.map((w) => ({
    id: w.id,
    side: w.side,
    verdict: w.allows ? 'allows' : 'does not allow',
    ...(w.allows ? {} : { why: index.why(w.id, request) ?? 'it allows the request' }),
  }));
  const side = (s: 'person' | 'client'): string =>
    s === 'client'
      ? `no policy ${exchange ? 'linked to' : 'of'} client "${subject.clientId}" allows it${exchange ? ' (an exchange: policies linked to the client only)' : ''}`
      : subject.user
        ? `no policy of the person "${subject.user.id}" (linked to them, a group of theirs, or global) allows it`
        : `no policy of client "${subject.forClient}" allows it`;
  return {
    allowed: verdict.allowed,
    allowedBy: weighed.filter((w) => w.allows).map((w) => w.id),
    reason: verdict.allowed ? `allowed by ${verdict.policies.join(' and ')}` : `refused: ${side(verdict.refusedBy)}`,
    policies,
    request,
  };
}

function decideApi(index: PolicyIndex, sources: PolicySources, q: ApiCase): Decided {
  const user = q.user && principal(q.user);
  const request: BoxApiRequest = { ...q.request, client: clientOf(sources, q.client), user: q.user && personOf(q.user), scope: q.scope };
  const subject: Subject = { clientId: q.client, user: user && { id: user.id, groups: user.groups } };
  return boxDecided(index, subject, request, index.decide(subject, request), false);
}

function decideExchange(index: PolicyIndex, sources: PolicySources, q: ExchangeCase): Decided {
  const request: ExchangeRequest = {
    'request-method': 'post',
    uri: '/auth/token',
    params: { grant_type: TOKEN_EXCHANGE },
    'query-string': '',
    client: clientOf(sources, q.client),
    user: null,
    scope: q.scope,
    // Read by ./policy-cases.ts: a subject (and actor) with kind, iss and sub; the rest as the case gives it.
    exchange: q.exchange as unknown as ExchangeRequest['exchange'],
  };
  return boxDecided(index, { clientId: q.client, user: null }, request, index.decideExchange(q.client, request), true);
}

/** A refusal before any policy is asked (no such App, a path the box would not read). */
const refusedBefore = (reason: string): Decided => ({ allowed: false, allowedBy: [], reason, policies: [], request: null });

/**
 * An app's policies on `question`, as the decision point asks them (api/decision/engine.ts
 * evaluate): the case's person as the App may see them (its token's claims, the claims it shapes).
 */
async function appDecided(index: PolicyIndex, app: App, caller: Caller, question: AppQuestion): Promise<Decided> {
  const { request, ...verdict } = index.decideApp(app, appSubjectOf(caller), question);
  const allowedBy = verdict.outcomes.filter((o) => o.verdict === 'allows').map((o) => o.id);
  return {
    allowed: verdict.allowed,
    allowedBy,
    reason: verdict.allowed
      ? `allowed by ${allowedBy.join(', ')}`
      : verdict.outcomes.length
        ? 'refused: no policy of the app allows it'
        : 'refused: no policy of the app applies to this caller (refused by default)',
    policies: await explainPolicies({ policies: index }, verdict.outcomes, request),
    request,
  };
}

function appIn(sources: PolicySources, id: string): App | string {
  return (
    sources.apps.get(id) ?? `no App "${id}" in ${sources.from}: its urls give the default host, its policyHeaders the headers policies see`
  );
}

/**
 * The JSON-RPC calls of an app case's request, each decided on its own (a request without one: [null]),
 * or why the gate refuses its body before any policy. A body is read as the gate reads one it was sent
 * whole (api/decision/jsonrpc.ts readJsonRpc), with the request's Content-Type (JSON unless it says).
 */
function callsOf(q: AppCase): (JsonRpcEnvelope | null)[] | string {
  const rpc = q.request.rpc;
  if (rpc === null) return [null];
  if ('calls' in rpc) return rpc.calls;
  const headers = { 'content-type': 'application/json', ...q.request.headers };
  const read = readJsonRpc({ bytes: Buffer.from(rpc.body), whole: true }, headers);
  if (read === null) return [null];
  return 'calls' in read ? read.calls.map(({ method, tool }) => ({ method, tool })) : `${read.refused} (${read.status} at the gate)`;
}

async function decideApp(index: PolicyIndex, sources: PolicySources, q: AppCase): Promise<Decided> {
  const app = appIn(sources, q.app);
  if (typeof app === 'string') return { ...refusedBefore(app), undecided: true };
  const read = readTarget(q.request.path);
  if ('refused' in read) return refusedBefore(`refused before the policies (400 at the gate): ${read.refused}`);
  const calls = callsOf(q);
  if (typeof calls === 'string') return refusedBefore(`refused before the policies: ${calls}`);
  const caller: Caller = {
    ...NOBODY,
    user: q.user && principal(q.user),
    client: q.client,
    scope: q.scope,
    audience: q.audience,
    subject: q.subject,
    act: q.act as Caller['act'],
    amr: q.amr,
    acr: q.acr,
  };
  const host = q.request.host ?? hostOf(app.urls[0]!);
  // As the gate decides a batch (api/decision/engine.ts): call by call, and any refused call refuses the request.
  const allowedBy: string[] = [];
  let last: Decided | undefined;
  for (const [i, call] of calls.entries()) {
    last = await appDecided(
      index,
      app,
      caller,
      appRequest(app, { method: q.request.method, host, ...read }, q.request.headers, caller, call),
    );
    if (!last.allowed) return calls.length > 1 ? { ...last, reason: `call ${i + 1} of the batch ${last.reason}` } : last;
    allowedBy.push(...last.allowedBy.filter((id) => !allowedBy.includes(id)));
  }
  return calls.length > 1 ? { ...last!, allowedBy, reason: `every call of the batch allowed, by ${allowedBy.join(', ')}` } : last!;
}

/** An AuthZEN evaluation as the box's PDP reads it (api/decision/authzen-target.ts), the context as sent. */
async function decideAuthzen(index: PolicyIndex, sources: PolicySources, q: AuthzenCase): Promise<Decided> {
  const app = appIn(sources, q.app);
  if (typeof app === 'string') return { ...refusedBefore(app), undecided: true };
  const { method, host, path, resource } = authzenTarget(app, q.action, q.resource);
  const read = readTarget(path);
  if ('refused' in read) return refusedBefore(`an error of the evaluation (400): ${read.refused}`);
  const caller: Caller = q.user ? { ...NOBODY, user: principal(q.user) } : { ...NOBODY, client: q.subject.id };
  const { request, person } = appRequest(app, { method, host, ...read }, {}, caller);
  return appDecided(index, app, caller, { request: { ...request, resource, ...(q.context ? { context: q.context } : {}) }, person });
}

/** A case decided, and whether it came out as expected. */
export async function decideCase(index: PolicyIndex, sources: PolicySources, c: Case): Promise<CaseResult> {
  const q = c.question;
  const decided =
    q.kind === 'api'
      ? decideApi(index, sources, q)
      : q.kind === 'exchange'
        ? decideExchange(index, sources, q)
        : q.kind === 'app'
          ? await decideApp(index, sources, q)
          : await decideAuthzen(index, sources, q);
  const { allow, allowedBy } = c.expect;
  const passed = !decided.undecided && decided.allowed === allow && (allowedBy === undefined || decided.allowedBy.includes(allowedBy));
  return { name: c.name, at: c.at, passed, ...decided };
}
