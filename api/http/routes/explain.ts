// Explanations of the decision point's decisions, on the box's own API (behind its
// policies, as any route is): POST /authz/explain replays a request — as a gateway
// would send it, with a token or a named user or client — and says what each of
// the app's policies made of it, without recording it; GET /authz/decisions/<id>
// explains a refused decision the record kept, and GET /authz/decisions?app=<id> lists an App's
// newest kept refusals. `boxauth explain` calls the first two, the admin console all three.
import { RequestHandler, Router } from '../router.js';
import { badRequest, notFound } from '../../errors.js';
import { decide, type Credential, type DecisionServices } from '../../decision/engine.js';
import { explainDecision, explainRecorded } from '../../decision/explain.js';
import { hostOf } from '../../decision/apps.js';
import { KEPT_PER_CALLER_PER_SECOND, KEPT_PER_SECOND, type Decisions } from '../../decision/record.js';
import { personReader } from '../auth.js';
import { resourceBody } from '../body.js';
import { send } from '../respond.js';

const text = (body: Record<string, unknown>, name: string, required = false): string | undefined => {
  const v = body[name];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v === '') throw badRequest(`${name} must be a non-empty string`);
  return v;
};

/** How many of an App's refusals GET /authz/decisions lists unless told, and at most. */
export const RECENT_DECISIONS = 20;
export const MAX_RECENT_DECISIONS = 100;

/** A query parameter given at most once, as a non-empty string (required: exactly once). */
function onceGiven(value: unknown, name: string, required = false): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '') throw badRequest(`${name} must be given once, not empty`);
  return value;
}

export function explainRouter(svc: DecisionServices & { decisions: Decisions }, guard: RequestHandler): Router {
  const router = new Router();

  router.post('/authz/explain', guard, ...resourceBody, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('send {app, method, path, and token, user or client}');
    const appId = text(body, 'app', true)!;
    const app = await svc.apps.byId(appId);
    if (!app) throw notFound(`App "${appId}"`);
    const token = text(body, 'token');
    const user = text(body, 'user');
    const client = text(body, 'client');
    // A person named only among those the caller may read (api/decision/engine.ts namedCaller): a
    // dry run shows what the policies saw of them.
    const named: Credential | undefined = user ? { user, mayRead: personReader(svc, req.principal!) } : undefined;
    const credential: Credential = token ? { bearer: token } : (named ?? (client ? { client } : 'none'));
    const headers = body.headers ?? {};
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) throw badRequest('headers must be an object of strings');
    const d = await decide(svc, {
      door: 'http',
      app: app.id,
      method: (text(body, 'method') ?? 'GET').toUpperCase(),
      host: text(body, 'host') ?? hostOf(app.urls[0]!),
      target: text(body, 'path') ?? '/',
      headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), typeof v === 'string' ? v : undefined])),
      credential,
    });
    send(req, res, 200, await explainDecision(svc, d));
  });

  // One App's kept refusals, newest first (the admin console's Apps tab). The App is a query
  // parameter, so the request object holds it (params.app) and a policy can grant one App's
  // refusals without the others': {"uri": "/authz/decisions", "params": {"app": "wiki"}}.
  router.get('/authz/decisions', guard, async (req, res) => {
    const unknown = Object.keys(req.query).filter((name) => name !== 'app' && name !== '_count' && name !== 'access_token');
    if (unknown.length) throw badRequest(`unknown parameter "${unknown[0]}": list an App's refusals with app=<id> and _count`);
    const app = onceGiven(req.query.app, 'app', true)!;
    const raw = onceGiven(req.query._count, '_count');
    const count = raw === undefined ? RECENT_DECISIONS : Number(raw);
    if (!Number.isInteger(count) || count < 1 || count > MAX_RECENT_DECISIONS)
      throw badRequest(`_count must be an integer from 1 to ${MAX_RECENT_DECISIONS}`);
    send(req, res, 200, await svc.decisions.recent(app, count));
  });

  // With ?app=<id>, only a decision of that App: a policy that grants one App's refusals
  // (params.app) grants their explanations, not another App's by a decision id found elsewhere.
  router.get('/authz/decisions/:id', guard, async (req, res) => {
    const app = onceGiven(req.query.app, 'app');
    const found = await svc.decisions.find(req.params.id);
    const row = found && (app === undefined || found.app === app) ? found : undefined;
    if (!row)
      throw notFound(
        `decision "${req.params.id}" (only refusals of an identified caller are kept, at most ${KEPT_PER_SECOND} a second per process and ${KEPT_PER_CALLER_PER_SECOND} of one caller, for BOXAUTH_DECISION_RETENTION_HOURS and within BOXAUTH_DECISION_MAX_ROWS; every decision is in the audit log)`,
      );
    send(req, res, 200, await explainRecorded(svc, row));
  });

  return router;
}
