// The AuthZEN search APIs (Authorization API 1.0 §8) of an App's policy decision point: "which
// people may edit record 101?" (Subject Search), "which records may alice view?" (Resource
// Search), "what may alice do to record 101?" (Action Search). A search is evaluations the PDP
// makes itself: each candidate is decided by the decision point as the evaluation naming it would
// be (./authzen.ts evaluate, the App's policies, nothing else), and is a result when it is allowed.
//
// - Candidates (api/decision/search.ts): for Subject Search of type `user`, the people of the
//   box (another type has none: an empty answer); for Resource Search, the App's `resources` of
//   the type asked; for Action Search, the App's `actions`.
// - Who may be found: a Subject Search answers only people the PEP may read on the box's own
//   API — each result is a person whose `GET /users/<id>` the box's policies allow the PEP's
//   token (as the audit trail shows only the records its reader may read: ../auth.ts
//   personReader), the rule of every subject a PEP names (api/decision/engine.ts namedCaller). A PEP allowed to ask but not to read people learns nothing of who they are; an
//   App's policies never widen what a PEP may see of the box.
// - Results name people as a PEP names them back (api/decision/search.ts nameOf), resources by
//   type and id, actions by name: no properties, so that a result is what the PEP sends back.
// - §8.3's page: first in the answer (RECOMMENDED), always with `next_token` — empty on the last
//   page — an opaque token of where the next page goes on, that the PEP sends as `page.token`.
//   Pages are bounded (api/decision/search.ts SCAN_LIMIT, and the request's budget for CEL
//   expressions: a page ends before the candidate that spent it), decided in a fixed order, and
//   equal for identical requests. A search's evaluations are not kept for explain (one per candidate).
import { ApiError, badRequest } from '../../errors.js';
import type { Decision } from '../../decision/engine.js';
import { listed, nameOf, people, walk, type Found } from '../../decision/search.js';
import type { Queryable } from '../../db/pool.js';
import { celBudgetSpent } from '../../policy/cel/index.js';
import type { App } from '../../types.js';
import { searchRequest, type Evaluation, type SearchKind, type SearchRequest } from './authzen-request.js';

type Json = Record<string, unknown>;

/** What a search uses of the process's services: the people (the pool). */
export interface SearchServices {
  pool: Queryable;
}

/** The decision on one evaluation, unrecorded (./authzen.ts evaluate). */
export type Evaluate = (e: Evaluation) => Promise<Decision>;

/** Whether the PEP may read the person of this box id on the box's API (../auth.ts personReader). */
export type MayRead = (id: string) => Promise<boolean>;

/** The answer (§8.3) to the search of `kind` in `body` at `app`, asked by a PEP that may read the people `mayRead` says. */
export async function search(
  svc: SearchServices,
  kind: SearchKind,
  body: unknown,
  app: App,
  mayRead: MayRead,
  evaluate: Evaluate,
): Promise<Json> {
  const asked = searchRequest(kind, body);
  const page = { limit: asked.page.limit, after: afterOf(asked.page.token) };
  // Under the request's budget for expressions (./authzen.ts evaluations): the walk ends a page where it runs out.
  const found = await SEARCHES[kind](svc, asked, app, mayRead, (e) => allowed(evaluate, e), page);
  return { page: { next_token: found.next === undefined ? '' : tokenOf(found.next) }, results: found.results };
}

type Search = (
  svc: SearchServices,
  asked: SearchRequest,
  app: App,
  mayRead: MayRead,
  allows: (e: Evaluation) => Promise<boolean>,
  page: { limit: number; after: number },
) => Promise<Found<Json>>;

const SEARCHES: Record<SearchKind, Search> = {
  async subject(svc, asked, _app, mayRead, allows, page) {
    if (asked.subject.type !== 'user') return { results: [], next: undefined };
    const found = await walk(
      people(svc),
      async (p) => (await mayRead(String(p.id))) && allows(evaluationOf(asked, { subject: { type: 'user', id: String(p.id) } })),
      page,
      celBudgetSpent,
    );
    return { results: found.results.map((p) => ({ type: 'user', id: nameOf(p) })), next: found.next };
  },

  async resource(_svc, asked, app, _mayRead, allows, page) {
    const candidates = (app.resources ?? []).filter((r) => r.type === asked.resource.type);
    const found = await walk(
      listed(candidates),
      (r) => allows(evaluationOf(asked, { resource: { type: r.type, id: r.id } })),
      page,
      celBudgetSpent,
    );
    return { results: found.results.map((r) => ({ type: r.type, id: r.id })), next: found.next };
  },

  async action(_svc, asked, app, _mayRead, allows, page) {
    const found = await walk(listed(app.actions ?? []), (name) => allows(evaluationOf(asked, { action: { name } })), page, celBudgetSpent);
    return { results: found.results.map((name) => ({ name })), next: found.next };
  },
};

/** The evaluation of one candidate: the search's own entities and context, the one searched for being the candidate. */
function evaluationOf(asked: SearchRequest, candidate: Partial<Evaluation>): Evaluation {
  return {
    subject: (candidate.subject ?? asked.subject) as Evaluation['subject'],
    action: (candidate.action ?? asked.action)!,
    resource: (candidate.resource ?? asked.resource) as Evaluation['resource'],
    ...(asked.context ? { context: asked.context } : {}),
  };
}

/**
 * Whether the evaluation `e` is allowed. A candidate the box could not decide fails the search
 * (503): leaving it out would answer "not allowed" for "could not tell".
 */
async function allowed(evaluate: Evaluate, e: Evaluation): Promise<boolean> {
  const d = await evaluate(e);
  if (d.reason === 'error') throw new ApiError(503, 'temporarily_unavailable', d.description);
  return d.allowed;
}

/** §8.3 next_token: opaque to the PEP; where the next page goes on (a key of api/decision/search.ts). */
const tokenOf = (key: number): string => Buffer.from(`after:${key}`).toString('base64url');

/** The key `token` says to go on after (none: the first page); a token the box did not give is the request's error (400). */
function afterOf(token: string | undefined): number {
  if (token === undefined) return 0;
  const key = /^after:(\d{1,15})$/.exec(Buffer.from(token, 'base64url').toString('utf8'))?.[1];
  if (key === undefined) throw badRequest('page.token is not a next_token of this PDP');
  return Number(key);
}
