// OpenID AuthZEN Authorization API 1.0 (final, January 2026), one policy decision
// point per app. Field by field (test/integration/authzen.test.ts checks each):
//
// - The PDP identifier (§9.1 policy_decision_point) is <base url>/apps/<app>; its
//   metadata is at the URL "formed by inserting a well-known URI string between the
//   host component and the path" (§9.2): <origin>/.well-known/authzen-configuration
//   <base path>/apps/<app>, and holds only parameters of the spec's registry
//   (§12.1): policy_decision_point — "identical to the Policy Decision Point
//   identifier value into which the well-known URI string was inserted" (§9.2.3) —
//   and every endpoint, at the spec's default paths (§10.1, §10.2): the evaluations
//   and the three search APIs (§8).
// - The PEP is a client of the box with a token (§11.2 leaves how to the PDP;
//   OAuth is RECOMMENDED), allowed by a policy of the box's own API like any other
//   caller: no token 401 with WWW-Authenticate (§11.3), not allowed 403.
// - Request to the app's policies (api/decision/request.ts): subject {type: user,
//   id: <a name of a person the PEP may read on the box's API: box id, sign-in name, SCIM
//   externalId, upstream subject (api/decision/engine.ts namedCaller)>} | {type: client, id: <client id>} | {type:
//   token, id: <an access token for the app>} is who is calling; action.name is
//   `request-method` (lower case); resource.properties.path (default /<type>/<id>) and
//   .host (default the app's first url's) are `path` and `host`; `resource` and
//   `context` are passed as sent, the resource's properties under those the App
//   declares for it (App.resources: the box's word wins). Subject and action
//   properties are not (the spec lets the PDP choose what it evaluates).
// - Answer: a Decision (§5.5), 200 {decision} and on a refusal {context: {reason}}
//   saying why. Identical requests get identical bodies (the certification profile's
//   idempotency), so the decision's id (GET /authz/decisions/<id> explains a refusal)
//   travels in the X-Boxauth-Decision header, as at the gateways' doors: of a batch,
//   the ids in the order of its answers, `-` for an evaluation that could not be
//   read. Errors (§7.2.1): of the whole payload, 4xx/5xx with a JSON body
//   whose error_description is the "error message string" of §10.1.2; of one
//   evaluation of a batch, a false decision with context.error {status, message},
//   as §7.2.1's example. For /evaluation the payload is its one evaluation, so an
//   evaluation that cannot be evaluated is the request's error there.
// - X-Request-ID: "If the PEP specified a request identifier in the request, the PDP
//   MUST include the same identifier in the response" (§10.1.3) — every response,
//   errors included.
//
// - Search (§8, ./authzen-search.ts): Subject Search among the people the PEP may read
//   on the box's API, Resource and Action Search among what the App declares; each
//   candidate decided as its evaluation would be.
//
// Where the spec leaves the choice to the PDP, the box's: evaluations of a batch run
// one after another (§7.1: "sequentially or in parallel"); at most MAX_EVALUATIONS
// per request (§11.7); the context of a decision is {id, reason} (§5.5.2: its
// "semantics and format ... are an implementation concern"); the body of an error
// is the box's {error, error_description}; a required string may not be empty, and
// an optional object sent as null is of the wrong type (400); subject types other
// than the three above are a 400; a body that is not application/json is a 400
// (§10.1: requests "MUST include a Content-Type header with the value
// application/json"; §10.1.2 has 400 for a bad request), one in another charset or
// coding a 415. §9.1 wants an https identifier: it is one when BOXAUTH_BASE_URL is.
import { Request, RequestHandler, Response, Router } from '../router.js';
import { ApiError } from '../../errors.js';
import { authzenTarget } from '../../decision/authzen-target.js';
import { decide, type Credential, type Decision, type DecisionServices } from '../../decision/engine.js';
import type { Decisions } from '../../decision/record.js';
import { withCelBudget } from '../../policy/cel/index.js';
import type { Actor } from '../../audit.js';
import type { App, Client } from '../../types.js';
import { actorOf, personReader } from '../auth.js';
import { authzenBody } from '../body.js';
import { doorError } from '../errors.js';
import { accessEvaluation, accessEvaluations, stopsAfter, type Evaluation, type Problem } from './authzen-request.js';
import { search, type MayRead, type SearchServices } from './authzen-search.js';

type Json = Record<string, unknown>;

/** A decision at an app, and the record of refused ones. */
export type AuthzenRouterServices = DecisionServices & SearchServices & { decisions: Decisions };

const WELL_KNOWN = '/.well-known/authzen-configuration';

/** §9.2: the metadata URL of the PDP identifier `pdp` (a URL without query or fragment). */
export function metadataUrl(pdp: string): string {
  const url = new URL(pdp);
  return `${url.origin}${WELL_KNOWN}${url.pathname === '/' ? '' : url.pathname}`;
}

/** §9.1: the metadata of the PDP `pdp`; parameters without a value "MUST be omitted". */
export function metadataOf(pdp: string): Json {
  return {
    policy_decision_point: pdp,
    access_evaluation_endpoint: `${pdp}/access/v1/evaluation`,
    access_evaluations_endpoint: `${pdp}/access/v1/evaluations`,
    search_subject_endpoint: `${pdp}/access/v1/search/subject`,
    search_resource_endpoint: `${pdp}/access/v1/search/resource`,
    search_action_endpoint: `${pdp}/access/v1/search/action`,
  };
}

/** The header that carries the ids of the decisions an answer holds (the gateways' doors' own). */
export const DECISION_HEADER = 'X-Boxauth-Decision';

/** The route of metadataUrl(<base url>/apps/:app): the base url's path taken literally (a segment that starts with `:` or `\\` escaped: api/http/router.ts). */
export function metadataRoute(baseUrl: string): string {
  const prefix = new URL(metadataUrl(baseUrl)).pathname;
  return `${prefix.replace(/\/([:\\])/g, '/\\$1')}/apps/:app`;
}

/** The subject as the decision point reads it; a person only among those the PEP may read (`mayRead`, api/decision/engine.ts namedCaller). */
function credentialOf(subject: Evaluation['subject'], mayRead: MayRead, presenter: Client | undefined): Credential {
  switch (subject.type) {
    case 'user':
      return { user: subject.id, mayRead, ...(presenter ? { presenter } : {}) };
    case 'client':
      return { client: subject.id };
    case 'token':
      return { bearer: subject.id };
  }
}

/**
/**
 * The Decision on the evaluation `e` at `app`, asked by the PEP `asker`, which may read the people
 * `mayRead` says; it records the decision (a refusal kept for explain, and in the audit trail as
 * the PEP's, about the subject) and counts it. A search's candidates (`asker` undefined) are not recorded.
 * A subject the PEP names by a `sub` its client (`presenter`) was given is that client's person.
 */
export async function evaluate(
  svc: AuthzenRouterServices,
  app: App,
  e: Evaluation,
  mayRead: MayRead,
  asker?: Actor,
  presenter?: Client,
): Promise<Decision> {
  const { method, host, path, resource } = authzenTarget(app, e.action, e.resource);
  const started = process.hrtime.bigint();
  const d = await decide(svc, {
    door: 'authzen',
    app: app.id,
    method,
    host,
    target: path,
    headers: {},
    credential: credentialOf(e.subject, mayRead, presenter),
    resource,
    ...(e.context ? { context: e.context } : {}),
  });
  if (asker) svc.decisions.record(d, Number(process.hrtime.bigint() - started) / 1e9, asker);
  return d;
}

/**
 * A decision the engine could not make is an error of its evaluation (§7.2.1): a
 * path that cannot be read one way (what the PEP sent: 400), or a failure of the
 * box (500). Every other refusal is a decision: false, with its reason.
 */
export function errorOf(d: Decision): { status: 400 | 500; message: string } | undefined {
  if (d.reason === 'bad-path') return { status: 400, message: d.description };
  if (d.reason === 'error') return { status: 500, message: d.description };
  return undefined;
}

/**
 * §5.5: a Decision, `context` the box's own (§5.5.1 leaves its shape to the PDP): on a refusal,
 * why. Nothing in it differs between identical requests: the decision's id is DECISION_HEADER's.
 */
export function answerOf(d: Decision): Json {
  const error = errorOf(d);
  if (error) return { decision: false, context: { error } };
  if (d.allowed) return { decision: true };
  // A step-up (AccessPolicy.acr) says the class of sign-in wanted, as RFC 9470 §3's challenge does; a
  // refusal for want of scope (AccessPolicy.scope) the scopes wanted, as RFC 6750 §3.1's does.
  return {
    decision: false,
    context: { reason: d.description, ...(d.acr ? { acr_values: d.acr } : {}), ...(d.scope ? { scope: d.scope } : {}) },
  };
}

/** §7.2.1: "Decisions default to closed (i.e. false), but the context field can include errors". */
const problemAnswer = (p: Problem): Json => ({ decision: false, context: { error: { status: 400, message: p.problem } } });

/** §10.1.3: the PEP's request identifier comes back on every answer, whatever it is. */
const echoRequestId: RequestHandler = (req, res, next) => {
  const id = req.headers['x-request-id'];
  if (typeof id === 'string') res.set('X-Request-ID', id);
  next();
};

export function authzenRouter(svc: AuthzenRouterServices, authenticate: RequestHandler, guard: RequestHandler): Router {
  const router = new Router();
  const pdpOf = (app: string): string => `${svc.config.baseUrl}/apps/${app}`;

  async function appOf(id: string): Promise<App> {
    const app = /^[a-z0-9][-a-z0-9]*$/.test(id) ? await svc.apps.byId(id) : undefined;
    if (!app) throw new ApiError(404, 'not_found', `no app "${id}"`);
    return app;
  }

  // With a base url that has a path (a proxy in front), the metadata is outside it:
  // the proxy passes <origin>/.well-known/authzen-configuration/<path>/… on as it is.
  router.get(metadataRoute(svc.config.baseUrl), echoRequestId, async (req, res) => {
    const app = await appOf(req.params.app as string);
    // §11.9: "utilize HTTP caching directives such as Cache-Control with max-age".
    res.set('Cache-Control', 'public, max-age=60').json(metadataOf(pdpOf(app.id)));
  });

  const evaluationOne = async (req: Request, res: Response, e: Evaluation, app: App): Promise<void> => {
    const d = await evaluate(svc, app, e, personReader(svc, req.principal!), actorOf(req.principal!), req.principal!.client.resource);
    res.set(DECISION_HEADER, d.id);
    const error = errorOf(d);
    // The one evaluation is the whole payload: its error is the request's (§7.2.1's first kind).
    if (error) throw new ApiError(error.status, error.status === 400 ? 'invalid_request' : 'server_error', error.message);
    res.json(answerOf(d));
  };

  /**
   * A route of evaluations, behind the PEP's token and policy and the body's checks. An evaluation
   * the box could not answer is that request's 503 (logged), as at the gateways' doors. A request
   * has one budget for all the CEL expressions it evaluates (withCelBudget): a batch of a hundred
   * evaluations or a search of a thousand candidates costs at most ten evaluations' limits.
   */
  const evaluations = (path: string, answer: (req: Request, res: Response, app: App) => Promise<void>): void => {
    router.post(path, echoRequestId, authenticate, guard, ...authzenBody, (req, res, next) => {
      appOf(req.params.app as string)
        .then((app) => withCelBudget(() => answer(req, res, app)))
        .catch((err: unknown) => next(doorError(svc, err, { door: 'authzen', path: req.path })));
    });
  };

  evaluations('/apps/:app/access/v1/evaluation', (req, res, app) => evaluationOne(req, res, accessEvaluation(req.body), app));

  evaluations('/apps/:app/access/v1/evaluations', async (req, res, app) => {
    const read = accessEvaluations(req.body);
    if ('single' in read) return evaluationOne(req, res, read.single, app);
    const answers: Json[] = [];
    const ids: string[] = [];
    const mayRead = personReader(svc, req.principal!);
    for (const item of read.items) {
      const d =
        'problem' in item ? undefined : await evaluate(svc, app, item, mayRead, actorOf(req.principal!), req.principal!.client.resource);
      const answer = d ? answerOf(d) : problemAnswer(item as Problem);
      answers.push(answer);
      ids.push(d?.id ?? '-');
      // The answers end with the one that stops the batch (§7.1.2.1): the PEP sees where it stopped.
      if (stopsAfter(read.semantic, answer.decision === true)) break;
    }
    // §7.2: "it is RECOMMENDED that the decision key of the response be omitted".
    res.set(DECISION_HEADER, ids.join(', ')).json({ evaluations: answers });
  });

  // §8: the search APIs, behind the same token, policy and body checks.
  for (const kind of ['subject', 'resource', 'action'] as const) {
    evaluations(`/apps/:app/access/v1/search/${kind}`, async (req, res, app) => {
      const mayRead = personReader(svc, req.principal!);
      res.json(await search(svc, kind, req.body, app, mayRead, (e) => evaluate(svc, app, e, mayRead)));
    });
  }
  return router;
}
